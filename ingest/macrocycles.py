"""Recursive macro definitions, found and dropped: no converter can expand ``\\def\\a{\\a x}`` or a cycle
through several macros, so extraction (`eqsearch.ingest.macros`) removes them with a warning instead of letting the
conversion of every formula that uses them fail.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from eqsearch.ingest.records import Issue

if TYPE_CHECKING:
    from eqsearch.ingest.macros import DocumentMacros

__all__ = ["drop_recursive"]

_CS = re.compile(r"\\[A-Za-z@]+")


def drop_recursive(table: DocumentMacros) -> None:
    """Remove from ``table.macros`` the macros that expand to themselves, directly or through others, each with a
    ``recursive_macro`` issue (a cycle through a ``\\let`` alias of a built-in drops the redefinition only)."""
    names = table.macros
    graph = {name: {cs for cs in _CS.findall(m.body) if cs in names} for name, m in names.items()}
    cyclic = _nodes_on_cycles(graph)
    # On a cycle through a \let alias of a built-in (\let\oldsqrt\sqrt, then \renewcommand{\sqrt}{..\oldsqrt..}),
    # dropping the redefinition leaves the alias pointing at the built-in, which is what TeX meant.
    keep = {name for name in cyclic if names[name].source == "let"}
    drop = cyclic - keep if cyclic - keep else cyclic
    aliased = {m.body for name, m in names.items() if name in keep}
    for name in [n for n in names if n in drop]:
        if name in aliased:
            message = f"{name} is redefined through a \\let alias of its old meaning; dropped (the built-in stays)"
        else:
            message = f"{name} expands to itself (directly or through other macros); dropped"
        table.issues.append(Issue("recursive_macro", message))
        del table.macros[name]


def _nodes_on_cycles(graph: dict[str, set[str]]) -> set[str]:
    """Tarjan's strongly connected components, iteratively; returns the nodes on some cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: set[str] = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    result.update(component)
    return result
