"""TeX idioms in a document's macro bodies, made into what the expansion here (and KaTeX) can take.

Preambles copy a few well-known constructions that play with TeX's own machinery, which no converter expands:
LaTeX's ``\\@ifnextchar`` test of the next token (optional forms), a ``\\futurelet`` look-ahead that only picks
spacing and an ``\\ifnum``/``\\ifdim`` test of TeX's state that only adds spacing (the "differential d" idioms),
the TeX FAQ's average integral drawn with box registers (``\\def\\dashint{\\Xint-}``), and LaTeX's operator font and
math-surround reset (``\\operator@font``, ``\\m@th``) that class and package files use, and a setting of LaTeX's own
internals for the body's group (``\\begingroup\\let\\macc@kerna\\z@ .. \\hat{..}\\endgroup``: amsmath's accent kerning
for a double hat), which only tunes how LaTeX's commands typeset. `rewrite_idioms` gives each its meaning in a
formula; `engine.latex.macros.build_katex_macros` applies it to every macro.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from eqsearch.engine.latex.scan import read_argument

if TYPE_CHECKING:
    from eqsearch.engine.latex.macros import MacroDef

__all__ = ["rewrite_idioms"]

# \def\Xint#1{\mathchoice{\XXint\displaystyle\textstyle{#1}}..} with \def\XXint#1#2#3{{\setbox0=\hbox{..}..}}:
# the TeX FAQ's integral with a sign through it, used as \def\dashint{\Xint-} and \def\ddashint{\Xint=}
_XINT = re.compile(r"\s*\\Xint\s*([-=])\s*")
_XINT_SIGNS = {"-": "\\mathop{\u2a0d}\\nolimits", "=": "\\mathop{\u2a0e}\\nolimits"}
_IFNEXTCHAR = re.compile(r"\s*\\@ifnextchar\s*(\\[A-Za-z@]+|[^\s{}\\])\s*")
# \newcommand\diag{\mathop{\operator@font diag}\nolimits} (a journal class), \hbox{$\m@th#1\intercal$}
# and \textrm{i.i.d.}\@\xspace (the space factor of a sentence's end, nothing in a formula)
_LATEX_INTERNAL_MEANINGS = {"\\operator@font": "\\rm ", "\\m@th": "", "\\@": ""}
_INTERNAL_SETTING = re.compile(r"\\let\s*\\[A-Za-z]*@[A-Za-z@]*\s*=?\s*(?:\\[A-Za-z@]+|[^\s\\])\s*%?")
_LATEX_INTERNALS = re.compile(r"(\\operator@font|\\m@th|\\@)(?![A-Za-z@])\s*")
# a box measured and shown again, its contents set in the style \mathpalette gives: TeX.SE's square root with a hook,
# \def\hksqrt#1#2{\setbox0=\hbox{$#1\oldsqrt{#2\,}$}\dimen0=\ht0 .. {\box0\lower0.4pt\box2}}: what box 0 holds
_BOX_IN_STYLE = re.compile(r"\\setbox\s*0\s*=?\s*\\hbox\s*\{\$\s*#1\s*(.*?)\$\}(?=.*\\box\s*0)", re.DOTALL)
_FUTURELET = re.compile(r"\s*\\futurelet\s*\\[A-Za-z@]+\s*\\[A-Za-z@]+\s*")


# \ifnum\lastnodetype>0\mskip\thinmuskip\fi: a space that depends on what came before (a differential's d)
_SPACING_TEST = re.compile(r"\\if(?:num|dim)(?![A-Za-z@])((?:(?!\\if|\\fi(?![A-Za-z@])).)*?)\\fi(?![A-Za-z@])", re.S)
_SPACING_WORDS = frozenset(
    [
        "lastnodetype",
        "lastskip",
        "lastkern",
        "lastpenalty",
        "mskip",
        "mkern",
        "kern",
        "hskip",
        "thinmuskip",
        "medmuskip",
        "thickmuskip",
        "relax",
        "else",
        "z@",
        "p@",
    ]
)


def _drop_spacing_test(m: re.Match[str]) -> str:
    inner = m.group(1)
    words = {w for w in re.findall(r"\\([A-Za-z@]+)", inner)}
    if "{" in inner or "}" in inner or not words <= _SPACING_WORDS:
        return m.group(0)
    return ""


def _peeking(macro: MacroDef) -> MacroDef | None:
    r"""A macro that looks at the token after it, made one the expansion here can take.

    ``\@ifnextchar X{A}{B}`` (LaTeX's test of the next token, for optional forms) becomes an xparse macro with an
    optional token ``X`` (``t X``) whose body puts ``X`` back after ``A``; ``\futurelet\next\decide`` (a look
    ahead that only picks spacing, as in the "differential d" idiom) becomes nothing. None for any other macro.
    """
    if macro.spec is not None or macro.nargs or ("\\@ifnextchar" not in macro.body and "\\futurelet" not in macro.body):
        return None
    if _FUTURELET.fullmatch(macro.body):
        return replace(macro, body="")
    m = _IFNEXTCHAR.match(macro.body)
    if m is None:
        return None
    yes = read_argument(macro.body, m.end())
    no = None if yes is None else read_argument(macro.body, yes[1])
    if no is None or macro.body[no[1] :].strip():
        return None
    token = m.group(1)
    body = f"\\IfBooleanTF{{#1}}{{{yes[0]} {token}}}{{{no[0]}}}"
    return replace(macro, body=body, nargs=1, spec=f"t{token}")


def rewrite_idioms(macro: MacroDef) -> MacroDef:
    """``macro`` with the idioms of the module docstring replaced by their meaning; unchanged when it has none."""
    peek = _peeking(macro)
    if peek is not None:  # \@ifnextchar^{A}{B} / \futurelet\next\decide: what the next token decides
        macro = peek
    if "\\ifnum" in macro.body or "\\ifdim" in macro.body:  # a test of TeX's state that only picks spacing
        macro = replace(macro, body=_SPACING_TEST.sub(_drop_spacing_test, macro.body))
    xint = _XINT.fullmatch(macro.body)
    if xint is not None:  # the TeX FAQ's average integral \def\dashint{\Xint-}: what it draws
        macro = replace(macro, body=_XINT_SIGNS[xint.group(1)])
    boxed = _BOX_IN_STYLE.search(macro.body) if macro.nargs == 2 and "\\setbox" in macro.body else None
    if boxed is not None:  # a box measured and shown again with a stroke beside it: what the box holds
        macro = replace(macro, body=boxed.group(1).replace("#2", "#2"))
    if "@" in macro.body:  # LaTeX's operator font and math-surround reset: an upright name, nothing
        body = _INTERNAL_SETTING.sub("", macro.body) if "\\let" in macro.body else macro.body  # internals' settings
        macro = replace(macro, body=_LATEX_INTERNALS.sub(lambda m: _LATEX_INTERNAL_MEANINGS[m.group(1)], body))
    return macro
