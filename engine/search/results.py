"""What a search returns: equation hits with their paper's fields, paper groups, and one page of results.

Hits are built from a fused candidate (`engine.search.fusion.Fused`: which ranked lists found it, with what score),
the equation's stored document and its paper's (title, authors, abstract: the papers index's alone); every hit says
what matched it (the formula, the text, or both). `select_page` cuts a page out of the fused ranking, per equation
or per paper. Plain data and pure functions: no client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from eqsearch.engine.model.highlights import FormulaHighlight
from eqsearch.engine.search.fusion import Fused
from eqsearch.engine.search.query import HybridQuery

__all__ = [
    "ABSTRACT_SNIPPET",
    "EquationHit",
    "Matched",
    "PaperGroup",
    "SearchResults",
    "equation_hit",
    "group_hits",
    "select_page",
]

Matched = Literal["formula", "text", "both"]

#: Characters of a paper's abstract a hit carries (cut at a word boundary).
ABSTRACT_SNIPPET = 300


@dataclass(frozen=True)
class EquationHit:
    """One equation in the results, with its paper's fields.

    Args:
        eq_id: the equation's document id (paper key + equation number).
        paper_id: the paper's id (arXiv id without version, or the source's id).
        latex: the equation's LaTeX as written in the paper.
        mathml: its Presentation MathML (None when conversion failed).
        section_title: the title of the section it sits in.
        context: plain text around it (before + after).
        score: the fused score (higher is better; comparable within one result set only).
        matched: what found it: ``formula`` (a formula channel), ``text`` (BM25 on the words) or ``both``.
        highlights: field -> highlighted fragments (``<em>`` marks the matched terms).
        title: the paper's title.
        authors: the paper's authors.
        year: the paper's publication year.
        categories: the paper's arXiv categories.
        abstract: the start of the paper's abstract (a snippet, not the whole text).
        formula_score: the formula side's score when the formula matched (the kNN score, the structural BM25
            score, or their blend when both channels are searched).
        text_score: the raw BM25 score when the text matched.
        channels: the channels whose ranked lists found it: ``structure``, ``embedding``, ``text``.
        inline: an inline formula of the running text (id ``<paper key>:i<number>``), not a display equation.
        status: how its LaTeX was converted (``ingest/FORMAT.md``): ``ok``, ``approximate`` (drawn with some commands
            approximated), ``diagram`` (a picture or diagram, kept as LaTeX), ``failed`` (kept as LaTeX).
        formula_highlight: which elements of `mathml` matched the query formula (set by the search for a formula
            query: a pattern's match with its variables' bindings, or the largest shared sub-expression).
    """

    eq_id: str
    paper_id: str
    latex: str
    mathml: str | None
    section_title: str
    context: str
    score: float
    matched: Matched
    highlights: dict[str, list[str]] = field(default_factory=dict)
    title: str = ""
    authors: tuple[str, ...] = ()
    year: int | None = None
    categories: tuple[str, ...] = ()
    abstract: str = ""
    formula_score: float | None = None
    text_score: float | None = None
    channels: tuple[str, ...] = ()
    inline: bool = False
    status: str = "ok"
    formula_highlight: FormulaHighlight | None = None


@dataclass(frozen=True)
class PaperGroup:
    """One paper and its matching equations (best first); the group's score is its best equation's.

    Args:
        paper_id: the paper's id.
        title: its title.
        authors: its authors.
        year: its publication year.
        categories: its arXiv categories.
        abstract: the start of its abstract.
        score: the best fused score among its equations.
        equations: its matching equations, best first.
    """

    paper_id: str
    title: str
    authors: tuple[str, ...]
    year: int | None
    categories: tuple[str, ...]
    abstract: str
    score: float
    equations: list[EquationHit]


@dataclass(frozen=True)
class SearchResults:
    """One page of results.

    Args:
        hits: the page's equations, best first (when grouped: the groups' equations, flattened in group order).
        groups: the page's paper groups, best first (empty unless the query asked for grouping).
        total: how many equations (or, grouped, papers) matched, as far as the fused candidate lists reach.
        page: the 1-based page returned.
        size: the page size asked for.
        latex_error: the converter's message when the LaTeX did not parse (the keyword results still come back).
        warnings: anything else the user should know (e.g. the result window was capped).
        took_ms: wall time of the search in milliseconds, conversion and encoding included.
        analyzer: the text analyzer of the index searched (``english`` or ``standard``).
    """

    hits: list[EquationHit]
    groups: list[PaperGroup]
    total: int
    page: int
    size: int
    latex_error: str | None = None
    warnings: list[str] = field(default_factory=list)
    took_ms: float = 0.0
    analyzer: str = "standard"


def equation_hit(
    item: Fused, raw: Mapping[str, Any], channels: Sequence[str] = (), paper: Mapping[str, Any] | None = None
) -> EquationHit:
    """A hit from a fused candidate, its search hit (``_id``, ``_source``, ``highlight``) and its paper's.

    Args:
        item: the fused candidate; the lists it was found in say what matched it.
        raw: the equation's hit as the page fetch returned it.
        channels: the channels that found it (default: derived from the fused lists, ``embedding`` for a formula).
        paper: its paper's hit from the papers index (title, authors, year, categories, abstract and the highlights
            of the words there; None: a paper not found, the hit shows its id).
    """
    source = raw.get("_source") or {}
    paper_source = (paper or {}).get("_source") or {}
    highlights = {k: list(v) for k, v in ((paper or {}).get("highlight") or {}).items()}
    highlights.update({k: list(v) for k, v in (raw.get("highlight") or {}).items()})
    named = set(item.scores)  # the sides it was found by: the formula, the words (its own or its paper's), both
    if "paper" in named:
        named.add("words")
    matched: Matched = "both" if {"formula", "words"} <= named else ("formula" if "formula" in named else "text")
    abstract = paper_source.get("abstract") or ""
    if len(abstract) > ABSTRACT_SNIPPET:
        abstract = abstract[:ABSTRACT_SNIPPET].rsplit(" ", 1)[0] + " ..."
    return EquationHit(
        eq_id=raw["_id"],
        paper_id=source.get("paper_id") or "",
        latex=source.get("latex") or "",
        mathml=source.get("mathml"),
        section_title=source.get("section_title") or "",
        context=source.get("context") or "",
        score=item.score,
        matched=matched,
        highlights=highlights,
        title=paper_source.get("title") or "",
        authors=tuple(paper_source.get("authors") or ()),
        year=source.get("year"),
        categories=tuple(source.get("categories") or ()),
        abstract=abstract,
        formula_score=item.scores.get("formula"),
        text_score=item.scores.get("words"),
        channels=_channels(channels, named, "paper" in item.scores),
        inline=bool(source.get("inline", False)),
        status=str(source.get("status") or "ok"),
    )


#: The channel a side stands for when no finer account is given (a formula found by kNN alone, "equations like this").
_SIDE_CHANNEL = {"formula": "embedding", "words": "text"}


def _channels(listed: Sequence[str], sides: set[str], by_paper: bool) -> tuple[str, ...]:
    """The channels that found a hit: those of the lists it is in (else those its sides stand for), and ``text``
    where the words found its paper (its title, abstract or another equation's context)."""
    found = tuple(listed) or tuple(_SIDE_CHANNEL[name] for name in ("formula", "words") if name in sides)
    return (*found, "text") if by_paper and "text" not in found else found


def select_page(
    fused: Sequence[Fused], paper_of: Mapping[str, str], query: HybridQuery, text_total: int
) -> tuple[list[Fused], int]:
    """The fused candidates on the query's page, and the total it reports.

    Per equation, the page is a slice of the fused ranking and the total the larger of the fused count and the
    BM25 hit count. Grouped by paper, papers are ranked by their best candidate, the page is a slice of papers
    (each with all its candidates, best first) and the total counts papers.

    Args:
        fused: the fused ranking, best first.
        paper_of: eq_id -> paper_id of every candidate.
        query: the page, size and grouping asked for.
        text_total: the BM25 list's hit count (0 without one).
    """
    start = (query.page - 1) * query.size
    if query.group_by_paper:
        papers: dict[str, list[Fused]] = {}
        for item in fused:
            papers.setdefault(paper_of.get(item.doc_id, ""), []).append(item)
        page_items = [item for members in list(papers.values())[start : start + query.size] for item in members]
        return page_items, len(papers)
    return list(fused[start : start + query.size]), max(len(fused), text_total)


def group_hits(hits: Sequence[EquationHit]) -> list[PaperGroup]:
    """Hits grouped per paper, groups in the order of their best hit, hits in their order within each group."""
    groups: dict[str, list[EquationHit]] = {}
    for hit in hits:
        groups.setdefault(hit.paper_id, []).append(hit)
    out = []
    for paper_id, members in groups.items():
        first = members[0]
        out.append(
            PaperGroup(
                paper_id=paper_id,
                title=first.title,
                authors=first.authors,
                year=first.year,
                categories=first.categories,
                abstract=first.abstract,
                score=first.score,
                equations=members,
            )
        )
    return out
