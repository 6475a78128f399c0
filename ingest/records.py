"""The records extraction produces: papers -> documents, sections -> equations and inline formulas, their JSON form
(ingest/FORMAT.md), and the reader of papers JSONL files that training and the evaluations share."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index import documents
from eqsearch.engine.latex.macros import MacroDef

FORMAT_VERSION = 1

# Equation status values (FORMAT.md): extracted = not converted (yet); ok / approximate / failed after conversion.
STATUS_EXTRACTED = "extracted"
STATUS_OK = "ok"
STATUS_APPROXIMATE = "approximate"
STATUS_FAILED = "failed"
STATUS_DIAGRAM = "diagram"  # a commutative diagram or picture (tikz-cd, xymatrix): kept with its LaTeX, no MathML


@dataclass
class Issue:
    """A recorded problem: a stable reason code and a sentence saying what and where."""

    reason: str
    message: str
    count: int | None = None  # how many things it is about, where that is the point (displays not extracted)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "message": self.message}
        if self.count is not None:
            out["count"] = self.count
        return out


@dataclass
class Equation:
    """One display equation (or one docstring math block).

    Args:
        number: position among the paper's equations, 0-based, in document order (deterministic).
        latex: the body between the delimiters, comments removed, inputs expanded (truncated when too long).
        environment: ``equation``, ``align*``, ``$$``, ``\\[``, ``math-directive``, ...
        section: index of the section it belongs to.
        offset: character offset of the opening delimiter in the paper's expanded text.
        display: False only for inline math taken from docstrings (``:math:`` roles).
        environment_args: mandatory arguments of the environment (``alignat{2}`` -> ``["2"]``).
        labels: the ``\\label`` keys inside the body.
        context_before: plain text before the equation.
        context_after: plain text after it.
        status: ``extracted``, ``ok``, ``approximate``, ``failed`` or ``diagram`` (a commutative diagram or picture:
            LaTeX kept, no MathML, not a failure).
        reason: the failure reason code when status is ``failed`` (or why it is approximate, or the diagram's).
        message: a human readable detail for ``reason``.
        mathml: Presentation MathML once converted, else None.
        length: length of the original body in characters.
    """

    number: int
    latex: str
    environment: str
    section: int
    offset: int
    display: bool = True
    environment_args: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    context_before: str = ""
    context_after: str = ""
    status: str = STATUS_EXTRACTED
    reason: str | None = None
    message: str | None = None
    mathml: str | None = None
    length: int = 0

    def to_json(self, paper_key: str) -> dict[str, Any]:
        return {
            "id": documents.equation_id(paper_key, self.number),
            "number": self.number,
            "latex": self.latex,
            "environment": self.environment,
            "environment_args": self.environment_args,
            "display": self.display,
            "section": self.section,
            "offset": self.offset,
            "length": self.length,
            "labels": self.labels,
            "context_before": self.context_before,
            "context_after": self.context_after,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "mathml": self.mathml,
        }


@dataclass
class InlineFormula:
    """One inline formula of the running text (``$...$``, ``\\(...\\)``, ``\\begin{math}``).

    Those with enough structure to be searched (`eqsearch.engine.index.inline_indexable`) are converted with the
    displays and indexed as equation documents of their own (id ``<paper key>:i<number>``); the others stay
    ``extracted``.

    Args:
        number: position among the paper's inline formulas, 0-based, in document order (deterministic).
        latex: the body between the delimiters, as in the source after inputs and display shortcuts are expanded.
        offset: character offset of the opening delimiter in its document's expanded text.
        length: characters from the opening delimiter to just past the closing one.
        delimiter: ``$``, ``\\(`` or ``math``.
        context_before: plain text before the formula, in its section (other inline formulas as LaTeX).
        context_after: plain text after it.
        status: as an equation's: ``extracted`` until converted, then ``ok``, ``approximate`` or ``failed``.
        reason: the failure reason code when status is ``failed`` (or why it is approximate).
        message: a human readable detail for ``reason``.
        mathml: Presentation MathML once converted, else None.
    """

    number: int
    latex: str
    offset: int
    length: int
    delimiter: str = "$"
    context_before: str = ""
    context_after: str = ""
    status: str = STATUS_EXTRACTED
    reason: str | None = None
    message: str | None = None
    mathml: str | None = None

    def to_json(self, paper_key: str) -> dict[str, Any]:
        return {
            "id": documents.inline_id(paper_key, self.number),
            "number": self.number,
            "latex": self.latex,
            "offset": self.offset,
            "length": self.length,
            "delimiter": self.delimiter,
            "display": False,
            "context_before": self.context_before,
            "context_after": self.context_after,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "mathml": self.mathml,
        }


@dataclass
class PaperDocument:
    """One top-level LaTeX document of a paper's source (the main text, a supplement compiled on its own).

    Args:
        index: position in the paper's documents; 0 is the main document.
        file: the document's file inside the source.
        title: its ``\\title`` as plain text, if any.
        macros: its own user macros when it is not the main document (the main document's are the paper's).
    """

    index: int
    file: str
    title: str | None = None
    macros: list[MacroDef] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "file": self.file,
            "title": self.title,
            "macros": None if self.macros is None else [m.to_json() for m in self.macros],
        }


@dataclass
class Section:
    """A part of a paper: index 0 is always the front matter (everything before the first heading).

    Args:
        index: position in the paper's flat section list.
        level: 0 front matter / part, 1 chapter, 2 section, 3 subsection, 4 subsubsection, 5 paragraph.
        kind: the heading command (``section``, ``subsection``, ...), ``front`` for index 0, ``document`` for the
            start of a further top-level document (a supplement), or ``docstring``.
        title: the heading as plain text.
        parent: index of the enclosing section (None for top level).
        offset: character offset of the heading in its document's expanded text.
        document: index of the paper's document the section belongs to (0: the main document).
        inline: the inline formulas of the section's running text.
    """

    index: int
    level: int
    kind: str
    title: str
    parent: int | None = None
    offset: int = 0
    equations: list[Equation] = field(default_factory=list)
    document: int = 0
    inline: list[InlineFormula] = field(default_factory=list)


@dataclass
class Paper:
    """One document with everything extraction found in it."""

    id: str
    source: str
    kind: str
    version: int | None = None
    main_file: str | None = None
    title: str | None = None
    abstract: str | None = None
    authors: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    macros: list[MacroDef] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    bibliography_entries: int = 0
    references: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    documents: list[PaperDocument] = field(default_factory=list)
    status: str = "ok"
    error: Issue | None = None
    warnings: list[Issue] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The id that makes equation ids unique: paper id plus source version when known."""
        return documents.paper_key(self.id, self.version)

    def equations(self) -> list[Equation]:
        """All equations in document order."""
        return [eq for section in self.sections for eq in section.equations]

    def warn(self, reason: str, message: str, count: int | None = None) -> None:
        self.warnings.append(Issue(reason, message, count))

    def inline_formulas(self) -> list[InlineFormula]:
        """All inline formulas in document order."""
        return [formula for section in self.sections for formula in section.inline]

    def macros_of(self, document: int) -> list[MacroDef]:
        """The user macros in force in one of the paper's documents: the paper's (the main document's), then, for a
        further document, its own, which win. A supplement shares the main text's notation, so a command it uses
        without defining it takes the main text's definition."""
        if 0 < document < len(self.documents) and self.documents[document].macros:
            return [*self.macros, *(self.documents[document].macros or [])]
        return self.macros

    def to_json(self) -> dict[str, Any]:
        key = self.key
        return {
            "format_version": FORMAT_VERSION,
            "id": self.id,
            "version": self.version,
            "key": key,
            "source": self.source,
            "kind": self.kind,
            "main_file": self.main_file,
            "title": self.title,
            "abstract": self.abstract,
            "authors": self.authors,
            "metadata": self.metadata,
            "macros": [m.to_json() for m in self.macros],
            "citations": self.citations,
            "bibliography_entries": self.bibliography_entries,
            "references": self.references,
            "links": self.links,
            "status": self.status,
            "error": None if self.error is None else self.error.to_json(),
            "warnings": [w.to_json() for w in self.warnings],
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
            "documents": [d.to_json() for d in self.documents],
            "sections": [
                {
                    "index": s.index,
                    "level": s.level,
                    "kind": s.kind,
                    "title": s.title,
                    "parent": s.parent,
                    "offset": s.offset,
                    "document": s.document,
                    "equations": [eq.to_json(key) for eq in s.equations],
                    "inline": [f.to_json(key) for f in s.inline],
                }
                for s in self.sections
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Paper:
        """Read a paper line back (this format, or the minimal input form described in FORMAT.md)."""
        paper = cls(
            id=str(data["id"]),
            source=str(data.get("source") or data["id"]),
            kind=str(data.get("kind") or "jsonl"),
            version=None if data.get("version") is None else int(data["version"]),
            main_file=data.get("main_file"),
            title=data.get("title"),
            abstract=data.get("abstract"),
            authors=[str(a) for a in data.get("authors") or []],
            metadata=data.get("metadata"),
            macros=[MacroDef.from_json(m) for m in data.get("macros") or []],
            citations=[str(c) for c in data.get("citations") or []],
            bibliography_entries=int(data.get("bibliography_entries") or 0),
            references=[str(r) for r in data.get("references") or []],
            links=[str(link) for link in data.get("links") or []],
            status=str(data.get("status") or "ok"),
            error=None if not data.get("error") else Issue(**data["error"]),
            warnings=[Issue(**w) for w in data.get("warnings") or []],
            timings=dict(data.get("timings") or {}),
            documents=[
                PaperDocument(
                    index=int(d.get("index", i)),
                    file=str(d.get("file") or ""),
                    title=d.get("title"),
                    macros=None if d.get("macros") is None else [MacroDef.from_json(m) for m in d["macros"]],
                )
                for i, d in enumerate(data.get("documents") or [])
            ],
        )
        number = inline_number = 0
        for index, raw in enumerate(data.get("sections") or []):
            section = Section(
                index=index,
                level=int(raw.get("level", 2 if index else 0)),
                kind=str(raw.get("kind") or ("front" if index == 0 else "section")),
                title=str(raw.get("title") or ""),
                parent=raw.get("parent"),
                offset=int(raw.get("offset") or 0),
                document=int(raw.get("document") or 0),
            )
            for formula in raw.get("inline") or []:
                latex = str(formula["latex"])
                section.inline.append(
                    InlineFormula(
                        number=inline_number,
                        latex=latex,
                        offset=int(formula.get("offset") or 0),
                        length=int(formula.get("length") or len(latex)),
                        delimiter=str(formula.get("delimiter") or "$"),
                        context_before=str(formula.get("context_before") or ""),
                        context_after=str(formula.get("context_after") or ""),
                        status=str(formula.get("status") or STATUS_EXTRACTED),
                        reason=formula.get("reason"),
                        message=formula.get("message"),
                        mathml=formula.get("mathml"),
                    )
                )
                inline_number += 1
            for eq in raw.get("equations") or []:
                latex = str(eq["latex"])
                section.equations.append(
                    Equation(
                        number=number,
                        latex=latex,
                        environment=str(eq.get("environment") or "equation"),
                        section=index,
                        offset=int(eq.get("offset") or 0),
                        display=bool(eq.get("display", True)),
                        environment_args=[str(a) for a in eq.get("environment_args") or []],
                        labels=[str(a) for a in eq.get("labels") or []],
                        context_before=str(eq.get("context_before") or ""),
                        context_after=str(eq.get("context_after") or ""),
                        status=str(eq.get("status") or STATUS_EXTRACTED),
                        reason=eq.get("reason"),
                        message=eq.get("message"),
                        mathml=eq.get("mathml"),
                        length=int(eq.get("length") or len(latex)),
                    )
                )
                number += 1
            paper.sections.append(section)
        return paper


def read_papers(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the paper records of a JSONL file, plain or gzip-compressed (``.gz``); blank lines are skipped and a
    broken line raises with its number."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise EqsearchError(
                    f"{path}:{line_no}: not valid JSON ({error.msg})", hint="see ingest/FORMAT.md"
                ) from error
            record.setdefault("_line", line_no)
            yield record
