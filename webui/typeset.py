"""What KaTeX's MathML needs to draw like TeX in a MathML Core browser (Chromium), applied to sanitised formulas.

KaTeX writes MathML that leans on the renderer for TeX's conventions; MathML Core follows its operator dictionary
instead. Measured on the screenshots of the browser tests (Chromium, Latin Modern Math):

- ``\\hat{y}`` is ``<mover accent="true"><mi>y</mi><mo>^</mo></mover>``: ``^`` is stretchy in the dictionary, so the
  hat widened to a ``\\widehat``. An accent without a ``stretchy`` attribute gets ``stretchy="false"``
  (``\\widehat`` keeps KaTeX's ``stretchy="true"``).
- ``\\lvert``, ``\\lVert`` are ``<mo stretchy="false">∣</mo>`` and ``∥``, relations in the dictionary: ``| K |`` had a
  thick space inside each bar. Such a bar gets none (``\\mid``, written without ``stretchy``, keeps its spacing).
- ``\\left(x\\right)`` stretched its parentheses to a larger size variant, wider than the plain glyph: it read
  ``f ( x )``. As in TeX, where a delimiter around short content keeps its normal size, fences around a row with
  nothing tall in it (`_TALL`: fractions, limits, tables, roots) do not stretch.
- ``\\log p`` is ``<mi>log</mi><mo>⁡</mo><mi>p</mi>``, and the invisible function application has no spacing: it read
  ``logp``, ``σ²exp``. TeX puts a thin space between an operator name and an ordinary symbol on either side.
- ``var(X)`` typed without ``\\operatorname`` is three italic letters ``v a r``; a researcher reads it as the name
  it is. A run of single letters that spells one of `OPERATOR_NAMES`, with no letter beside it, becomes one upright
  ``<mi>``, as ``\\operatorname{var}`` would be.
- ``x'`` is ``<msup><mi>x</mi><mo>′</mo></msup>``, but a Unicode prime is already a superscript glyph: raised twice,
  it floated off its letter. A superscript that is only primes (``f''``) is set beside its base.

Element indices of the search's match marks refer to the input, which this never changes.
"""

from __future__ import annotations

from lxml import etree

MATHML_NS = "http://www.w3.org/1998/Math/MathML"
_MO = f"{{{MATHML_NS}}}mo"
_MI = f"{{{MATHML_NS}}}mi"
_FUNCTION_APPLICATION = "\u2061"
_BARS = frozenset({"\u2223", "\u2225", "|", "\u2016"})
_PRIMES = frozenset({"\u2032", "\u2033", "\u2034", "\u2057"})
_OPENING = frozenset("([{\u27e8\u2016|\u2225\u2223\u230a\u2308")
_THIN = "0.1667em"
#: Elements that make a row taller than a line of text, so that its \left ... \right fences must stretch.
_TALL = frozenset({"mfrac", "munderover", "munder", "mtable", "msqrt", "mroot"})
#: Names written as plain letters that are set upright (none of them is a plausible product of variables).
OPERATOR_NAMES = frozenset(
    {"var", "Var", "cov", "Cov", "corr", "Corr", "diag", "rank", "sgn", "sign", "softmax", "argmax", "argmin",
     "erf", "erfc", "logit", "trace", "supp", "dist", "span", "proj", "vec", "grad", "div", "curl",
     "sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "log", "det", "max", "min", "arg"}
)  # fmt: skip


def _local(element: etree._Element) -> str:
    return etree.QName(element).localname if isinstance(element.tag, str) else ""


def typeset_like_tex(root: etree._Element) -> None:
    """Adjust a sanitised ``<math>`` tree in place (see the module docstring)."""
    for row in list(root.iter(f"{{{MATHML_NS}}}mrow")):
        _join_operator_names(row)
        _keep_short_fences(row)
    for element in list(root.iter()):
        name = _local(element)
        if name == "mover" and element.get("accent") == "true" and len(element) == 2:
            accent = element[1]
            if _local(accent) == "mo" and accent.get("stretchy") is None:
                accent.set("stretchy", "false")
        elif name == "mo":
            text = (element.text or "").strip()
            delimiter = element.get("stretchy") == "false"  # \lvert; KaTeX's \mid has no stretchy attribute
            unspaced = element.get("lspace") is None and element.get("rspace") is None
            if unspaced and text in _BARS and delimiter:
                element.set("lspace", "0em")
                element.set("rspace", "0em")
            elif text == _FUNCTION_APPLICATION:
                _space_operator_name(element)
        elif name == "msup" and len(element) == 2 and _only_primes(element[1]):
            element.tag = f"{{{MATHML_NS}}}mrow"  # base and primes side by side


def _space_operator_name(apply: etree._Element) -> None:
    """Thin spaces around ``name⁡`` where TeX puts them: before it after an ordinary symbol, after it before one."""
    following = apply.getnext()
    opening = following is not None and following.tag == _MO and (following.text or "").strip() in _OPENING
    if following is not None and not opening and not (_local(following) == "mrow" and _starts_with_fence(following)):
        apply.set("rspace", _THIN)
    name = apply.getprevious()
    if name is None:
        return
    before = name.getprevious()
    if before is not None and before.tag != _MO:
        space = etree.Element(f"{{{MATHML_NS}}}mspace")
        space.set("width", _THIN)
        name.addprevious(space)


def _letter(element: etree._Element | None) -> str | None:
    """The letter of a single-letter italic ``<mi>`` (no ``mathvariant``), else None."""
    if element is None or element.tag != _MI or len(element) or element.get("mathvariant"):
        return None
    text = element.text or ""
    return text if len(text) == 1 and text.isalpha() else None


def _join_operator_names(row: etree._Element) -> None:
    children = list(row)
    start = 0
    while start < len(children):
        end = start
        while end < len(children) and _letter(children[end]) is not None:
            end += 1
        word = "".join(_letter(child) or "" for child in children[start:end])
        if word in OPERATOR_NAMES:
            name = children[start]
            name.text = word
            if any(child.get("class") for child in children[start:end]):  # a match mark covers the whole name
                name.set("class", next(child.get("class") for child in children[start:end] if child.get("class")))
            for child in children[start + 1 : end]:
                row.remove(child)
        start = end + 1


def _keep_short_fences(row: etree._Element) -> None:
    if len(row) < 2 or not all(_local(end) == "mo" and end.get("fence") == "true" for end in (row[0], row[-1])):
        return
    if any(_local(element) in _TALL for element in row.iter()):
        return
    for fence in row:
        if _local(fence) == "mo" and fence.get("fence") == "true" and fence.get("stretchy") is None:
            fence.set("stretchy", "false")


def _only_primes(script: etree._Element) -> bool:
    marks = list(script) if _local(script) == "mrow" else [script]
    return bool(marks) and all(
        _local(mark) == "mo" and len(mark) == 0 and (mark.text or "").strip() and set(mark.text.strip()) <= _PRIMES
        for mark in marks
    )


def _starts_with_fence(row: etree._Element) -> bool:
    return len(row) > 0 and row[0].tag == _MO and row[0].get("fence") == "true"
