"""Math and text mode inside a formula, where LaTeX reads one and KaTeX the other.

A formula's text boxes (``\\text``, ``\\mbox``, ``\\hbox``) are text mode, where LaTeX sets some math commands as
it does in math (``\\ensuremath``, amsmath's ``\\Big/``, siunitx's ``\\SI``) and a lone display inside a box as that
display; a ``$..$`` written in math at the formula's own level is text. KaTeX reads each only in the other mode, so
these functions move what needs it across the boundary: `resolve_ensuremath`, `sized_delimiters_in_text`,
`units_in_text`, `displays_in_text_boxes`, `dollars_in_math`. All run after macro expansion, which is what puts a
macro's body in a text box (`engine.latex.converter`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eqsearch.engine.latex.scan import read_argument, read_optional, skip_space

__all__ = [
    "displays_in_text_boxes",
    "dollars_in_math",
    "resolve_ensuremath",
    "sized_delimiters_in_text",
    "units_in_text",
]

_MODE_SWITCH = re.compile(
    r"\\(ensuremath)(?![A-Za-z@])\s*|\\(text|mbox|textrm|textnormal|textit|textbf|textsf|texttt|hbox|makebox)"
    r"(?![A-Za-z@])\s*(?:\[[^\]]*\]\s*)*(?=\{)|(?<!\\)(\$)"
)


_TAKES_ARGUMENT = re.compile(r"(?:\\[A-Za-z@]+|[\^_])\s*\Z")


def resolve_ensuremath(latex: str, text: bool = False) -> str:
    """``\\ensuremath{X}`` as LaTeX reads it where it stands: ``X`` in math (a group ``{X}`` where the command or
    script before it takes it as an argument), ``$X$`` inside a text box (``\\mbox{\\ensuremath{\\diamond}}``).
    Run after macro expansion, which may have put it in either place."""
    if "\\ensuremath" not in latex:
        return latex
    out: list[str] = []
    pos = 0
    while (m := _MODE_SWITCH.search(latex, pos)) is not None:
        out.append(latex[pos : m.start()])
        if m.group(3):  # a $ inside a text box switches to math until the next one
            close = latex.find("$", m.end()) if text else -1
            if close < 0:
                out.append(latex[m.start() :])
                return "".join(out)
            out.append("$" + resolve_ensuremath(latex[m.end() : close], text=False) + "$")
            pos = close + 1
            continue
        argument = read_argument(latex, m.end())
        if argument is None:
            out.append(latex[m.start() : m.end()])
            pos = m.end()
            continue
        if m.group(1):
            inner = resolve_ensuremath(argument[0], text=False)
            # in math LaTeX gives the argument back as it is (\ensuremath\genfrac{[}{]}.. stays a \genfrac); a
            # group only where a command or a script before it takes it as its argument (\breve\ensuremath{..})
            taken = _TAKES_ARGUMENT.search(latex, 0, m.start()) is not None
            out.append(f"${inner}$" if text else f"{{{inner}}}" if taken else inner)
        else:
            out.append(latex[m.start() : m.end()] + "{" + resolve_ensuremath(argument[0], text=True) + "}")
        pos = argument[1]
    out.append(latex[pos:])
    return "".join(out)


_TEXT_BOX = re.compile(r"\\(?:text(?:rm|bf|it|sf|tt|up|md|sl|normal)?|mbox|hbox|textnormal)(?![A-Za-z@])\s*(?=\{)")
# \big/ \Bigl( \bigg\| : a sized delimiter and the delimiter it sizes
_SIZED = re.compile(r"\\([Bb]igg?[lrm]?)(?![A-Za-z@])\s*(\\[A-Za-z]+|\\.|[^\s\\{}$#])")


def sized_delimiters_in_text(text: str) -> str:
    """A sized delimiter in a text box (``\\text{\\raise1ex\\hbox{$a$}\\Big/\\lower1ex\\hbox{$b$}}``, a slanted
    fraction): amsmath sets ``\\Big/`` in a math box of its own wherever it stands, KaTeX takes it in math only, so
    it is put in ``$..$`` there. Run after macro expansion, which puts a macro's body in the text box."""
    if "big" not in text.lower() or not _TEXT_BOX.search(text):
        return text
    return _in_text_stretches(text, lambda part: _SIZED.sub(lambda s: f"${s.group()}$", sized_delimiters_in_text(part)))


def _rewrite_text_boxes(text: str, rewrite: Callable[[re.Match[str], str], str | None]) -> str:
    """``text`` with each text box (its command and its brace group) replaced by ``rewrite(match, content)``; a box
    for which it returns None stays as written."""
    out: list[str] = []
    pos = 0
    for m in _TEXT_BOX.finditer(text):
        if m.start() < pos:
            continue
        box = read_argument(text, m.end())
        replaced = None if box is None else rewrite(m, box[0])
        if box is None or replaced is None:
            continue
        out += [text[pos : m.start()], replaced]
        pos = box[1]
    out.append(text[pos:])
    return "".join(out)


def _in_text_stretches(text: str, change: Callable[[str], str]) -> str:
    """``text`` with ``change`` applied to each text box's text-mode stretches (those between the box's own
    ``$..$``); ``change`` recurses into boxes nested in a stretch where it needs to."""

    def rewrite(m: re.Match[str], content: str) -> str:
        parts = content.split("$")
        for i in range(0, len(parts), 2):
            parts[i] = change(parts[i])
        return m.group() + "{" + "$".join(parts) + "}"

    return _rewrite_text_boxes(text, rewrite)


_DISPLAY_IN_BOX = re.compile(
    r"\A\s*\\begin\s*\{(aligned|gathered|alignedat|array|matrix|pmatrix|bmatrix|cases|split)\}", re.DOTALL
)


_SIZED_IN_DOLLARS = re.compile(r"\$\s*(\\[Bb]igg?[lrm]?(?![A-Za-z@])\s*(?:\\[A-Za-z]+|\\.|[^\s\\{}$#]))\s*\$")


def dollars_in_math(text: str) -> str:
    """A ``$..$`` written in math mode at the formula's own level (``\\text{if } $f$ \\; ..`` in a ``cases`` cell)
    leaves math in TeX, whose cells are ``$..$`` themselves: what it holds is text. KaTeX refuses a ``$`` in math; the
    stretch becomes ``\\text{..}``. A ``$`` inside a brace group is its box's own (``\\fbox{$..$}``, mhchem's
    ``\\ch{..$x$..}``) and stays. Run after macro expansion."""
    if "$" not in text:
        return text
    dollars: list[int] = []
    depth = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "$" and depth == 0:
            dollars.append(i)
        i += 1
    if len(dollars) < 2:
        return text
    out: list[str] = []
    pos = 0
    for opening, closing in zip(dollars[::2], dollars[1::2], strict=False):
        out += [text[pos:opening], "\\text{", text[opening + 1 : closing], "}"]
        pos = closing + 1
    out.append(text[pos:])
    return "".join(out)


def displays_in_text_boxes(text: str) -> str:
    """A text box holding a display and nothing else (``\\resizebox{\\textwidth}{!}{\\begin{minipage}{..}
    \\begin{align*}..}``: the box's text, a minipage of one display, is that display): the display, out of the box,
    which KaTeX reads only in math. Run after macro expansion, which puts the box's content in ``\\text``."""
    if "\\begin" not in text or not _TEXT_BOX.search(text):
        return text

    def rewrite(_: re.Match[str], content: str) -> str | None:
        inner = _DISPLAY_IN_BOX.match(content)
        if inner is None:
            return None
        closing = re.search(r"\\end\s*\{" + inner.group(1) + r"\}\s*\Z", content)
        if closing is None or content.count("\\begin") != content.count("\\end"):
            return None
        # the box's text is in text mode, where a sized delimiter was written $\bigg\lbrace$: in math, without $
        return "{" + _SIZED_IN_DOLLARS.sub(r"\1", content) + "}"

    return _rewrite_text_boxes(text, rewrite)


# siunitx's commands, which set math in text as in math: the mandatory arguments each reads
_UNIT_COMMANDS = {"SI": 2, "si": 1, "qty": 2, "unit": 1, "num": 1, "ang": 1, "SIrange": 3, "qtyrange": 3}
_UNIT_IN_TEXT = re.compile(r"\\(" + "|".join(_UNIT_COMMANDS) + r")(?![A-Za-z@])")


def units_in_text(text: str) -> str:
    """siunitx's quantities in a text box (``\\intertext{.. a field of \\SI{4.5}{\\degree} ..}``): siunitx sets them
    in text as in math, KaTeX's stand-ins (``#1\\,\\mathrm{#2}``) only in math, so they are put in ``$..$`` there.
    Run after macro expansion, which puts a macro's body in the text box."""
    if not _UNIT_IN_TEXT.search(text) or not _TEXT_BOX.search(text):
        return text
    return _in_text_stretches(text, lambda part: _units_in_math(units_in_text(part)))


def _units_in_math(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _UNIT_IN_TEXT.finditer(text):
        if m.start() < pos:
            continue
        end = read_optional(text, m.end())[1]
        for _ in range(_UNIT_COMMANDS[m.group(1)]):
            arg = read_argument(text, end) if text.startswith("{", skip_space(text, end)) else None
            if arg is None:
                break  # not siunitx's (physics' \qty(x)): left as it is
            end = arg[1]
        else:
            out += [text[pos : m.start()], "$", text[m.start() : end], "$"]
            pos = end
    out.append(text[pos:])
    return "".join(out)
