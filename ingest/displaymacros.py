"""User macros that open or close display math, expanded in the text before math is searched.

Physics papers write their displays through shortcuts: ``\\def\\be{\\begin{equation}}`` and
``\\def\\ee{\\end{equation}}``, ``\\newcommand{\\bea}{\\begin{eqnarray}}``, ``\\let\\beq\\equation``,
``\\def\\beas#1\\eeas{\\begin{eqnarray*}#1\\end{eqnarray*}}``, ``\\newcommand{\\al}[1]{\\begin{align}#1\\end{align}}``,
a shortcut that opens two environments at once
(``\\begin{equation}\\begin{aligned}``), or one that uses another shortcut. The math scanner only sees displays
that are spelled out, so every macro whose body holds a display delimiter (``\\begin``/``\\end`` of a display
environment, ``subequations`` or breqn's ``dgroup``, ``\\[``, ``\\]``, ``$$``, or the environment's own commands
``\\equation``/``\\endequation``), directly or through another such macro, is expanded in the text instead of going
to the converter. Expansion reads the macro's arguments as LaTeX does (optional first argument with its default,
xparse argument types, one argument delimited by a command) and is bounded: a document cannot grow past a limit
however its macros nest.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from eqsearch.engine.latex.macros import MacroDef, read_macro_arguments
from eqsearch.engine.latex.xparse import parse_argument_spec, read_spec_arguments, resolve_conditionals
from eqsearch.ingest.errors import DocumentTooLargeError

if TYPE_CHECKING:
    from eqsearch.ingest.macros import DocumentMacros

__all__ = ["expand_display_macros", "has_display_delimiter", "split_display_macros"]

_GROUPINGS = ("subequations", "dgroup")


def _display_names() -> str:
    from eqsearch.ingest.mathenv import DISPLAY_ENVIRONMENTS

    return "|".join(sorted([*DISPLAY_ENVIRONMENTS, *_GROUPINGS], key=len, reverse=True))


_NAMES = _display_names()
# \[ or \] preceded by an even number of backslashes (so not the "\\" of a line break followed by "[2pt]")
_BRACKET = r"(?<!\\)(?:\\\\)*\\[\[\]]"
_DELIMITER = re.compile(
    r"\\(?:begin|end)\s*\{(?:" + _NAMES + r")\*?\}|" + _BRACKET + r"|\$\$|\\(?:end)?(?:" + _NAMES + r")(?![A-Za-z@*])"
)
_RAW_ENVIRONMENT = re.compile(r"\\(end)?(" + _NAMES + r")(?![A-Za-z@*])")
_MAX_DEPTH = 12


def has_display_delimiter(body: str) -> bool:
    """Whether a macro body opens or closes a display (see the module docstring)."""
    return _DELIMITER.search(body) is not None


def _normalized(body: str) -> str:
    """``\\equation`` -> ``\\begin{equation}``, ``\\endequation`` -> ``\\end{equation}`` (``\\let`` aliases)."""
    return _RAW_ENVIRONMENT.sub(lambda m: f"\\{'end' if m.group(1) else 'begin'}{{{m.group(2)}}}", body)


def split_display_macros(table: DocumentMacros) -> None:
    """Move the macros that open or close a display (directly or through another such macro) from
    ``table.macros`` to ``table.display``, with their bodies normalized."""
    moved = True
    while moved:
        moved = False
        for name, macro in list(table.macros.items()):
            body = _normalized(macro.body)
            uses_display = any(cs in table.display for cs in re.findall(r"\\[A-Za-z@]+", body))
            if has_display_delimiter(body) or uses_display:
                table.display[name] = MacroDef(
                    name, body, macro.nargs, macro.default, macro.source, macro.spec, macro.delimiters
                )
                del table.macros[name]
                moved = True


def expand_display_macros(text: str, display: dict[str, MacroDef], *, max_chars: int = 32 * 1024 * 1024) -> str:
    """Replace every use of a display macro in ``text`` by its expansion (nested uses too).

    Args:
        text: a document body, with the definitions themselves already masked out.
        display: the display macros (`DocumentMacros.display`).
        max_chars: the longest text the expansion may produce.

    Returns:
        The text with the displays spelled out.

    Raises:
        DocumentTooLargeError: the expansion would exceed ``max_chars`` (a macro bomb).
    """
    if not display:
        return text
    pattern = re.compile(
        "(" + "|".join(re.escape(n) for n in sorted(display, key=len, reverse=True)) + r")(?![A-Za-z@])"
    )
    budget = [max_chars - len(text)]
    return _expand(text, display, pattern, 0, budget)


def _expand(text: str, display: dict[str, MacroDef], pattern: re.Pattern[str], depth: int, budget: list[int]) -> str:
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        if m.start() < pos:
            continue  # inside the arguments of the previous use
        macro = display[m.group(1)]
        replacement, end = _use(macro, text, m.end())
        if depth < _MAX_DEPTH and pattern.search(replacement):
            replacement = _expand(replacement, display, pattern, depth + 1, budget)
        budget[0] -= len(replacement) - (end - m.start())
        if budget[0] < 0:
            raise DocumentTooLargeError(
                f"expanding the display macro {m.group(1)} makes the document larger than the limit",
                hint="a macro that multiplies itself; raise --max-document-chars if the document is legitimate",
            )
        out.append(text[pos : m.start()])
        out.append(replacement)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _use(macro: MacroDef, text: str, end: int) -> tuple[str, int]:
    """The expansion of one use of ``macro`` whose name ends at ``end``, and where the use ends."""
    if macro.spec is not None:
        args, end = read_spec_arguments(parse_argument_spec(macro.spec), text, end)
        return _separated(resolve_conditionals(_substitute(macro.body, args)), text, end), end
    args, end = read_macro_arguments(macro, text, end)
    return _separated(_substitute(macro.body, args), text, end), end


_PARAMETER = re.compile(r"#(#|[1-9])")
_ENDS_IN_WORD = re.compile(r"\\[A-Za-z@]+\Z")


def _separated(replacement: str, text: str, end: int) -> str:
    """A space after an expansion ending in a control word when a letter follows (``\\alpha`` then ``x``)."""
    if end < len(text) and text[end].isalpha() and _ENDS_IN_WORD.search(replacement):
        return replacement + " "
    return replacement


def _substitute(body: str, args: list[str]) -> str:
    def parameter(m: re.Match[str]) -> str:
        if m.group(1) == "#":
            return "#"
        index = int(m.group(1)) - 1
        return args[index] if index < len(args) else ""

    return _PARAMETER.sub(parameter, body) if args else body
