"""One LaTeX document -> a Paper: main file, inputs, macros, sections, display equations with context, citations."""

from __future__ import annotations

import bisect
import posixpath
import re
import time

from eqsearch.engine.latex.scan import document_body, read_argument, read_optional, strip_comments
from eqsearch.ingest.citations import (
    bib_files,
    citations_from_bib,
    citations_from_entries,
    cited_keys,
    split_bibitems,
)
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.errors import TimeBudgetError
from eqsearch.ingest.files import MemoryFiles, SourceFiles, decode_text
from eqsearch.ingest.includes import expand_document, find_main_file
from eqsearch.ingest.macros import DocumentMacros, expand_shortcuts, extract_macros
from eqsearch.ingest.mathenv import DisplayMath, find_displays, labels_in
from eqsearch.ingest.plaintext import first_words, last_words, latex_to_text
from eqsearch.ingest.records import STATUS_FAILED, Equation, Paper, Section

SECTION_LEVELS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4}
_HEADING = re.compile(r"\\(part|chapter|section|subsection|subsubsection)(\*?)(?![A-Za-z@])")
_USEPACKAGE = re.compile(r"\\(?:usepackage|RequirePackage)\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}")
_ABSTRACT_ENV = re.compile(r"\\begin\s*\{abstract\}(.*?)\\end\s*\{abstract\}", re.DOTALL)
_SNIPPET = 1000  # characters of a failed body kept for diagnosis


def extract_latex_paper(
    files: SourceFiles,
    *,
    paper_id: str,
    source: str,
    kind: str,
    config: ExtractConfig,
    deadline: float | None = None,
    main_file: str | None = None,
    version: int | None = None,
) -> Paper:
    """Extract one LaTeX document.

    Args:
        files: the document's files.
        paper_id: the id the paper gets (arXiv id, or a path-derived id for other sources).
        source: where it came from, for the record.
        kind: ``arxiv`` or ``latex``.
        config: limits.
        deadline: ``time.monotonic()`` value after which extraction stops with TimeBudgetError.
        main_file: the main file when already known (else found with `find_main_file`).
        version: the arXiv source version when known.

    Returns:
        The paper; problems that did not stop extraction are in ``paper.warnings``.

    Raises:
        IngestError: the document cannot be extracted at all (no main file, too large, over time).
    """
    paper = Paper(id=paper_id, source=source, kind=kind, version=version)
    stem = paper_id.rsplit("/", 1)[-1]
    main = main_file or find_main_file(files, preferred_stem=stem)
    paper.main_file = main
    doc = expand_document(
        files, main, max_depth=config.max_include_depth, max_chars=config.max_document_chars, deadline=deadline
    )
    paper.warnings.extend(doc.issues)
    preamble, body, body_offset = document_body(doc.text)

    macros = DocumentMacros()
    for package in _local_packages(files, preamble, posixpath.dirname(main)):
        extract_macros(package, macros)
    extract_macros(doc.text, macros)
    paper.macros = macros.definitions()
    paper.warnings.extend(macros.issues)
    body = expand_shortcuts(body, macros.shortcuts)

    paper.sections = _sections(body, body_offset)
    starts = [s.offset - body_offset for s in paper.sections]
    displays = find_displays(body, macros.environment_aliases)
    number = 0
    for i, display in enumerate(displays):
        if deadline is not None and i % 256 == 0 and time.monotonic() > deadline:
            raise TimeBudgetError(f"time budget exceeded after {i} of {len(displays)} equations")
        if not display.body.strip():
            continue
        index = bisect.bisect_right(starts, display.start) - 1
        section = paper.sections[max(index, 0)]
        equation = _equation(display, number, section.index, body_offset, config)
        bounds = (starts[index] if index >= 0 else 0, starts[index + 1] if index + 1 < len(starts) else len(body))
        equation.context_before, equation.context_after = _context(body, displays, i, bounds, config.context_chars)
        section.equations.append(equation)
        number += 1

    _front_matter(paper, doc.text, preamble)
    _citations(paper, files, doc.text, main)
    return paper


def _equation(display: DisplayMath, number: int, section: int, body_offset: int, config: ExtractConfig) -> Equation:
    body = display.body
    equation = Equation(
        number=number,
        latex=body,
        environment=display.environment,
        section=section,
        offset=body_offset + display.start,
        environment_args=list(display.args),
        labels=labels_in(body[: config.max_equation_chars]),
        length=len(body),
    )
    if not display.terminated:
        equation.latex = body[:_SNIPPET]
        equation.status, equation.reason = STATUS_FAILED, "unterminated_environment"
        equation.message = f"no closing delimiter for {display.environment} opened at offset {equation.offset}"
    elif len(body) > config.max_equation_chars:
        equation.latex = body[:_SNIPPET]
        equation.status, equation.reason = STATUS_FAILED, "equation_too_long"
        equation.message = f"{len(body):,} characters (limit {config.max_equation_chars:,}); the first {_SNIPPET} kept"
    return equation


def _context(body: str, displays: list[DisplayMath], i: int, bounds: tuple[int, int], chars: int) -> tuple[str, str]:
    if chars == 0:
        return "", ""
    display = displays[i]
    lo = max(bounds[0], display.start - 4 * chars)
    if i > 0 and displays[i - 1].start < lo < displays[i - 1].end:
        lo = displays[i - 1].start  # whole previous display, so it reads as [math]
    hi = min(bounds[1], display.end + 4 * chars)
    if i + 1 < len(displays) and displays[i + 1].start < hi < displays[i + 1].end:
        hi = displays[i + 1].end
    before = last_words(latex_to_text(body[lo : display.start]), chars)
    after = first_words(latex_to_text(body[display.end : hi]), chars)
    return before, after


def _sections(body: str, body_offset: int) -> list[Section]:
    sections = [Section(index=0, level=0, kind="front", title="", offset=body_offset)]
    for m in _HEADING.finditer(body):
        _, pos = read_optional(body, m.end())
        title = read_argument(body, pos)
        if title is None:
            continue
        level = SECTION_LEVELS[m.group(1)]
        parent = next((s.index for s in reversed(sections[1:]) if s.level < level), None)
        sections.append(
            Section(
                index=len(sections),
                level=level,
                kind=m.group(1) + m.group(2),
                title=latex_to_text(title[0]),
                parent=parent,
                offset=body_offset + m.start(),
            )
        )
    return sections


def _local_packages(files: SourceFiles, preamble: str, main_dir: str) -> list[str]:
    texts: list[str] = []
    for m in _USEPACKAGE.finditer(preamble):
        for name in m.group(1).split(","):
            data = files.read(posixpath.join(main_dir, name.strip() + ".sty")) if name.strip() else None
            if data is not None:
                text, _ = decode_text(data)
                if text is not None:
                    texts.append(strip_comments(text))
    return texts


def _command_argument(text: str, command: str) -> str | None:
    m = re.search(r"\\" + command + r"(?![A-Za-z@])\s*", text)
    if m is None:
        return None
    _, pos = read_optional(text, m.end())
    arg = read_argument(text, pos)
    return None if arg is None or not arg[0].strip() else arg[0]


def _front_matter(paper: Paper, text: str, preamble: str) -> None:
    title = _command_argument(text, "title")
    if title is not None:
        paper.title = latex_to_text(title.replace("\\\\", " ")).replace("\n", " ")
    abstract = _ABSTRACT_ENV.search(text)
    raw_abstract = abstract.group(1) if abstract else _command_argument(text, "abstract")
    if raw_abstract:
        paper.abstract = latex_to_text(raw_abstract)
    authors: list[str] = []
    for m in re.finditer(r"\\author(?![A-Za-z@])", text):
        _, pos = read_optional(text, m.end())
        arg = read_argument(text, pos)
        if arg is None:
            continue
        for name in re.split(r"\\and(?![A-Za-z])|\\AND(?![A-Za-z])", arg[0]):
            first_line = re.split(r"\\\\|\\thanks|\\footnote|\\inst\b|\\affil|\$", name)[0]
            cleaned = latex_to_text(first_line).strip(" ,;\n")
            if cleaned:
                authors.append(cleaned)
    paper.authors = authors


def _citations(paper: Paper, files: SourceFiles, text: str, main: str) -> None:
    entries = split_bibitems(text)
    if not entries:
        bbl = files.read(posixpath.splitext(main)[0] + ".bbl")
        if bbl is None and isinstance(files, MemoryFiles):
            bbls = [n for n in files.names() if n.endswith(".bbl")]
            bbl = files.read(bbls[0]) if len(bbls) == 1 else None
        if bbl is not None:
            entries = split_bibitems(decode_text(bbl)[0] or "")
    if entries:
        paper.citations = citations_from_entries(entries)
        paper.bibliography_entries = len(entries)
        return
    texts = []
    main_dir = posixpath.dirname(main)
    for name in bib_files(text):
        data = files.read(posixpath.join(main_dir, name))
        if data is None:
            paper.warn("bib_missing", f"{name} is named by the document but not in the source")
            continue
        texts.append(decode_text(data)[0] or "")
    if texts:
        paper.citations, paper.bibliography_entries = citations_from_bib(texts, cited_keys(text))
