"""xparse's argument types and the conditionals decided on them, for the macros expanded before KaTeX sees them.

A ``\\NewDocumentCommand`` declares its arguments by type (``s o O{1} m``); `parse_argument_spec` reduces a
declaration to the types read here, `read_spec_arguments` reads one use's arguments by them (absent ones as
xparse's ``-NoValue-``), and `resolve_conditionals` decides the ``\\IfBooleanTF``, ``\\IfNoValueTF``,
``\\IfValueTF`` (and ifthen's ``\\ifthenelse{\\equal..}``) of a body once its arguments are substituted. Used
by the converter's macro expansion (`engine.latex.macros`) and by extraction (`eqsearch.ingest`).
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.scan import read_argument, read_arguments, read_optional, skip_space

__all__ = [
    "BOOLEAN_FALSE",
    "BOOLEAN_TRUE",
    "NO_VALUE",
    "format_argument_spec",
    "parse_argument_spec",
    "read_spec_arguments",
    "resolve_conditionals",
]

_GROUP = r"\{(?:[^{}]|\{[^{}]*\})*\}"
_TOKEN = r"(?:\\[A-Za-z@]+|\S)"
_SPEC_TOKEN = re.compile(
    rf"[+!>=]*\s*(?:([DRrd])\s*({_TOKEN})\s*({_TOKEN})\s*(?:{_GROUP})?"
    rf"|([OGu])\s*({_GROUP}|{_TOKEN})|(t)\s*({_TOKEN})|(E)\s*(?:{_GROUP})\s*(?:{_GROUP})?|([mosgvbelax]))"
)
#: The value an absent optional argument gets (xparse's ``-NoValue-`` marker), and the values of a star.
NO_VALUE = "-NoValue-"
BOOLEAN_TRUE = "\\BooleanTrue"
BOOLEAN_FALSE = "\\BooleanFalse"


def parse_argument_spec(spec: str) -> list[tuple[str, str]]:
    """xparse argument types as ``(type, detail)`` pairs, reduced to the types `read_spec_arguments` reads.

    ``"s o O{1} m"`` -> ``[("s",""), ("o",""), ("O","1"), ("m","")]``; ``t*`` -> ``("t","*")``; ``r()``/``R(){x}``
    /``d()``/``D(){x}`` -> ``("r","()")`` (absent: ``-NoValue-``); ``u{\\stop}`` -> ``("u","\\stop")``; ``g`` (an
    optional brace group) stays; ``v``, ``b``, ``e``, ``l`` -> ``m``; ``E`` embellishments are not read. ``a`` is
    eqsearch's own (physics' ``\\qty``): an argument in ``()``, ``[]``, ``{}`` or ``||``, given back sized with
    ``\\left``/``\\right`` (two brace groups are siunitx's ``\\qty{3}{m}``); ``x`` too (physics' ``\\mqty``): the
    argument's rows as a matrix with those delimiters (``(..)`` a ``pmatrix``). Unknown characters count as ``m``.
    """
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(spec):
        if spec[pos].isspace():
            pos += 1
            continue
        m = _SPEC_TOKEN.match(spec, pos)
        if m is None:
            out.append(("m", ""))
            pos += 1
            continue
        if m.group(1):
            out.append(("r", m.group(2) + m.group(3)))
        elif m.group(4):
            detail = m.group(5)
            detail = detail[1:-1] if detail.startswith("{") else detail
            out.append(("u" if m.group(4) == "u" else "O", detail))
        elif m.group(6):
            out.append(("t", m.group(7)))
        elif m.group(9):
            kind = m.group(9)
            out.append(("m" if kind in "vbel" else kind, ""))
        pos = m.end()
    return out


def format_argument_spec(spec: list[tuple[str, str]]) -> str:
    """The inverse of `parse_argument_spec`: ``[("s",""), ("O","1")]`` -> ``"s O{1}"``."""
    return " ".join(kind + ("{" + detail + "}" if kind in "Ou" else detail) for kind, detail in spec)


def read_spec_arguments(spec: list[tuple[str, str]], latex: str, end: int) -> tuple[list[str], int]:
    """Read the arguments of one use of an xparse command, per its parsed spec (see `parse_argument_spec`)."""
    args: list[str] = []
    for kind, detail in spec:
        if kind == "s" or kind == "t":
            token = "*" if kind == "s" else detail
            pos = end
            while pos < len(latex) and latex[pos] in " \t\n":
                pos += 1
            present = latex.startswith(token, pos)
            args.append(BOOLEAN_TRUE if present else BOOLEAN_FALSE)
            end = pos + len(token) if present else end
        elif kind in ("o", "O"):
            value, end = read_optional(latex, end)
            args.append((NO_VALUE if kind == "o" else detail) if value is None else value)
        elif kind == "g":
            pos = skip_space(latex, end)
            arg = read_argument(latex, pos) if latex.startswith("{", pos) else None
            args.append(NO_VALUE if arg is None else arg[0])
            end = end if arg is None else arg[1]
        elif kind == "a":
            value, end = _sized_argument(latex, end)
            args.append(value)
        elif kind == "x":
            value, end = _matrix_argument(latex, end)
            args.append(value)
        elif kind == "u":
            stop = latex.find(detail, end)
            if stop < 0:
                args.append("")
            else:
                args.append(latex[end:stop])
                end = stop + len(detail)
        elif kind == "r" and len(detail) == 2:
            pos = latex.find(detail[0], end)
            close = latex.find(detail[1], pos + 1) if pos >= 0 and not latex[end:pos].strip() else -1
            if close < 0:
                args.append(NO_VALUE)
            else:
                args.append(latex[pos + 1 : close])
                end = close + 1
        else:
            arg = read_argument(latex, end)
            if arg is None:
                args.append("")
            else:
                args.append(arg[0])
                end = arg[1]
    return args, end


_SIZED = {"(": ("(", ")", "(", ")"), "[": ("[", "]", "[", "]"), "|": ("|", "|", "|", "|")}


def _sized_argument(latex: str, end: int) -> tuple[str, int]:
    """physics' argument: ``(x)`` -> ``\\left( x \\right)``, also ``[x]``, ``{x}`` (``\\{``), ``|x|``; ``{3}{m}``
    (siunitx's ``\\qty``) -> ``3\\,\\mathrm{m}``; nothing -> ``-NoValue-``."""
    pos = skip_space(latex, end)
    if pos >= len(latex):
        return NO_VALUE, end
    c = latex[pos]
    if c == "{":
        first = read_argument(latex, pos)
        if first is None:
            return NO_VALUE, end
        second = read_argument(latex, first[1]) if latex.startswith("{", first[1]) else None
        if second is not None:
            return f"{first[0]}\\,\\mathrm{{{second[0]}}}", second[1]
        return f"\\left\\{{{first[0]}\\right\\}}", first[1]
    if c not in _SIZED:
        return NO_VALUE, end
    opening, closing, left, right = _SIZED[c]
    depth, i = 0, pos + 1
    while i < len(latex):
        ch = latex[i]
        if ch == "\\":
            i += 2
            continue
        if ch == closing and depth == 0:
            return f"\\left{left}{latex[pos + 1 : i]}\\right{right}", i + 1
        if opening != closing and ch == opening:
            depth += 1
        elif opening != closing and ch == closing:
            depth -= 1
        i += 1
    return NO_VALUE, end


_MATRICES = {"(": "pmatrix", "[": "bmatrix", "|": "vmatrix", "{": "matrix"}


def _matrix_argument(latex: str, end: int) -> tuple[str, int]:
    """physics' ``\\mqty`` argument: ``(a & b \\\\ c & d)`` -> ``\\begin{pmatrix}a & b \\\\ c & d\\end{pmatrix}``,
    ``[..]`` a ``bmatrix``, ``|..|`` a ``vmatrix``, ``{..}`` a ``matrix``; nothing -> ``-NoValue-``."""
    pos = skip_space(latex, end)
    if pos >= len(latex) or latex[pos] not in _MATRICES:
        return NO_VALUE, end
    environment = _MATRICES[latex[pos]]
    if latex[pos] == "{":
        arg = read_argument(latex, pos)
        if arg is None:
            return NO_VALUE, end
        rows, end = arg
    else:
        sized, end = _sized_argument(latex, pos)
        if sized == NO_VALUE:
            return NO_VALUE, pos
        rows = sized[len("\\left") + 1 : -len("\\right") - 1]
    return f"\\begin{{{environment}}}{rows}\\end{{{environment}}}", end


_CONDITIONAL = re.compile(r"\\If(Boolean|NoValue|Value)(TF|T|F)(?![A-Za-z@])")


def resolve_conditionals(text: str, limit: int = 200) -> str:
    """Decide xparse's ``\\IfBooleanTF{..}{..}{..}``, ``\\IfNoValueTF``, ``\\IfValueTF`` (and ``T``/``F`` forms) whose
    test argument is already known (a substituted argument), and ifthen's ``\\ifthenelse{\\equal{a}{b}}{..}{..}``
    whose two strings are; others stay as they are."""
    if "\\ifthenelse" in text:
        text = _ifthenelse(text, limit)
    position = 0
    for _ in range(limit):
        m = _CONDITIONAL.search(text, position)
        if m is None:
            return text
        test = read_argument(text, m.end())
        if test is None:
            position = m.end()
            continue
        branches, end = read_arguments(text, test[1], len(m.group(2)))
        value = test[0].strip()
        if len(branches) < len(m.group(2)) or (m.group(1) == "Boolean" and value not in (BOOLEAN_TRUE, BOOLEAN_FALSE)):
            position = m.end()
            continue
        truth = value == BOOLEAN_TRUE if m.group(1) == "Boolean" else value == NO_VALUE
        if m.group(1) == "Value":
            truth = value != NO_VALUE
        if m.group(2) == "TF":
            chosen = branches[0] if truth else branches[1]
        else:
            chosen = branches[0] if truth == (m.group(2) == "T") else ""
        if chosen[:1].isalpha() and _ENDS_IN_WORD.search(text, 0, m.start()):
            chosen = " " + chosen  # tokens, not characters: \delta then the branch "h" is never \deltah
        text = text[: m.start()] + chosen + text[end:]
        position = m.start()
    return text


_ENDS_IN_WORD = re.compile(r"\\[A-Za-z@]+\Z")
_IFTHENELSE = re.compile(r"\\ifthenelse(?![A-Za-z@])\s*")
_EQUAL = re.compile(r"\s*\\equal\s*")
_ISEMPTY = re.compile(r"\s*\\isempty\s*")  # xifthen: \ifthenelse{\isempty{#1}}{}{^{#1}}


def _ifthenelse(text: str, limit: int) -> str:
    """``\\ifthenelse{\\equal{a}{b}}{yes}{no}`` (and xifthen's ``\\isempty{a}``) decided when the test's arguments
    hold no parameter."""
    position = 0
    for _ in range(limit):
        m = _IFTHENELSE.search(text, position)
        if m is None:
            break
        position = m.end()
        test = read_argument(text, m.end())
        yes = None if test is None else read_argument(text, test[1])
        no = None if yes is None else read_argument(text, yes[1])
        if no is None:
            continue
        holds = _test_holds(test[0])
        if holds is None:
            continue
        chosen = yes[0] if holds else no[0]
        text = text[: m.start()] + chosen + text[no[1] :]
        position = m.start()
    return text


def _test_holds(test: str) -> bool | None:
    """Whether an ``\\ifthenelse`` test (``\\equal{a}{b}``, ``\\isempty{a}``) holds; None when it is of another kind,
    or its arguments still hold a parameter."""
    equal = _EQUAL.match(test)
    if equal is not None:
        left = read_argument(test, equal.end())
        right = None if left is None else read_argument(test, left[1])
        if right is None or "#" in left[0] + right[0] or test[right[1] :].strip():
            return None
        return left[0].strip() == right[0].strip()
    empty = _ISEMPTY.match(test)
    if empty is not None:
        argument = read_argument(test, empty.end())
        if argument is None or "#" in argument[0] or test[argument[1] :].strip():
            return None
        return not argument[0].strip()
    return None
