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

The walk over a page's markup that finds its math, headings and links is `eqsearch.ingest.htmlwalk`; the page's
MathJax configuration (its macros, ``$`` as an inline delimiter) is read by `eqsearch.ingest.mathjax`.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from eqsearch.engine.index.documents import inline_indexable
from eqsearch.ingest.citations import find_arxiv_ids
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.errors import DocumentTooLargeError, IngestError
from eqsearch.ingest.htmlwalk import WHITESPACE, PageWalk, main_content, text_of, walk_page
from eqsearch.ingest.macros import DocumentMacros, take_definitions
from eqsearch.ingest.mathjax import page_config
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
_INLINE_PAREN = re.compile(r"\\\((.+?)\\\)", re.DOTALL)
_DEFINES = re.compile(r"\\(?:(?:re)?newcommand|providecommand|[gex]?def|DeclareMathOperator)(?![A-Za-z@])")
_NAVIGATION_PAGES = re.compile(r"(?:^|/)(?:genindex[^/]*|search|py-modindex|modindex)\.html?$")


def _page_title(root: etree._Element) -> str | None:
    found = root.xpath("//title")
    return (text_of(found[0]) or None) if found else None


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
    return " ".join([text_of(element), *hrefs])


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
    page_macros, dollars = page_config(root, page, read_file)
    main = main_content(root)
    walk = walk_page(main, dollars=dollars)
    text = "".join(walk.text)

    paper = Paper(id=paper_id, source=origin, kind="html", main_file=page or None)
    headings = list(walk.headings)
    doxygen_title = root.xpath("//div[@class='header']//div[@class='title']")
    if doxygen_title:  # Doxygen puts the title above the contents, whose <h1>s are sections
        paper.title = text_of(doxygen_title[0])
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
            context_before=last_words(WHITESPACE.sub(" ", text[bounds[0] : start]).strip(), config.context_chars),
            context_after=first_words(WHITESPACE.sub(" ", text[end : bounds[1]]).strip(), config.context_chars),
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


def _inline_formulas(paper: Paper, walk: PageWalk, text: str, starts: list[int], config: ExtractConfig) -> None:
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
            formula.context_before = last_words(WHITESPACE.sub(" ", text[lo:start]).strip(), config.context_chars)
            formula.context_after = first_words(WHITESPACE.sub(" ", text[end:hi]).strip(), config.context_chars)
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
