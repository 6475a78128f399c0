"""Math in HTML documentation pages: Sphinx (MathJax or imgmath), Doxygen (MathJax), and plain MathJax pages.

One page is one document. Display math is recognised in the forms the Debian documentation packages ship:
Sphinx's ``<div class="math">`` holding ``\\[...\\]`` or a raw ``\\begin{env}`` (``nowrap``), or an
``<img alt="...">`` (imgmath); Doxygen's ``class="formulaDsp"`` paragraphs (``\\[...\\]`` or ``\\begin{align*}``)
or images; MathJax's ``<script type="math/tex; mode=display">``; and ``$$...$$`` / ``\\[...\\]`` in running text.

Inline math is recorded per section (``Section.inline``, numbered in page order, as a LaTeX source's ``$...$``) and
stays in the contexts as ``$...$``. It is recognised as MathJax (or the page's own rendering) would show it: Sphinx's
``<span class="math">\\(...\\)</span>`` (markup nested in the span is read as its text) and imgmath's
``<img class="math" alt="...">`` outside a display; Doxygen's ``<img class="formulaInl" alt="$...$">``; MathJax's
``<script type="math/tex">``; ``\\(...\\)`` in running text; and ``$...$`` in running text only where the page's
MathJax configuration lists ``['$','$']`` in ``inlineMath`` (SageMath's ``mathjax_sage.js``, nbsphinx pages; ``\\$``
is then a dollar). Code (``<pre>``, ``<code>``, ``<tt>``, ``<kbd>``, ``<samp>``, highlighted blocks) holds no math, as
MathJax skips it. Math in headings stays in the section titles and is not recorded.

Sections come from the headings of the page's main content (the first ``<h1>`` is the title) and from Sphinx's
API descriptions (``<dl class="py function">``: a function, class or method is a section, as in docstrings).
Citations: the page's own bibliography entries (Sphinx ``citation`` elements) and the entries of another page of
the same documentation that it links to (SageMath's shared bibliography) give arXiv ids (``citations``) and, for a
shared bibliography, the entry keys (``references``); links from the text to other pages of the same
documentation are kept as ``links``. Nothing is fetched: pages are parsed by lxml with network access off, and
other pages are read only through the ``read_page`` callback, which stays inside the documentation's folder.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from eqsearch.engine.index.documents import inline_indexable
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.ingest.citations import find_arxiv_ids
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.errors import DocumentTooLargeError, IngestError
from eqsearch.ingest.macros import DocumentMacros, take_definitions
from eqsearch.ingest.plaintext import first_words, last_words
from eqsearch.ingest.records import STATUS_FAILED, Equation, InlineFormula, Paper, Section
from lxml import etree

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
#: The version of what extraction takes from a page, raised when it finds more or other formulas (2: the inline
#: formulas, and imgmath's inline images no longer taken for displays): an ingest job extracts again the pages it
#: checkpointed with an older one (`eqsearch.ingest.jobs.store.extractor_version`).
EXTRACTOR_VERSION = 2
# Cheap test (on bytes) for "this page may hold display math", used by discovery to skip the rest unparsed.
DISPLAY_MARKERS = re.compile(rb'<(?:div|img)[^>]*class="math|class="formulaDsp"|math/tex;\s*mode=display|\$\$|\\\[')

_SNIPPET = 1000
_MAX_LINKS = 500
_DISPLAY_ENVS = "equation|align|gather|multline|flalign|alignat|eqnarray|displaymath"
_WHOLE_ENV = re.compile(r"^\\begin\s*\{(" + _DISPLAY_ENVS + r")(\*?)\}(.*)\\end\s*\{\1\2\}[\s.,;]*$", re.DOTALL)
_BRACKETED = re.compile(r"^\\\[(.*)\\\][\s.,;]*$", re.DOTALL)
_DOLLARS = re.compile(r"^\$\$(.*)\$\$[\s.,;]*$", re.DOTALL)
_INLINE_PAREN = re.compile(r"\\\((.+?)\\\)", re.DOTALL)
# Math in running text: displays ($$, \[), inline \( ; with dollars on, an escaped \$ first, then inline $...$.
_TEXT_MATH = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)", re.DOTALL)
_TEXT_MATH_DOLLARS = re.compile(r"\\\$|\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|\$((?:[^$\\]|\\.)+?)\$", re.DOTALL)
_WRAPPED_INLINE = re.compile(r"^\s*(?:\$((?:[^$\\]|\\.)+)\$|\\\((.+)\\\))\s*$", re.DOTALL)
# A MathJax configuration (2 or 3) that lists ['$','$'] among its inline delimiters.
_DOLLAR_INLINE = re.compile(r"""inlineMath["']?\s*:\s*\[[^;{}]*?\[\s*(["'])\$\1\s*,\s*(["'])\$\2\s*\]""")
_LITERAL_TAGS = frozenset({"code", "tt", "kbd", "samp", "textarea"})
_DEFINES = re.compile(r"\\(?:(?:re)?newcommand|providecommand|[gex]?def|DeclareMathOperator)(?![A-Za-z@])")
_SPACES = re.compile(r"\s+")
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
_MACROS_BLOCK = re.compile(r"\b[Mm]acros\s*:\s*\{")
_JS_STRING = r"""(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
_MACRO_ENTRY = re.compile(
    r"""\s*,?\s*["']?([A-Za-z]+)["']?\s*:\s*(?:(""" + _JS_STRING + r""")|\[\s*(""" + _JS_STRING
    + r""")\s*,\s*(\d)\s*(?:,\s*(""" + _JS_STRING + r""")\s*)?\])"""
)  # fmt: skip
_MAX_SCRIPT_BYTES = 1024 * 1024
_NAVIGATION_PAGES = re.compile(r"(?:^|/)(?:genindex[^/]*|search|py-modindex|modindex)\.html?$")


@dataclass
class _Walk:
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


def _text_of(element: etree._Element) -> str:
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
    return _SPACES.sub(" ", "".join(parts)).strip()


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


def _main_content(root: etree._Element) -> etree._Element:
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


def _page_title(root: etree._Element) -> str | None:
    found = root.xpath("//title")
    return (_text_of(found[0]) or None) if found else None


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


def _walk(main: etree._Element, *, dollars: bool = False) -> _Walk:
    walk = _Walk()
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
            walk.add(_text_of(node))
            return
        if tag == "img" and "formulaDsp" in classes:
            display(node.get("alt") or "", [])
            return
        if tag == "img" and classes & {"math", "formulaInl"}:  # imgmath's inline images, Doxygen's inline formulas
            inline(*split_inline(node.get("alt") or ""))
            return
        if "formulaDsp" in classes or (tag == "div" and "math" in classes):
            images = [img.get("alt") or "" for img in node.iter("img")]
            source = _text_of(node) or (images[0] if images else "")
            ids = [node.get("id") or ""] + [a.get("id") or "" for a in node.iter("span") if a.get("id")]
            display(source, [i for i in ids if i])
            return
        if tag == "span" and "math" in classes:
            inline(*split_inline(_text_of(node)))
            return
        if tag in _HEADINGS:
            walk.add(" ")
            walk.headings.append((walk.length, _HEADINGS[tag], tag, _text_of(node)))
            walk.add(" ")
            return
        if tag == "a" and node.get("href") and "headerlink" not in classes:
            walk.hrefs.append(node.get("href") or "")
        if tag == "dt" and api_type is not None:
            walk.add(" ")
            walk.headings.append((walk.length, -api_depth, api_type, node.get("id") or _text_of(node)[:200]))
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


def citation_entries(root: etree._Element) -> dict[str, str]:
    """Bibliography entries of a page by anchor id: Sphinx ``citation`` elements (docutils old and new markup).

    The value is the entry's text followed by the targets of its links (arXiv ids often sit only in a URL).
    """
    entries: dict[str, str] = {}
    for element in root.xpath("//*[contains(concat(' ', normalize-space(@class), ' '), ' citation ')]"):
        if element.tag == "dl":  # docutils < 0.18: <dl class="citation"><dt class="label" id=..>..<dd>..</dd>
            for dt in element.iterchildren("dt"):
                dd = dt.getnext()
                if dt.get("id") and dd is not None and dd.tag == "dd":
                    entries[dt.get("id") or ""] = _entry_text(dd)
        elif element.get("id"):
            entries[element.get("id") or ""] = _entry_text(element)
    return entries


def _entry_text(element: etree._Element) -> str:
    hrefs = [a.get("href") or "" for a in element.iter("a")]
    return " ".join([_text_of(element), *hrefs])


def _inline_definitions(root: etree._Element) -> list[str]:
    """Inline formulas anywhere in the page (Doxygen puts them before the contents) that define macros."""
    found: list[str] = []
    for chunk in root.xpath("//text()[contains(., 'command') or contains(., 'def') or contains(., 'Operator')]"):
        parent = chunk.getparent()
        tag = parent.tag if parent is not None and isinstance(parent.tag, str) else ""
        if chunk.is_tail and parent is not None:
            parent = parent.getparent()
            tag = parent.tag if parent is not None and isinstance(parent.tag, str) else ""
        if tag in ("pre", "code", "style", "textarea") or (
            tag == "script" and "math/tex" not in (parent.get("type") or "")
        ):
            continue
        if tag == "script":
            found.append(str(chunk))
        else:
            found.extend(m.group(1) for m in _INLINE_PAREN.finditer(chunk) if _DEFINES.search(m.group(1)))
    return found


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


def _page_config(
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


def parse_html(data: bytes, origin: str) -> etree._Element:
    """Parse one page with lxml's HTML parser, inert: no network, no DTD, comments and PIs dropped.

    Raises:
        IngestError: the page is empty or not HTML at all (reason ``empty_source``).
    """
    parser = etree.HTMLParser(no_network=True, remove_comments=True, remove_pis=True, huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except (etree.XMLSyntaxError, etree.ParserError, ValueError) as error:
        raise IngestError(f"{origin}: not an HTML page ({error})", reason="empty_source") from None
    if root is None:
        raise IngestError(f"{origin}: the page is empty", reason="empty_source")
    return root


def page_document_id(label: str, rel: str) -> str:
    """The paper id of the page at ``rel`` (root-relative POSIX path) in the documentation named ``label``."""
    stem = rel.rsplit(".", 1)[0] if rel.lower().endswith(HTML_SUFFIXES) else rel
    return f"{label}/{stem}"


def extract_html_paper(
    data: bytes,
    *,
    paper_id: str,
    origin: str,
    config: ExtractConfig,
    page: str = "",
    label: str = "",
    read_page: Callable[[str], etree._Element | None] | None = None,
    read_file: Callable[[str], bytes | None] | None = None,
) -> Paper:
    """Extract the display and inline math, sections, context and citations of one HTML page.

    Args:
        data: the page's bytes (its encoding is read from the page, UTF-8 by default).
        paper_id: the id the paper gets.
        origin: where the page came from, for the record.
        config: limits (page size, context size, equation length).
        page: the page's path relative to its documentation root (POSIX), to resolve relative links.
        label: the documentation's name, prefix of the ids of linked pages (`page_document_id`).
        read_page: root-relative path -> the parsed page, or None when it does not exist or lies outside the
            root; used to look up entries of a bibliography on another page. Without it such entries are not
            resolved.
        read_file: root-relative path -> bytes, or None (missing, outside the root); reads the MathJax
            configuration scripts the page loads, for their macros (``paper.macros``).

    Raises:
        DocumentTooLargeError: the page is larger than ``config.max_file_bytes``.
        IngestError: the page is empty or not HTML (reason ``empty_source``).
    """
    if len(data) > config.max_file_bytes:
        raise DocumentTooLargeError(f"{origin}: {len(data):,} bytes, over the limit {config.max_file_bytes:,}")
    root = parse_html(data, origin)
    page_macros, dollars = _page_config(root, page, read_file)
    main = _main_content(root)
    walk = _walk(main, dollars=dollars)
    text = "".join(walk.text)

    paper = Paper(id=paper_id, source=origin, kind="html", main_file=page or None)
    headings = list(walk.headings)
    doxygen_title = root.xpath("//div[@class='header']//div[@class='title']")
    if doxygen_title:  # Doxygen puts the title above the contents, whose <h1>s are sections
        paper.title = _text_of(doxygen_title[0])
    elif headings and headings[0][1] == 1:
        paper.title = headings.pop(0)[3]  # Sphinx: the first <h1> is the title; what follows it is front matter
    else:
        paper.title = _page_title(root)
    paper.sections = [Section(index=0, level=0, kind="front", title=paper.title or "", offset=0)]
    top = min((level for _, level, _, _ in headings if level > 0), default=2)
    current_heading_level = 1
    for offset, level, kind, title in headings:
        if level > 0:
            mapped = min(2 + level - top, 5)
            current_heading_level = mapped
            kind = "section" if mapped == 2 else "sub" * (mapped - 2) + "section" if mapped <= 4 else "paragraph"
        else:
            mapped = min(current_heading_level - level, 6)  # API objects nest under the heading they follow
        parent = next((s.index for s in reversed(paper.sections[1:]) if s.level < mapped), None)
        paper.sections.append(
            Section(index=len(paper.sections), level=mapped, kind=kind, title=title, parent=parent, offset=offset)
        )

    math_macros = DocumentMacros()  # the definitions made inside the page's math
    for math in _inline_definitions(root):
        take_definitions(math, math_macros)
    starts = [s.offset for s in paper.sections]
    number = 0
    for start, end, body, environment, ids in walk.displays:
        if _DEFINES.search(body):
            body = take_definitions(body, math_macros).strip()
        if not body.strip():
            continue
        index = max(bisect.bisect_right(starts, start) - 1, 0)
        section = paper.sections[index]
        bounds = (starts[index], starts[index + 1] if index + 1 < len(starts) else len(text))
        equation = Equation(
            number=number,
            latex=body,
            environment=environment,
            section=section.index,
            offset=start,
            length=len(body),
            labels=[i.removeprefix("equation-") for i in ids if i.startswith("equation-")],
            context_before=last_words(_SPACES.sub(" ", text[bounds[0] : start]).strip(), config.context_chars),
            context_after=first_words(_SPACES.sub(" ", text[end : bounds[1]]).strip(), config.context_chars),
        )
        if len(body) > config.max_equation_chars:
            equation.latex = body[:_SNIPPET]
            equation.status, equation.reason = STATUS_FAILED, "equation_too_long"
            equation.message = f"{len(body):,} characters (limit {config.max_equation_chars:,})"
        section.equations.append(equation)
        number += 1
    _inline_formulas(paper, walk, text, starts, config)

    macros = {m.name: m for m in page_macros}
    macros.update((m.name, m) for m in math_macros.definitions())  # the page's own definitions come last
    paper.macros = list(macros.values())
    paper.warnings.extend(math_macros.issues)
    _citations(paper, root, walk.hrefs, page, label, read_page)
    return paper


def _inline_formulas(paper: Paper, walk: _Walk, text: str, starts: list[int], config: ExtractConfig) -> None:
    """Record the page's inline formulas in their sections, numbered in page order; those that get indexed
    (`inline_indexable`) with their context (the other inline formulas as ``$...$``, the displays as ``[math]``)."""
    window = 4 * config.context_chars
    number = 0
    for start, end, body, delimiter in walk.inline:
        if _DEFINES.search(body):  # the definitions are the page's macros already (`_inline_definitions`)
            body = take_definitions(body, DocumentMacros()).strip()
        if not body:
            continue
        index = max(bisect.bisect_right(starts, start) - 1, 0)
        formula = InlineFormula(number=number, latex=body, offset=start, length=end - start, delimiter=delimiter)
        if config.context_chars and inline_indexable(body):
            lo = max(starts[index], start - window)
            hi = min(starts[index + 1] if index + 1 < len(starts) else len(text), end + window)
            formula.context_before = last_words(_SPACES.sub(" ", text[lo:start]).strip(), config.context_chars)
            formula.context_after = first_words(_SPACES.sub(" ", text[end:hi]).strip(), config.context_chars)
        paper.sections[index].inline.append(formula)
        number += 1


def _citations(
    paper: Paper,
    root: etree._Element,
    hrefs: list[str],
    page: str,
    label: str,
    read_page: Callable[[str], etree._Element | None] | None,
) -> None:
    own = citation_entries(root)
    cited_texts = list(own.values())
    references: list[str] = []
    links: list[str] = []
    external: list[str] = []
    bibliographies: dict[str, dict[str, str]] = {}
    for href in hrefs:
        try:
            parts = urlsplit(href)
        except ValueError:
            continue
        if parts.scheme or parts.netloc:
            if parts.scheme in ("http", "https"):
                external.append(href)
            continue
        target_path = unquote(parts.path)
        if not target_path:
            continue  # same page: its own entries are already counted
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), target_path))
        if target.startswith("../") or target == ".." or target.startswith("/") or target == page:
            continue
        if not target.lower().endswith(HTML_SUFFIXES) or _NAVIGATION_PAGES.search(target):
            continue
        if any(part.startswith("_") for part in target.split("/")):
            continue  # Sphinx's _sources, _modules (highlighted code), _static
        fragment = unquote(parts.fragment)
        if fragment and read_page is not None:
            if target not in bibliographies:
                other = read_page(target)
                bibliographies[target] = citation_entries(other) if other is not None else {}
            entry = bibliographies[target].get(fragment)
            if entry is not None:
                key = f"{page_document_id(label, target)}#{fragment}"
                if key not in references:
                    references.append(key)
                    cited_texts.append(entry)
                continue
        link = page_document_id(label, target)
        if link != paper.id and link not in links and len(links) < _MAX_LINKS:
            links.append(link)
    paper.citations = find_arxiv_ids("\n".join([*cited_texts, *external]))
    paper.bibliography_entries = len(own) + len(references)
    paper.references = references
    paper.links = links
