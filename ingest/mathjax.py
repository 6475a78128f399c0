"""A page's MathJax configuration: the TeX macros it defines and whether it makes ``$...$`` inline math.

MathJax 2 and 3 read their configuration from inline scripts and from the files a ``<script src>`` loads (MathJax
2's ``MathJax.js?config=...,local.js``); a page's formulas use its macros as a LaTeX document uses its
``\\newcommand``s. Files are read only through the caller's ``read_file``, which stays inside the documentation.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from eqsearch.engine.latex.macros import MacroDef
from lxml import etree

__all__ = ["mathjax_macros", "page_config"]

# A MathJax configuration (2 or 3) that lists ['$','$'] among its inline delimiters.
_DOLLAR_INLINE = re.compile(r"""inlineMath["']?\s*:\s*\[[^;{}]*?\[\s*(["'])\$\1\s*,\s*(["'])\$\2\s*\]""")
_MACROS_BLOCK = re.compile(r"\b[Mm]acros\s*:\s*\{")
_JS_STRING = r"""(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
_MACRO_ENTRY = re.compile(
    r"""\s*,?\s*["']?([A-Za-z]+)["']?\s*:\s*(?:(""" + _JS_STRING + r""")|\[\s*(""" + _JS_STRING
    + r""")\s*,\s*(\d)\s*(?:,\s*(""" + _JS_STRING + r""")\s*)?\])"""
)  # fmt: skip
_MAX_SCRIPT_BYTES = 1024 * 1024


def _js_string(literal: str) -> str:
    escapes = {"n": "\n", "t": "\t"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(1)), literal[1:-1])


def mathjax_macros(script: str) -> list[MacroDef]:
    """The TeX macros a MathJax configuration defines (``Macros: {ZZ: "\\Bold{Z}", GF: ["\\Bold{F}_{#1}", 1]}``).

    MathJax 2 (``TeX: {Macros: ...}``) and 3 (``tex: {macros: ...}``) spell them the same way; a page's formulas
    use them as a LaTeX document uses its ``\\newcommand``s (SageMath's ``\\ZZ``, deal.II's ``\\jump``).
    """
    found: list[MacroDef] = []
    for block in _MACROS_BLOCK.finditer(script):
        pos = block.end()
        while (m := _MACRO_ENTRY.match(script, pos)) is not None:
            name, plain, body, nargs, default = m.groups()
            if plain is not None:
                found.append(MacroDef("\\" + name, _js_string(plain), 0, None, "mathjax"))
            else:
                optional = None if default is None else _js_string(default)
                found.append(MacroDef("\\" + name, _js_string(body), int(nargs), optional, "mathjax"))
            pos = m.end()
    return found


def _script_paths(script: etree._Element, page: str) -> list[str]:
    """Root-relative paths of the files a ``<script src>`` may configure MathJax with: the file itself, or for
    MathJax 2's ``MathJax.js?config=...,local.js`` the local files (resolved, as MathJax does, against its
    ``config/`` folder)."""
    try:
        parts = urlsplit(script.get("src") or "")
    except ValueError:
        return []
    if parts.scheme or parts.netloc or not parts.path:
        return []
    path = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path)))
    name = posixpath.basename(path).lower()
    if name == "mathjax.js":
        configs = re.findall(r"[^,=&]+\.js", unquote(parts.query))
        paths = [posixpath.normpath(posixpath.join(posixpath.dirname(path), "config", c)) for c in configs]
    elif name.startswith(("tex-", "jquery")):
        paths = []
    else:
        paths = [path]
    return [p for p in paths if p.endswith(".js") and not p.startswith(("../", "/")) and p != ".."]


def page_config(
    root: etree._Element, page: str, read_file: Callable[[str], bytes | None] | None
) -> tuple[list[MacroDef], bool]:
    """The macros of the page's MathJax configuration, in page order (a later definition replaces an earlier one:
    MathJax merges successive configurations), and whether it makes ``$...$`` inline math."""
    macros: dict[str, MacroDef] = {}
    dollars = False

    def read(script: str) -> None:
        nonlocal dollars
        if "acros" in script:
            macros.update((m.name, m) for m in mathjax_macros(script))
        dollars = dollars or _DOLLAR_INLINE.search(script) is not None

    for script in root.iter("script"):
        if not script.get("src"):
            if script.text and ("acros" in script.text or "inlineMath" in script.text):
                read(script.text)
            continue
        for path in _script_paths(script, page):
            data = read_file(path) if read_file is not None else None
            if data is not None and len(data) <= _MAX_SCRIPT_BYTES and (b"acros" in data or b"inlineMath" in data):
                read(data.decode("utf-8", "replace"))
    return list(macros.values()), dollars
