"""Recursive macro definitions, found and dropped: no converter can expand ``\\def\\a{\\a x}`` or a cycle
through several macros, so extraction (`eqsearch.ingest.macros`) removes them with a warning instead of letting the
conversion of every formula that uses them fail.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from eqsearch.engine.latex.aliases import ALIAS_SOURCES, nodes_on_cycles
from eqsearch.ingest.records import Issue

if TYPE_CHECKING:
    from eqsearch.ingest.macros import DocumentMacros

__all__ = ["drop_recursive"]

_CS = re.compile(r"\\[A-Za-z@]+")


def drop_recursive(table: DocumentMacros) -> None:
    """Remove from ``table.macros`` the macros that expand to themselves, directly or through others, each with a
    ``recursive_macro`` issue (an alias taken before a redefinition is no part of a cycle: it keeps the old meaning)."""
    names = table.macros
    # \let\oldsqrt\sqrt before \renewcommand{\sqrt}{..\oldsqrt..}: the alias holds the meaning \sqrt had when it
    # was taken (the built-in), not the redefinition, so it closes no circle (engine.latex.aliases resolves it)
    graph = {
        name: set() if _is_alias(m.source, m.body) else {cs for cs in _CS.findall(m.body) if cs in names}
        for name, m in names.items()
    }
    cyclic = nodes_on_cycles(graph)
    for name in [n for n in names if n in cyclic]:
        message = f"{name} expands to itself (directly or through other macros); dropped"
        table.issues.append(Issue("recursive_macro", message))
        del table.macros[name]


def _is_alias(source: str, body: str) -> bool:
    return source in ALIAS_SOURCES and _CS.fullmatch(body.strip()) is not None
