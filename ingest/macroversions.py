"""Macros redefined in a document's body: each formula gets the definition in force where it stands.

TeX defines as it reads: a thesis that puts one paper a chapter renews its notation from chapter to chapter
(``\\newcommand{\\xleft}{x_{-}}`` in chapter 2, ``\\renewcommand{\\xleft}[1]{x_{-}^{#1}}`` in chapter 6), and each
chapter's formulas mean their own chapter's ``\\xleft``. A paper's macros are one table, so the table keeps, under
the plain name, the definition in force where the body starts, and each later redefinition in the body under a name
of its own (``\\xleft@va``); the formulas after a redefinition (display or inline, by their offset) use that name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from eqsearch.engine.latex.macros import MacroDef

__all__ = ["BodyVersions", "body_versions"]


@dataclass(frozen=True)
class BodyVersions:
    """The versions of the macros a document's body redefines.

    Attributes:
        macros: the document's macros with the plain names holding the definitions in force where the body starts,
            and the versions made in the body added after them.
        changes: ``(offset, name, version name)`` for each redefinition in the body, in text order.
    """

    macros: list[MacroDef]
    changes: list[tuple[int, str, str]]

    def rename(self, latex: str, offset: int) -> str:
        """``latex`` (a formula at ``offset`` of the document's text) with each redefined name replaced by the name
        of the version in force there."""
        current: dict[str, str] = {}
        for at, name, version in self.changes:
            if at > offset:
                break
            current[name] = version
        for name, version in current.items():
            if name in latex:
                latex = re.sub(re.escape(name) + r"(?![A-Za-z@])", lambda _, v=version: v, latex)
        return latex


# names KaTeX reads by themselves, not where a formula names them: one definition holds (the last, as before)
_READ_BY_KATEX = frozenset({"\\arraystretch"})


def body_versions(
    macros: Sequence[MacroDef], history: Iterable[tuple[int, MacroDef]], body_offset: int
) -> BodyVersions | None:
    """The versions of the macros redefined in the body (module docstring), or None when the body redefines none.

    Args:
        macros: the document's macros (one definition a name, the last).
        history: every definition read from the document's text, with its offset there, in text order.
        body_offset: where the body (``\\begin{document}``) starts in that text.
    """
    names = {m.name for m in macros} - _READ_BY_KATEX
    by_name: dict[str, list[tuple[int, MacroDef]]] = {}
    for at, macro in history:
        defined = by_name.setdefault(macro.name, [])
        if macro.name in names and (not defined or defined[-1][1] != macro):  # the same again changes nothing
            defined.append((at, macro))
    initial: dict[str, MacroDef] = {}
    changes: list[tuple[int, str, str]] = []
    versions: list[MacroDef] = []
    for name, defined in by_name.items():
        in_body = [(at, macro) for at, macro in defined if at >= body_offset]
        before = [macro for at, macro in defined if at < body_offset]
        if not in_body or len(defined) < 2:
            continue
        if before:
            initial[name] = before[-1]
        else:
            initial[name] = in_body[0][1]
            in_body = in_body[1:]
        for k, (at, macro) in enumerate(in_body):
            version = f"{name}@v{_letters(k)}"  # a control word: letters only
            versions.append(replace(macro, name=version))
            changes.append((at, name, version))
    if not changes:
        return None
    table = [initial.get(m.name, m) for m in macros]
    return BodyVersions(table + versions, sorted(changes))


def _letters(k: int) -> str:
    """0 -> ``a``, 25 -> ``z``, 26 -> ``ba``: a number in letters."""
    out = ""
    while True:
        k, r = divmod(k, 26)
        out = chr(ord("a") + r) + out
        if k == 0:
            return out
