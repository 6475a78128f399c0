"""mathtools' paired delimiters in the three forms a call takes, and definitions a macro body makes for itself.

``\\DeclarePairedDelimiter{\\abs}{\\lvert}{\\rvert}`` gives ``\\abs{x}`` (the delimiters as they are), ``\\abs*{x}``
(``\\left``/``\\right``) and ``\\abs[\\big]{x}`` (``\\bigl``/``\\bigr``); in the body of the ``X`` and ``XPP``
declarations ``\\delimsize`` stands for the size of the call (`delimsize`). `xpp_definition` writes an ``XPP``
declaration as an xparse-style macro (star, size, then its arguments), its pre and post code around the pair.

Bodies redefine names for their own use: mathtools' manual writes ``\\DeclarePairedDelimiterX\\Set[1]\\{\\}{%
\\renewcommand\\given{..\\delimsize\\vert..}#1}``, so that ``\\given`` in the argument takes the size of the braces.
`local_definitions` carries out such argument-less definitions (``\\renewcommand``, ``\\newcommand``, ``\\def``,
``\\let``) on the rest of the expansion: KaTeX would refuse ``\\renewcommand`` of a name the document never defined,
and the size must be known where the name is used.
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.scan import read_argument

__all__ = ["LOCAL_DEFINITION", "delimsize", "local_definitions", "xpp_definition"]

_PARAMETER = re.compile(r"(?<!#)#([1-9])")
#: An argument-less definition inside a macro body: ``\renewcommand\given{..}``, ``\def\given{..}``, ``\let\a\b``.
LOCAL_DEFINITION = re.compile(
    r"\\(?:(?:re|provide)?newcommand\*?\s*(?:\{\s*(\\[A-Za-z@]+)\s*\}|(\\[A-Za-z@]+))(?=\s*\{)"
    r"|[gex]?def\s*(\\[A-Za-z@]+)(?=\s*\{)"
    r"|let\s*(\\[A-Za-z@]+)\s*=?\s*(\\[A-Za-z@]+|[^\s\\{}]))"
)


def delimsize(body: str, size: str) -> str:
    """``\\delimsize`` in a paired delimiter's body replaced by the call's size (``\\middle`` for the starred
    call's ``\\left``/``\\right``, nothing for plain delimiters)."""
    return re.sub(r"\\delimsize(?![A-Za-z@])\s*", lambda _: size, body) if "\\delimsize" in body else body


def local_definitions(text: str) -> str:
    """``text`` with its argument-less definitions carried out: each removed and the later uses of its name replaced
    by its body (in a ``\\let``, by the name it copies). Definitions with parameters are left to KaTeX."""
    if "\\" not in text or not LOCAL_DEFINITION.search(text):
        return text
    position = 0
    for _ in range(16):  # each round takes one definition away
        m = LOCAL_DEFINITION.search(text, position)
        if m is None:
            break
        start = m.start() - len(_GLOBAL.search(text, 0, m.start()).group(0))  # \global\let: the prefix goes too
        if m.group(4):
            name, body, end = m.group(4), m.group(5), m.end()
            if not _uses(text, end, name):  # \global\let\hsdot=\hsperiodonce: for what follows the macro
                position = end
                continue
        else:
            name = m.group(1) or m.group(2) or m.group(3)
            arg = read_argument(text, m.end())
            if arg is None or "#" in arg[0]:
                break
            body, end = arg[0].strip(), arg[1]
        rest = _replace_uses(text[end:], name, body) if body != name else text[end:]
        text = text[:start] + rest
        position = start
    return text


_GLOBAL = re.compile(r"(?:\\global\s*)?\Z")


def _uses(text: str, end: int, name: str) -> bool:
    return re.search(re.escape(name) + (r"(?![A-Za-z@])" if name[-1].isalpha() else ""), text[end:]) is not None


_ENDS_IN_WORD = re.compile(r"(?<!\\)(?:\\\\)*\\[A-Za-z@]+\Z")


def _replace_uses(text: str, name: str, body: str) -> str:
    """``text`` with ``name`` replaced by ``body`` as TeX substitutes tokens: a control word before the use never
    runs into letters of the body, nor the body's last control word into a letter after the use."""
    out: list[str] = []
    pos = 0
    for m in re.finditer(re.escape(name) + (r"(?![A-Za-z@])" if name[-1].isalpha() else ""), text):
        before = "".join(out) + text[pos : m.start()]
        piece = body
        if piece[:1].isalpha() and _ENDS_IN_WORD.search(before):
            piece = " " + piece
        if text[m.end() : m.end() + 1].isalpha() and _ENDS_IN_WORD.search(piece):
            piece += " "
        out.append(text[pos : m.start()] + piece)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def xpp_definition(parts: list[str], nargs: int) -> tuple[str, str]:
    """The body and xparse argument types of ``\\DeclarePairedDelimiterXPP{\\name}[n]{pre}{left}{right}{post}{body}``
    (``parts``: pre, left, right, post, body): ``#1`` the star, ``#2`` the size, the declared arguments after them."""
    pre, left, right, post, inner = (_PARAMETER.sub(lambda p: f"#{int(p.group(1)) + 2}", x) for x in parts)
    middle, unsized, sized_inner = delimsize(inner, "\\middle"), delimsize(inner, ""), delimsize(inner, "#2")
    starred = f"\\left{left} {middle} \\right{right}"
    plain = f"\\mathopen{{{left}}} {unsized} \\mathclose{{{right}}}"
    sized = f"\\mathopen{{#2l{left}}} {sized_inner} \\mathclose{{#2r{right}}}"
    body = f"{pre}\\IfBooleanTF{{#1}}{{{starred}}}{{\\IfNoValueTF{{#2}}{{{plain}}}{{{sized}}}}}{post}"
    return body, " ".join(["s", "o", *["m"] * nargs])
