"""Aliases (``\\let``, ``\\LetLtxMacro``, ``\\NewCommandCopy``) resolved as TeX resolves them, and cycles broken.

``\\let\\a\\b`` gives ``\\a`` the meaning ``\\b`` has *at that moment*: a copy, not a forward reference. Extraction
copies a user macro's definition when ``\\b`` is one already (`eqsearch.ingest.macros`); an alias whose target is
still a single name here means a command of KaTeX or of the package table (`engine.latex.packages`), and keeps that
meaning even if the document redefines the target later (``\\let\\oldsqrt\\sqrt \\renewcommand\\sqrt{..\\oldsqrt..}``).

Where a document's names and the package table's call each other in a circle (mleftright's ``\\let\\left\\mleft``,
whose ``\\mleft`` the table defines through ``\\left``), the table's use of the document's name means the
built-in command, as it does in the package. Such a reference to a built-in is written with `PRIMITIVE` before the
name: `engine.latex.macros.expand_macros` never expands it and removes the mark, and a macro that holds one is
expanded in Python, so KaTeX sees the built-in name. An alias that comes back to its own built-in meaning
(``\\left`` -> ``\\mleft`` -> the built-in ``\\left``) is no definition at all and is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eqsearch.engine.latex.macros import MacroDef

__all__ = ["ALIAS_SOURCES", "PRIMITIVE", "nodes_on_cycles", "resolve_aliases"]

#: Marks the next control word as the built-in command of that name (never expanded as a macro).
PRIMITIVE = "\x01"
#: The ``MacroDef.source`` of definitions that copy a meaning.
ALIAS_SOURCES = frozenset({"let", "LetLtxMacro", "NewCommandCopy", "RenewCommandCopy", "DeclareCommandCopy"})

_CS = re.compile(r"\x01?\\(?:[A-Za-z@]+|[^A-Za-z@\s])")
_ONE_NAME = re.compile(r"\s*(\x01?\\(?:[A-Za-z@]+|[^A-Za-z@\s]))\s*\Z")
_MARKED = re.compile(r"\x01(\\(?:[A-Za-z@]+|[^A-Za-z@\s]))")


def _calls(body: str) -> set[str]:
    """The macro names a body uses (marked built-ins excluded)."""
    return {cs for cs in _CS.findall(body) if not cs.startswith(PRIMITIVE)} if "\\" in body else set()


def _target(macro: MacroDef) -> str | None:
    """The one name an alias stands for (``\\let\\a\\b`` -> ``\\b``), else None."""
    if macro.source not in ALIAS_SOURCES or macro.nargs or macro.spec is not None or macro.delimiters is not None:
        return None
    m = _ONE_NAME.match(macro.body)
    return None if m is None else m.group(1)


def _mark(body: str, names: set[str]) -> str:
    """``body`` with each use of one of ``names`` marked as the built-in command."""
    return _CS.sub(lambda m: PRIMITIVE + m.group(0) if m.group(0) in names else m.group(0), body)


def resolve_aliases(macros: Sequence[MacroDef], package: Mapping[str, MacroDef]) -> list[MacroDef]:
    """Aliases given the meaning they copy, references that close a circle marked as built-ins (module docstring).

    Args:
        macros: the definitions in force, package fallbacks (source ``package``) and the document's, one per name.
        package: the whole package table (an alias of a table command the document redefines copies the table's).

    Returns:
        The definitions to use, in the same order. A document's own recursion (``\\def\\a{\\a x}``) is left as it
        is: extraction drops it with a warning (`eqsearch.ingest.macrocycles`), and the converter fails it fast.
    """
    defined = {m.name for m in macros if m.source != "package"}
    out: dict[str, MacroDef] = {}
    for macro in macros:
        target = _target(macro)
        if target is not None and not target.startswith(PRIMITIVE):
            if target == macro.name:
                continue  # \let\a\a: nothing
            if target in defined:  # the document (re)defines the target: the alias keeps its earlier meaning
                copied = package.get(target)
                if copied is not None:
                    macro = replace(copied, name=macro.name, source=macro.source)
                else:
                    macro = replace(macro, body=PRIMITIVE + target)
        out[macro.name] = macro
    # A circle through the package table: the table's use of a document's name means the built-in command.
    graph = {name: _calls(m.body) & out.keys() for name, m in out.items()}
    cyclic = nodes_on_cycles(graph)
    for name in cyclic:
        macro = out[name]
        if macro.source == "package":
            redefined = graph[name] & cyclic & defined
            if redefined:
                out[name] = replace(macro, body=_mark(macro.body, redefined))
    _drop_identities(out)
    # a mark before a name nothing defines any more is the name itself
    for name, macro in out.items():
        if PRIMITIVE in macro.body:
            body = _MARKED.sub(lambda m: m.group(0) if m.group(1) in out else m.group(1), macro.body)
            if body != macro.body:
                out[name] = replace(macro, body=body)
    return list(out.values())


def _drop_identities(out: dict[str, MacroDef]) -> None:
    """Drop the argument-less macros that lead, through others of one name, to their own built-in meaning."""
    for name in list(out):
        if name not in out:
            continue
        seen = {name}
        current = out[name]
        for _ in range(16):
            m = _ONE_NAME.match(current.body)
            if m is None or current.nargs or current.spec is not None or current.delimiters is not None:
                break
            step = m.group(1)
            if step == PRIMITIVE + name:
                del out[name]
                break
            if step in seen or step not in out:
                break
            seen.add(step)
            current = out[step]


def nodes_on_cycles(graph: Mapping[str, set[str]]) -> set[str]:
    """The nodes that lie on a cycle of ``graph`` (node -> successors): Tarjan's strongly connected components,
    iteratively (a component of two or more nodes, or a node that is its own successor)."""
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
                if child not in graph:
                    continue
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
