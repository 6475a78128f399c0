"""The commands the pinned KaTeX implements itself, read from its distribution file: what ``\\providecommand`` finds.

``\\providecommand{\\sqrt}{..}`` defines nothing in LaTeX, since ``\\sqrt`` exists; the converter needs to know which
names KaTeX's own functions and symbols cover to treat such a definition the same way (`engine.latex.macros`).
The names are read from ``node_modules/katex/dist/katex.js`` (never run from Python): every name listed in a
``defineFunction``/``defineEnvironment`` call's ``names`` and every ``defineSymbol`` name. KaTeX's ``defineMacro``
conveniences (``\\N``, ``\\R``, ``\\bra``, texvc's ``\\Alpha``) are left out on purpose: LaTeX has no such command
unless a package makes it, so a document that provides its own (``\\providecommand{\\N}{\\mathcal{N}}``) gets it.

`katex_macro_uses` reads the other side of those conveniences: the commands their bodies use (``\\neq`` is
``\\html@mathml{..}{\\mathrel{\\char`≠}}``). A document that redefines one of them (``\\renewcommand{\\char}{..}``)
would break KaTeX's own macros if its definition went into KaTeX's macro table; `engine.latex.macros` expands such a
definition itself instead.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["katex_commands", "katex_macro_uses"]

_NAMES_LIST = re.compile(r"\bnames:\s*\[([^\]]*)\]")
_SYMBOL = re.compile(r"\bdefineSymbol\(\s*[^;]*?\"(\\\\[A-Za-z@]+)\"\s*(?:,\s*(?:true|false))?\s*\)")
_NAME = re.compile(r"\"(\\\\[A-Za-z@]+)\"")
_MACRO_BODY = re.compile(r'\bdefineMacro\(\s*"(?:[^"\\]|\\.)*"\s*,\s*"((?:[^"\\]|\\.)*)"')
_CONTROL_WORD = re.compile(r"\\\\([A-Za-z@]+)")  # \\char in the JavaScript source is \char


def parse_katex_commands(source: str) -> frozenset[str]:
    """The control words a KaTeX distribution file defines as functions or symbols (``\\\\sqrt`` in the JavaScript
    source is ``\\sqrt``)."""
    names = {n for listed in _NAMES_LIST.findall(source) for n in _NAME.findall(listed)}
    names.update(_SYMBOL.findall(source))
    return frozenset(n.replace("\\\\", "\\") for n in names)


def _katex_source(katex_dir: Path) -> str:
    """The distribution file of the KaTeX installed in ``katex_dir``; empty when it is not installed."""
    try:
        return (Path(katex_dir) / "node_modules" / "katex" / "dist" / "katex.js").read_text(encoding="utf-8")
    except OSError:
        return ""


@functools.cache
def katex_commands(katex_dir: Path) -> frozenset[str]:
    """The commands of the KaTeX installed in ``katex_dir`` (empty when it is not installed), read once a process."""
    return parse_katex_commands(_katex_source(katex_dir))


def parse_katex_macro_uses(source: str) -> frozenset[str]:
    """The control words the string bodies of a KaTeX distribution file's ``defineMacro`` calls use."""
    return frozenset("\\" + name for body in _MACRO_BODY.findall(source) for name in _CONTROL_WORD.findall(body))


@functools.cache
def katex_macro_uses(katex_dir: Path) -> frozenset[str]:
    """The commands the macros of the KaTeX installed in ``katex_dir`` use (empty when it is not installed)."""
    return parse_katex_macro_uses(_katex_source(katex_dir))
