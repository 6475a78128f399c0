"""The walk over one HTML page's markup: its text, display and inline math, headings and links, in page order.

Math is recognised as MathJax (or the page's own rendering) would show it: Sphinx's ``<div class="math">`` and
``<span class="math">``, imgmath's images, Doxygen's ``formulaDsp``/``formulaInl``, MathJax's ``math/tex`` scripts,
and ``$$``, ``\\[``, ``\\(`` (and ``$`` where the page's configuration says so) in running text; code, navigation
and decoration are skipped. `eqsearch.ingest.htmlmath` makes a paper of what the walk collects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

__all__ = ["WHITESPACE", "PageWalk", "main_content", "split_display", "split_inline", "text_of", "walk_page"]

_DISPLAY_ENVS = "equation|align|gather|multline|flalign|alignat|eqnarray|displaymath"
_WHOLE_ENV = re.compile(r"^\\begin\s*\{(" + _DISPLAY_ENVS + r")(\*?)\}(.*)\\end\s*\{\1\2\}[\s.,;]*$", re.DOTALL)
_BRACKETED = re.compile(r"^\\\[(.*)\\\][\s.,;]*$", re.DOTALL)
_DOLLARS = re.compile(r"^\$\$(.*)\$\$[\s.,;]*$", re.DOTALL)
# Math in running text: displays ($$, \[), inline \( ; with dollars on, an escaped \$ first, then inline $...$.
_TEXT_MATH = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)", re.DOTALL)
_TEXT_MATH_DOLLARS = re.compile(r"\\\$|\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|\$((?:[^$\\]|\\.)+?)\$", re.DOTALL)
_WRAPPED_INLINE = re.compile(r"^\s*(?:\$((?:[^$\\]|\\.)+)\$|\\\((.+)\\\))\s*$", re.DOTALL)
_LITERAL_TAGS = frozenset({"code", "tt", "kbd", "samp", "textarea"})
WHITESPACE = re.compile(r"\s+")
_SKIP_TAGS = frozenset({"style", "noscript", "template", "iframe", "object", "svg", "math", "button", "form", "pre"})
# Classes of elements that are code, navigation or decoration rather than prose.
_SKIP_CLASSES = frozenset(
    {
        "headerlink",
        "eqno",
        "highlight",
        "fragment",  # Doxygen code listings
        "ttc",  # Doxygen tooltips (hidden copies of API documentation)
        "toctree-wrapper",
        "sphinxsidebar",
        "related",
        "footer",
        "memproto",  # Doxygen function signatures
        "doctest",
    }
)
_BLOCK_TAGS = frozenset(
    {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "tr", "td", "th", "table", "br", "section", "blockquote", "hr"}
)
_API_DOMAINS = frozenset({"py", "c", "cpp", "js", "f", "m"})
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


@dataclass
class PageWalk:
    """What the walk over one page's main content collects."""

    text: list[str] = field(default_factory=list)
    length: int = 0
    displays: list[tuple[int, int, str, str, list[str]]] = field(default_factory=list)  # start, end, body, env, ids
    inline: list[tuple[int, int, str, str]] = field(default_factory=list)  # start, end, body, delimiter
    headings: list[tuple[int, int, str, str]] = field(default_factory=list)  # offset, level, kind, title
    hrefs: list[str] = field(default_factory=list)

    def add(self, chunk: str) -> None:
        if chunk:
            self.text.append(chunk)
            self.length += len(chunk)


def _classes(element: etree._Element) -> set[str]:
    return set((element.get("class") or "").split())


def text_of(element: etree._Element) -> str:
    """All text under ``element`` except headerlinks and equation numbers, whitespace collapsed."""
    parts: list[str] = []

    def visit(node: etree._Element) -> None:
        if isinstance(node.tag, str) and not (_classes(node) & {"headerlink", "eqno"}):
            parts.append(node.text or "")
            for child in node:
                visit(child)
        if node is not element:
            parts.append(node.tail or "")

    visit(element)
    return WHITESPACE.sub(" ", "".join(parts)).strip()


def split_display(raw: str) -> tuple[str, str]:
    """The body and environment of one display's source text (delimiters removed).

    ``\\[a\\]`` -> ``("a", "\\[")``; ``$$a$$`` -> ``("a", "$$")``; ``\\begin{align*}a\\end{align*}`` ->
    ``("a", "align*")``; anything else (a MathJax script's body) -> ``(text, "\\[")``.
    """
    text = raw.strip()
    m = _BRACKETED.match(text)
    if m is not None and "\\[" not in m.group(1):
        return m.group(1).strip(), "\\["
    m = _DOLLARS.match(text)
    if m is not None and "$$" not in m.group(1):
        return m.group(1).strip(), "$$"
    m = _WHOLE_ENV.match(text)
    if m is not None and "\\begin{" + m.group(1) not in m.group(3):
        return m.group(3).strip(), m.group(1) + m.group(2)
    return text, "\\["


def main_content(root: etree._Element) -> etree._Element:
    """The element holding the page's main content (Sphinx's ``role="main"``, Doxygen's ``contents``...), else the
    root."""
    for path in (
        "//*[@role='main']",
        "//div[contains(concat(' ', normalize-space(@class), ' '), ' body ')]",
        "//div[contains(concat(' ', normalize-space(@class), ' '), ' contents ')]",
        "//main",
        "//article",
        "//body",
    ):
        found = root.xpath(path)
        if found:
            return found[0]
    return root


def split_inline(raw: str, default: str = "\\(") -> tuple[str, str]:
    """The body and delimiter of one inline formula's source text (its delimiters removed, if it has them).

    ``$a$`` -> ``("a", "$")``; ``\\(a\\)`` -> ``("a", "\\(")``; anything else (an imgmath image's alt text, a MathJax
    script's body) -> ``(text, default)``.
    """
    m = _WRAPPED_INLINE.match(raw)
    if m is None:
        return _strip_math(raw), default
    if m.group(1) is not None:
        return _strip_math(m.group(1)), "$"
    return _strip_math(m.group(2)), "\\("


def _strip_math(body: str) -> str:
    """``body`` without surrounding whitespace, trailing control spaces included (``\\ \\star\\ `` -> ``\\ \\star``:
    a backslash left at the end would not parse)."""
    stripped = body.strip()
    while (len(stripped) - len(stripped.rstrip("\\"))) % 2:
        stripped = stripped[:-1].rstrip()
    return stripped


def walk_page(main: etree._Element, *, dollars: bool = False) -> PageWalk:
    """Walk the page's main content in document order: its text (each display as ``[math]``, each inline formula as
    ``$...$``), displays, inline formulas, headings (API descriptions as negative levels) and links; ``dollars``:
    the page's MathJax takes ``$...$`` as inline math."""
    walk = PageWalk()
    text_math = _TEXT_MATH_DOLLARS if dollars else _TEXT_MATH

    def display(raw: str, ids: list[str]) -> None:
        body, environment = split_display(raw)
        walk.add(" ")
        start = walk.length
        walk.add("[math]")
        walk.displays.append((start, walk.length, body, environment, ids))
        walk.add(" ")

    def inline(body: str, delimiter: str) -> None:
        # in the text as a LaTeX source has it, so that contexts keep the formula as ``$...$``
        body = _strip_math(body)
        if not body:
            return
        start = walk.length
        walk.add(f"${body}$")
        walk.inline.append((start, walk.length, body, delimiter))

    def text(chunk: str | None, literal: bool) -> None:
        if not chunk:
            return
        if literal:
            walk.add(chunk)
            return
        pos = 0
        for m in text_math.finditer(chunk):
            walk.add(chunk[pos : m.start()])
            pos = m.end()
            if m.group(1) is not None or m.group(2) is not None:
                display(m.group(0), [])
            elif m.group(3) is not None:
                inline(m.group(3), "\\(")
            elif m.lastindex == 4:
                inline(m.group(4), "$")
            else:  # an escaped dollar
                walk.add(m.group(0))
        walk.add(chunk[pos:])

    def visit(node: etree._Element, api_depth: int, api_type: str | None, literal: bool) -> None:
        tag = node.tag if isinstance(node.tag, str) else ""
        classes = _classes(node)
        if tag == "script":
            kind = (node.get("type") or "").replace(" ", "")
            if kind.startswith("math/tex") and "mode=display" in kind:
                display(node.text or "", [])
            elif kind.startswith("math/tex"):
                inline(node.text or "", "\\(")
            return
        if not tag or tag in _SKIP_TAGS or classes & _SKIP_CLASSES or tag == "nav":
            return
        if literal:  # code: its text is context, never math
            walk.add(text_of(node))
            return
        if tag == "img" and "formulaDsp" in classes:
            display(node.get("alt") or "", [])
            return
        if tag == "img" and classes & {"math", "formulaInl"}:  # imgmath's inline images, Doxygen's inline formulas
            inline(*split_inline(node.get("alt") or ""))
            return
        if "formulaDsp" in classes or (tag == "div" and "math" in classes):
            images = [img.get("alt") or "" for img in node.iter("img")]
            source = text_of(node) or (images[0] if images else "")
            ids = [node.get("id") or ""] + [a.get("id") or "" for a in node.iter("span") if a.get("id")]
            display(source, [i for i in ids if i])
            return
        if tag == "span" and "math" in classes:
            inline(*split_inline(text_of(node)))
            return
        if tag in _HEADINGS:
            walk.add(" ")
            walk.headings.append((walk.length, _HEADINGS[tag], tag, text_of(node)))
            walk.add(" ")
            return
        if tag == "a" and node.get("href") and "headerlink" not in classes:
            walk.hrefs.append(node.get("href") or "")
        if tag == "dt" and api_type is not None:
            walk.add(" ")
            walk.headings.append((walk.length, -api_depth, api_type, node.get("id") or text_of(node)[:200]))
            walk.add(" ")
            walk.hrefs.extend(a.get("href") or "" for a in node.iter("a") if "headerlink" not in _classes(a))
            return
        child_type = None
        if tag == "dl" and classes & _API_DOMAINS:  # Sphinx: <dl class="py method"><dt id=...>..</dt><dd>..</dd>
            child_type = next((c for c in (node.get("class") or "").split() if c not in _API_DOMAINS), "object")
        if tag in _BLOCK_TAGS:
            walk.add(" ")
        inside_code = tag in _LITERAL_TAGS
        text(node.text, inside_code)
        for child in node:
            visit(child, api_depth + 1 if child_type else api_depth, child_type, inside_code)
            text(child.tail, inside_code)
        if tag in _BLOCK_TAGS:
            walk.add(" ")

    visit(main, 0, None, False)
    return walk
