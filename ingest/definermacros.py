"""Macros that define macros: a preamble's ``\\def\\newbfop#1#2{\\def#1{\\mathbf{#2}}}`` then ``\\newbfop\\Number{N}``.

Each use of such a user macro (outside any definition) is expanded into the definitions it makes, as LaTeX text that
`eqsearch.ingest.macros.extract_macros` reads like any other preamble text.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from eqsearch.engine.latex.scan import read_arguments
from eqsearch.ingest.macroloops import named_definitions

if TYPE_CHECKING:
    from eqsearch.ingest.macros import DocumentMacros

__all__ = ["definer_macro_uses"]

# A user macro that defines the macro named by its first argument: \def\newbfop#1#2{\def#1{\mathbf{#2}}}
_DEFINES_ARGUMENT = re.compile(
    r"\A\s*\\(?:(?:re|provide)?newcommand\*?|[gex]?def|DeclareMathOperator\*?|(?:re)?newrobustcmd)\s*\{?\s*#1(?!\d)"
    r"|\A\s*\\expandafter\s*\\(?:(?:re|provide)?newcommand\*?|[gex]?def|let|DeclareMathOperator\*?)\s*"
    r"\\csname[^\\]*?#1(?!\d)"
)
_PARAMETER = re.compile(r"(?<!#)#([1-9])")


def definer_macro_uses(text: str, table: DocumentMacros) -> str:
    """The definitions made by the uses, in ``text``, of user macros that define macros (``\\newbfop\\Number{N}``
    with ``\\def\\newbfop#1#2{\\def#1{\\bfop{#2}}}``), as LaTeX text to read like any other."""
    definers = {
        name: macro
        for name, macro in table.macros.items()
        if macro.nargs >= 1
        and (macro.spec is None or set(macro.spec.split()) == {"m"})
        and macro.default is None
        and _DEFINES_ARGUMENT.match(macro.body)
    }
    if not definers:
        return ""
    pattern = re.compile("(" + "|".join(re.escape(n) for n in definers) + ")(?![A-Za-z@])")
    inside = sorted(table.spans)
    made: list[str] = []
    for m in pattern.finditer(text):
        k = bisect.bisect_right(inside, (m.start(), len(text) + 1)) - 1
        if k >= 0 and inside[k][0] <= m.start() < inside[k][1]:
            continue  # inside a definition (the definer's own, or a body that uses it)
        macro = definers[m.group(1)]
        args, _ = read_arguments(text, m.end(), macro.nargs)
        if len(args) == macro.nargs:
            made.append(named_definitions(_substitute_parameters(macro.body, args)))
    return "\n".join(made)


def _substitute_parameters(body: str, args: list[str]) -> str:
    """``body`` with ``#1``.. replaced by ``args`` and ``##`` (a parameter of a definition inside it) by ``#``."""

    def parameter(p: re.Match[str]) -> str:
        k = int(p.group(1))
        return args[k - 1] if k <= len(args) else ""

    return _PARAMETER.sub(parameter, body).replace("##", "#")
