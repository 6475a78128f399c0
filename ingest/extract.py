"""One LaTeX source -> a Paper: its top-level documents (main text, supplements compiled on their own), each with its
inputs, macros, sections, display equations with context, and inline formulas; front matter and citations."""

from __future__ import annotations

import bisect
import posixpath
import re
import time

from eqsearch.engine.index.documents import inline_indexable
from eqsearch.engine.latex.diagrams import diagram_kind, replace_diagrams
from eqsearch.engine.latex.scan import (
    document_body,
    read_argument,
    read_optional,
    verbatim_environments,
)
from eqsearch.ingest.citations import (
    bib_files,
    citations_from_bib,
    citations_from_entries,
    cited_keys,
    split_bibitems,
)
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.displaycheck import NO_DISPLAYS_FOUND, count_display_openers
from eqsearch.ingest.displaymacros import expand_display_macros
from eqsearch.ingest.errors import DocumentTooLargeError, TimeBudgetError
from eqsearch.ingest.files import MemoryFiles, SourceFiles, decode_text, is_tex_name
from eqsearch.ingest.frontmatter import read_front_matter, untitled
from eqsearch.ingest.includes import expand_document, find_documents, read_tex
from eqsearch.ingest.localmacros import class_commands, loaded_package_commands, local_packages
from eqsearch.ingest.macros import DocumentMacros, expand_environments, extract_macros
from eqsearch.ingest.macroversions import body_versions
from eqsearch.ingest.mathenv import DisplayMath, InlineMath, labels_in, scan_math
from eqsearch.ingest.plaintext import first_words, last_words, latex_to_text, title_text
from eqsearch.ingest.records import (
    STATUS_DIAGRAM,
    STATUS_FAILED,
    Equation,
    InlineFormula,
    Paper,
    PaperDocument,
    Section,
)

SECTION_LEVELS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4}
_HEADING = re.compile(r"\\(part|chapter|section|subsection|subsubsection)(\*?)(?![A-Za-z@])")
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
    """Extract one LaTeX source: every top-level document of it (`find_documents`), kept together as one paper.

    The main document gives the title, abstract and authors and starts with the front matter (section 0); each
    further document (a supplement, an appendix compiled on its own) starts with a section of kind ``document``.
    Equations and inline formulas are numbered through all documents in order; each document has its own macros.

    Args:
        files: the source's files.
        paper_id: the id the paper gets (arXiv id, or a path-derived id for other sources).
        source: where it came from, for the record.
        kind: ``arxiv`` or ``latex``.
        config: limits.
        deadline: ``time.monotonic()`` value after which extraction stops with TimeBudgetError.
        main_file: the one document to read when already known (a main file of a LaTeX tree); else all of the
            source's top-level documents are read.
        version: the arXiv source version when known.

    Returns:
        The paper; problems that did not stop extraction are in ``paper.warnings``.

    Raises:
        IngestError: the source cannot be extracted at all (no main file, too large, over time).
    """
    paper = Paper(id=paper_id, source=source, kind=kind, version=version)
    stem = paper_id.rsplit("/", 1)[-1]
    names = [main_file] if main_file else find_documents(files, preferred_stem=stem)
    paper.main_file = names[0]
    budget = config.max_document_chars
    texts: list[str] = []
    for index, name in enumerate(names):
        try:
            texts.append(_extract_document(paper, files, name, len(paper.documents), config, deadline, budget))
            budget -= len(texts[-1])
        except DocumentTooLargeError as error:
            if index == 0:
                raise
            # a further document over what is left of the size limit: the paper keeps what it has
            paper.warn("document_too_large", f"{name} was not read: {error.message}")
    if not paper.equations():
        _check_no_displays(paper, files, texts if main_file else None)
    if not paper.title:  # never empty: a placeholder that says so, from the source's and main file's names
        paper.title = untitled(paper.main_file, source)
    return paper


def _check_no_displays(paper: Paper, files: SourceFiles, texts: list[str] | None) -> None:
    """Warn (`NO_DISPLAYS_FOUND`, with the count) when a paper with no display comes from a source that holds some:
    every LaTeX file of the source counted together, or only ``texts`` (the documents read) when the source is one
    main file of a larger tree."""
    where = "the documents read"
    if texts is None:
        names = [n for n in files.names() if is_tex_name(n)]
        verbatim = verbatim_environments("")
        texts = [t for t in (read_tex(files, n, verbatim, []) for n in names) if t is not None]
        where = f"its {len(texts)} LaTeX file{'s' if len(texts) != 1 else ''}"
    count = count_display_openers("\n".join(texts))
    if count:
        paper.warn(
            NO_DISPLAYS_FOUND,
            f"no display equation was extracted, but {where} open {count} display{'s' if count != 1 else ''} "
            f"(environments, \\[, $$ or display shortcuts); main file taken: {paper.main_file}",
            count=count,
        )


def _extract_document(
    paper: Paper,
    files: SourceFiles,
    name: str,
    index: int,
    config: ExtractConfig,
    deadline: float | None,
    budget: int,
) -> str:
    """Add one top-level document's sections, equations and inline formulas to ``paper``; its expanded text."""
    doc = expand_document(files, name, max_depth=config.max_include_depth, max_chars=max(1, budget), deadline=deadline)
    paper.warnings.extend(doc.issues)
    preamble, body, body_offset = document_body(doc.text)

    macros = DocumentMacros()
    for command in [*loaded_package_commands(preamble), *class_commands(files, preamble, posixpath.dirname(name))]:
        macros.macros[command.name] = command  # first: a package's or the document's definition wins
    for package in local_packages(files, preamble, posixpath.dirname(name)):
        extract_macros(package, macros)
    extract_macros(doc.text, macros)
    paper.warnings.extend(macros.issues)
    body = _masked(body, macros.spans, body_offset)
    body = expand_display_macros(body, macros.display, max_chars=max(1, budget))

    front = read_front_matter(doc.text, macros.definitions())
    document = PaperDocument(index=index, file=name, title=front.title)
    versions = body_versions(macros.definitions(), macros.history, body_offset)  # notation renewed chapter by chapter
    definitions = macros.definitions() if versions is None else versions.macros
    if index == 0:
        paper.macros = definitions
    else:
        document.macros = definitions
    paper.documents.append(document)

    first = len(paper.sections)
    if index == 0:
        head = Section(index=0, level=0, kind="front", title="", offset=body_offset, document=0)
    else:
        head = Section(first, 0, "document", document.title or name, offset=body_offset, document=index)
    sections = [head, *_sections(body, body_offset, first + 1, index)]
    paper.sections.extend(sections)
    starts = [section.offset - body_offset for section in sections]

    displays, inline = scan_math(body, macros.environment_aliases)
    number = len(paper.equations())
    kept: list[DisplayMath] = []
    for i, display in enumerate(displays):
        if deadline is not None and i % 256 == 0 and time.monotonic() > deadline:
            raise TimeBudgetError(f"time budget exceeded after {i} of {len(displays)} equations")
        if not display.body.strip():
            continue
        kept.append(display)
    for i, display in enumerate(kept):
        local = bisect.bisect_right(starts, display.start) - 1
        section = sections[max(local, 0)]
        equation = _equation(display, number, section.index, body_offset, config)
        if macros.environments and equation.status != STATUS_FAILED:
            equation.latex = expand_environments(equation.latex, macros.environments)
        bounds = (starts[local] if local >= 0 else 0, starts[local + 1] if local + 1 < len(starts) else len(body))
        equation.context_before, equation.context_after = _context(body, kept, i, bounds, config.context_chars)
        section.equations.append(equation)
        number += 1
    _inline_formulas(body, kept, inline, sections, starts, body_offset, len(paper.inline_formulas()), config)
    if versions is not None:
        for section in sections:
            for formula in [*section.equations, *section.inline]:
                formula.latex = versions.rename(formula.latex, formula.offset)

    if index == 0:
        paper.title, paper.abstract, paper.authors = front.title, front.abstract, front.authors
    _citations(paper, files, doc.text, name, main=index == 0)
    return doc.text


def _masked(body: str, spans: list[tuple[int, int]], body_offset: int) -> str:
    """The body with the macro definitions made in it blanked out (same length, so offsets hold)."""
    inside = [(max(0, a - body_offset), min(len(body), b - body_offset)) for a, b in spans if b > body_offset]
    inside = [(a, b) for a, b in inside if a < b]
    if not inside:
        return body
    parts: list[str] = []
    pos = 0
    for a, b in inside:
        if a < pos:
            continue
        parts.append(body[pos:a])
        parts.append(re.sub(r"[^\n]", " ", body[a:b]))
        pos = b
    parts.append(body[pos:])
    return "".join(parts)


def _inline_formulas(
    body: str,
    displays: list[DisplayMath],
    inline: list[InlineMath],
    sections: list[Section],
    starts: list[int],
    body_offset: int,
    number: int,
    config: ExtractConfig,
) -> None:
    """Record the inline formulas in their sections; those that get indexed (`inline_indexable`) with their context,
    the others without (nothing reads it: they are no document)."""
    indexed: dict[int, list[tuple[InlineFormula, InlineMath]]] = {}
    for formula in inline:
        if not formula.body.strip():
            continue
        local = bisect.bisect_right(starts, formula.start) - 1
        record = InlineFormula(
            number=number,
            latex=formula.body,
            offset=body_offset + formula.start,
            length=formula.end - formula.start,
            delimiter=formula.delimiter,
        )
        sections[max(local, 0)].inline.append(record)
        if config.context_chars and inline_indexable(formula.body):
            indexed.setdefault(local, []).append((record, formula))
        number += 1
    display_starts = [display.start for display in displays]
    for local, formulas in indexed.items():
        bounds = (starts[local] if local >= 0 else 0, starts[local + 1] if local + 1 < len(starts) else len(body))
        _inline_contexts(body, displays, display_starts, formulas, bounds, config.context_chars)


def _inline_contexts(
    body: str,
    displays: list[DisplayMath],
    display_starts: list[int],
    formulas: list[tuple[InlineFormula, InlineMath]],
    bounds: tuple[int, int],
    chars: int,
) -> None:
    """Set the context of a section's indexed inline formulas: the plain text on each side within the section, the
    window a display gets (the other inline formulas stay LaTeX, the displays become ``[math]``).

    A window per formula, as displays have, read a paper's text about thirty times over (a formula every hundred
    characters, a window of 3,200) and made extraction six times slower. Instead the text between consecutive
    formulas is reduced once (a long gap only at its two ends) and each context is put together from those pieces.
    """
    window = 4 * chars
    edges = [bounds[0], *(b for _, f in formulas for b in (f.start, f.end)), bounds[1]]
    gaps: list[tuple[str, str, bool]] = []  # (head, tail, whole) of the text between formula k-1 and formula k
    for lo, hi in zip(edges[::2], edges[1::2], strict=True):
        if hi - lo <= 2 * window:
            text = latex_to_text(_displays_masked(body, displays, display_starts, lo, hi))
            gaps.append((text, text, True))
        else:
            head = latex_to_text(_displays_masked(body, displays, display_starts, lo, lo + window))
            tail = latex_to_text(_displays_masked(body, displays, display_starts, hi - window, hi))
            gaps.append((head, tail, False))
    shown = [latex_to_text(body[f.start : f.end]) for _, f in formulas]
    for k, (record, _) in enumerate(formulas):
        before = [gaps[k][1]]
        j = k
        while j > 0 and gaps[j][2] and sum(map(len, before)) < chars:
            j -= 1
            before[:0] = [gaps[j][1], shown[j]]
        after = [gaps[k + 1][0]]
        j = k + 1
        while j < len(formulas) and gaps[j][2] and sum(map(len, after)) < chars:
            after += [shown[j], gaps[j + 1][0]]
            j += 1
        record.context_before = last_words(_joined(before), chars)
        record.context_after = first_words(_joined(after), chars)


def _joined(pieces: list[str]) -> str:
    """Pieces of plain text as one: a space between two, none before punctuation."""
    out = ""
    for piece in pieces:
        if not piece:
            continue
        out += piece if not out or piece[0] in ".,;:!?)" else " " + piece
    return out


def _displays_masked(body: str, displays: list[DisplayMath], display_starts: list[int], lo: int, hi: int) -> str:
    """``body[lo:hi]`` with the displays in it (or cut by its ends) replaced by ``[math]``."""
    parts: list[str] = []
    pos = lo
    j = max(bisect.bisect_left(display_starts, lo) - 1, 0)
    while j < len(displays) and displays[j].start < hi:
        display = displays[j]
        j += 1
        if display.end <= pos:
            continue
        parts.append(body[pos : max(display.start, pos)])
        parts.append(" [math] ")
        pos = min(display.end, hi)
    parts.append(body[pos:hi])
    return "".join(parts)


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
        picture = diagram_kind(body) or next((p.kind for p in replace_diagrams(body)[1] if not p.symbol), None)
        if picture is not None:  # a long TikZ drawing (a ZX-calculus diagram), with math around it or not
            equation.status, equation.reason = STATUS_DIAGRAM, "diagram"
            equation.message = (
                f"a {picture} diagram of {len(body):,} characters, kept as LaTeX (its first {_SNIPPET} characters): "
                "KaTeX does not draw diagrams"
            )
        else:
            equation.status, equation.reason = STATUS_FAILED, "equation_too_long"
            equation.message = (
                f"{len(body):,} characters (limit {config.max_equation_chars:,}); the first {_SNIPPET} kept"
            )
    return equation


def _context(body: str, displays: list[DisplayMath], i: int, bounds: tuple[int, int], chars: int) -> tuple[str, str]:
    if chars == 0:
        return "", ""
    display = displays[i]
    lo = max(bounds[0], display.start - 4 * chars)
    hi = min(bounds[1], display.end + 4 * chars)
    before = last_words(latex_to_text(_with_placeholders(body, displays, lo, display.start, i, -1)), chars)
    after = first_words(latex_to_text(_with_placeholders(body, displays, display.end, hi, i, 1)), chars)
    return before, after


def _with_placeholders(body: str, displays: list[DisplayMath], lo: int, hi: int, i: int, step: int) -> str:
    """``body[lo:hi]`` with the other displays in it (or cut by its ends) replaced by ``[math]``."""
    parts: list[str] = []
    pos = lo
    j = i + step
    neighbours = []
    while 0 <= j < len(displays) and (displays[j].end > lo if step < 0 else displays[j].start < hi):
        neighbours.append(displays[j])
        j += step
    for other in sorted(neighbours, key=lambda d: d.start):
        start, end = max(other.start, lo), min(other.end, hi)
        if start < pos:
            continue
        parts.append(body[pos:start])
        parts.append(" [math] ")
        pos = end
    parts.append(body[pos:hi])
    return "".join(parts)


def _sections(body: str, body_offset: int, first: int, document: int) -> list[Section]:
    """The headings of one document's body, as sections numbered from ``first``; parents within the document."""
    sections: list[Section] = []
    for m in _HEADING.finditer(body):
        _, pos = read_optional(body, m.end())
        title = read_argument(body, pos)
        if title is None:
            continue
        level = SECTION_LEVELS[m.group(1)]
        parent = next((s.index for s in reversed(sections) if s.level < level), None)
        sections.append(
            Section(
                index=first + len(sections),
                level=level,
                kind=m.group(1) + m.group(2),
                title=title_text(title[0]),
                parent=parent,
                offset=body_offset + m.start(),
                document=document,
            )
        )
    return sections


def _citations(paper: Paper, files: SourceFiles, text: str, name: str, *, main: bool) -> None:
    """Add one document's cited arXiv ids (deduplicated, in order) and bibliography size to the paper's."""
    citations, count = _document_citations(paper, files, text, name, main)
    paper.citations = list(dict.fromkeys([*paper.citations, *citations]))
    paper.bibliography_entries += count


def _document_citations(paper: Paper, files: SourceFiles, text: str, name: str, main: bool) -> tuple[list[str], int]:
    entries = split_bibitems(text)
    if not entries:
        bbl = files.read(posixpath.splitext(name)[0] + ".bbl")
        if bbl is None and main and isinstance(files, MemoryFiles):
            bbls = [n for n in files.names() if n.endswith(".bbl")]
            bbl = files.read(bbls[0]) if len(bbls) == 1 else None
        if bbl is not None:
            entries = split_bibitems(decode_text(bbl)[0] or "")
    if entries:
        return citations_from_entries(entries), len(entries)
    texts = []
    folder = posixpath.dirname(name)
    for bib in bib_files(text):
        data = files.read(posixpath.join(folder, bib))
        if data is None:
            paper.warn("bib_missing", f"{bib} is named by {name} but not in the source")
            continue
        texts.append(decode_text(data)[0] or "")
    if texts:
        return citations_from_bib(texts, cited_keys(text))
    return [], 0
