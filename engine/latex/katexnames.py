"""The commands the pinned KaTeX implements itself, read from its distribution file: what ``\\providecommand`` finds.

``\\providecommand{\\sqrt}{..}`` defines nothing in LaTeX, since ``\\sqrt`` exists; the converter needs to know which
names KaTeX's own functions and symbols cover to treat such a definition the same way (`engine.latex.macros`).
The names are read from ``node_modules/katex/dist/katex.js`` (never run from Python): every name listed in a
``defineFunction``/``defineEnvironment`` call's ``names`` and every ``defineSymbol`` name. KaTeX's ``defineMacro``
conveniences (``\\N``, ``\\R``, ``\\bra``, texvc's ``\\Alpha``) are left out on purpose: LaTeX has no such command
unless a package makes it, so a document that provides its own (``\\providecommand{\\N}{\\mathcal{N}}``) gets it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["katex_commands"]

_NAMES_LIST = re.compile(r"\bnames:\s*\[([^\]]*)\]")
_SYMBOL = re.compile(r"\bdefineSymbol\(\s*[^;]*?\"(\\\\[A-Za-z@]+)\"\s*(?:,\s*(?:true|false))?\s*\)")
_NAME = re.compile(r"\"(\\\\[A-Za-z@]+)\"")


def parse_katex_commands(source: str) -> frozenset[str]:
    """The control words a KaTeX distribution file defines as functions or symbols (``\\\\sqrt`` in the JavaScript
    source is ``\\sqrt``)."""
    names = {n for listed in _NAMES_LIST.findall(source) for n in _NAME.findall(listed)}
    names.update(_SYMBOL.findall(source))
    return frozenset(n.replace("\\\\", "\\") for n in names)


@functools.cache
def katex_commands(katex_dir: Path) -> frozenset[str]:
    """The commands of the KaTeX installed in ``katex_dir`` (empty when it is not installed), read once a process."""
    path = Path(katex_dir) / "node_modules" / "katex" / "dist" / "katex.js"
    try:
        return parse_katex_commands(path.read_text(encoding="utf-8"))
    except OSError:
        return frozenset()
