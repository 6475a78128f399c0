"""What a search asks for (`HybridQuery`) and the Elasticsearch request bodies it becomes; no client here.

A query's filters (categories, years, one paper, inline formulas or not) become pre-filters inside the kNN query and
filters of the BM25 query alike, so both ranked lists cover the same equations. The ranking searches return scores
and two doc values only (`ranking_only`); the page's equations are then fetched by id with highlights (`page_body`),
and their papers' fields from the papers index (`papers_page_body`). These are free functions of their arguments, so
what is sent can be checked without a node (`SearchService` sends them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from eqsearch.engine.index.mappings import CONTEXT_VECTOR_FIELD, SOURCE_EXCLUDED_FIELDS, VECTOR_FIELD
from eqsearch.engine.model.structure import FormulaStructure
from eqsearch.engine.search.plugin import maxsim_ext, maxsim_window_rescore
from eqsearch.engine.search.structure_query import structure_body

if TYPE_CHECKING:
    from eqsearch.engine.search.plan import MaxSimPlan, QueryPlan

__all__ = [
    "FORMULA_LISTS",
    "FUSIONS",
    "HIGHLIGHT_FIELDS",
    "INLINE_CHOICES",
    "MAX_PAGE_SIZE",
    "MAX_RESULT_WINDOW",
    "PAPER_HIGHLIGHT_FIELDS",
    "PAPER_LIST_FIELDS",
    "PAPER_PAGE_FIELDS",
    "PAPER_TEXT_FIELDS",
    "RANKING_FIELDS",
    "SOURCE_EXCLUDES",
    "TEXT_COUNT_LIMIT",
    "TEXT_FIELDS",
    "Fusion",
    "HybridQuery",
    "InlineChoice",
    "ListInputs",
    "candidate_window",
    "knn_body",
    "list_requests",
    "needs_papers",
    "num_candidates",
    "page_body",
    "paper_contexts_body",
    "paper_filters",
    "paper_text_body",
    "papers_page_body",
    "query_filters",
    "ranking_only",
    "representatives_body",
    "text_body",
    "words_filters",
]

Fusion = Literal["evidence", "rrf", "linear"]
#: How the formula side and the words combine (`HybridQuery.fusion`); the first is the default.
FUSIONS: tuple[Fusion, ...] = ("evidence", "rrf", "linear")
#: Which equations a search covers: displays and inline formulas, displays only, or inline formulas only.
InlineChoice = Literal["include", "exclude", "only"]
INLINE_CHOICES: tuple[InlineChoice, ...] = ("include", "exclude", "only")

MAX_PAGE_SIZE = 100
MAX_RESULT_WINDOW = 1000
#: The words of an equation, BM25 fields and boosts: its context, and its section's title (a word there says more).
TEXT_FIELDS = ("section_title^1.5", "context")
HIGHLIGHT_FIELDS = ("section_title", "context")
#: The words of a paper, searched in the papers index (`paper_text_body`): its title counts twice its abstract.
#: Every equation of a paper shares them, so they rank the papers, not the equations (`fusion.evidence_fusion`).
PAPER_TEXT_FIELDS = ("title^2", "abstract")
PAPER_HIGHLIGHT_FIELDS = ("title", "abstract")
#: What the page shows of each of its papers, joined by paper id (`papers_page_body`).
PAPER_PAGE_FIELDS = ("title", "authors", "year", "categories", "abstract")
#: BM25 hits counted exactly for `SearchResults.total`: no page past the result window can be asked for, so a count
#: beyond it tells nothing, and while hits must be counted Lucene cannot skip the ones that cannot reach the top k.
#: (No measurable effect on the replicated benchmark corpus, whose ~185 copies of each text tie at the top score so
#: that nothing can be skipped anyway; see docs/decisions/query-path.md.)
TEXT_COUNT_LIMIT = MAX_RESULT_WINDOW
#: Never sent back: the vectors are large and no caller reads them from a hit.
SOURCE_EXCLUDES = list(SOURCE_EXCLUDED_FIELDS)
#: The doc values a ranking search returns per hit (``eq_id`` equals ``_id`` for every writer).
RANKING_FIELDS = ("eq_id", "paper_id")
#: What the papers list returns per hit (a paper document's ``_id`` is its ``paper_id``).
PAPER_LIST_FIELDS = ("paper_id",)


@dataclass(frozen=True)
class HybridQuery:
    """What a researcher asked for.

    Args:
        latex: a formula in LaTeX (None or blank: keywords only).
        keywords: free text matched against paper titles, abstracts and equation context (None: formula only).
        categories: arXiv categories to keep (any of them); empty keeps all.
        year_from: first publication year to keep (inclusive).
        year_to: last publication year to keep (inclusive).
        paper_id: keep only this paper's equations.
        formula_weight: the formula <-> keywords balance in [0, 1]: 1 ranks by the formula only, 0 by the keywords
            only. Used as the linear blend weight, and to weight the two rankings in reciprocal rank fusion.
        fusion: ``evidence`` (the default: the formula ranks the equations, the words re-weigh them by their paper
            and their own context, `engine.search.fusion.evidence_fusion`), ``rrf`` (reciprocal rank fusion of the
            formula side and the words' equation list) or ``linear`` (their min-max normalised scores blended).
        page: 1-based result page.
        size: hits (or paper groups) per page, 1..100.
        group_by_paper: return one group per paper holding its matching equations, paginated by group.
        inline: ``include`` searches display equations and inline formulas alike, ``exclude`` the displays only,
            ``only`` the inline formulas only.
        highlight: say which parts of each hit's formula matched the query formula (`EquationHit.formula_highlight`;
            ~0.35 ms of client CPU per hit: off for callers that do not show them).

    Raises:
        ValueError: a field is out of range (weight outside [0, 1], page < 1, size outside 1..100, years reversed).
    """

    latex: str | None = None
    keywords: str | None = None
    categories: tuple[str, ...] = ()
    year_from: int | None = None
    year_to: int | None = None
    paper_id: str | None = None
    formula_weight: float = 0.5
    fusion: Fusion = "evidence"
    page: int = 1
    size: int = 10
    group_by_paper: bool = False
    inline: InlineChoice = "include"
    highlight: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.formula_weight <= 1.0:
            raise ValueError(f"formula_weight must lie in [0, 1], got {self.formula_weight}")
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {self.fusion!r}")
        if self.page < 1:
            raise ValueError(f"page must be 1 or more, got {self.page}")
        if not 1 <= self.size <= MAX_PAGE_SIZE:
            raise ValueError(f"size must lie in 1..{MAX_PAGE_SIZE}, got {self.size}")
        if self.year_from is not None and self.year_to is not None and self.year_from > self.year_to:
            raise ValueError(f"year_from ({self.year_from}) is after year_to ({self.year_to})")
        if isinstance(self.categories, str):
            raise ValueError("categories must be a tuple of category names, not one string")
        if self.inline not in INLINE_CHOICES:
            raise ValueError(f"inline must be one of {', '.join(INLINE_CHOICES)}, got {self.inline!r}")

    @property
    def has_formula(self) -> bool:
        return bool(self.latex and self.latex.strip())

    @property
    def has_keywords(self) -> bool:
        return bool(self.keywords and self.keywords.strip())


def candidate_window(query: HybridQuery, *, candidate_depth: int) -> tuple[int, bool]:
    """How many candidates each ranked list contributes to fusion: ``candidate_depth``, whatever the page, its size
    or the grouping, so that every page is a slice of one ranking (page 2 continues page 1 exactly, and the total
    does not move).

    Args:
        query: the query (its page and size).
        candidate_depth: the service's depth (at most `MAX_RESULT_WINDOW`).

    Returns:
        The depth, and whether the page asked for starts past it (it then comes back empty, with a warning).
    """
    depth = min(candidate_depth, MAX_RESULT_WINDOW)
    return depth, (query.page - 1) * query.size >= depth


def query_filters(query: HybridQuery) -> list[dict[str, Any]]:
    """The query's filters as Elasticsearch filter clauses of the equations index (empty when it has none)."""
    filters = paper_filters(query)
    if query.inline == "only":
        filters.append({"term": {"inline": True}})
    elif query.inline == "exclude":
        filters.append({"bool": {"must_not": [{"term": {"inline": True}}]}})
    return filters


def paper_filters(query: HybridQuery) -> list[dict[str, Any]]:
    """The query's filters that concern a paper (categories, years, one paper), as filter clauses of either index."""
    filters: list[dict[str, Any]] = []
    if query.categories:
        filters.append({"terms": {"categories": list(query.categories)}})
    if query.year_from is not None or query.year_to is not None:
        bounds = {}
        if query.year_from is not None:
            bounds["gte"] = query.year_from
        if query.year_to is not None:
            bounds["lte"] = query.year_to
        filters.append({"range": {"year": bounds}})
    if query.paper_id:
        filters.append({"term": {"paper_id": query.paper_id}})
    return filters


def words_filters(query: HybridQuery, plan: QueryPlan) -> list[dict[str, Any]]:
    """The filters of the words' lists of equations: the query's, and displays only where the plan says so."""
    filters = query_filters(query)
    return [*filters, _DISPLAYS_ONLY] if plan.words_displays_only else filters


def num_candidates(k: int, factor: int) -> int:
    """kNN ``num_candidates`` for ``k`` hits: ``factor`` times k, at least 100 and at most 10,000."""
    return min(10_000, max(100, k * factor))


def knn_body(
    vector: np.ndarray,
    k: int,
    filters: list[dict[str, Any]],
    *,
    num_candidates_factor: int,
    exclude: Sequence[str] = (),
    field: str = VECTOR_FIELD,
) -> dict[str, Any]:
    """A kNN search of the equations' vectors, its filters applied as pre-filters.

    Args:
        vector: the query vector (already normalised where the index compares by cosine).
        k: how many nearest equations.
        filters: filter clauses (`query_filters`).
        num_candidates_factor: see `num_candidates`.
        exclude: equation ids never to return (the equation a "more like this" starts from).
        field: the vector field: the formula's (default) or ``context_vector`` (the context channel).

    Returns:
        The search body.
    """
    pre_filter: dict[str, Any] = {"bool": {"filter": list(filters)}}
    if exclude:
        pre_filter["bool"]["must_not"] = [{"ids": {"values": list(exclude)}}]
    knn: dict[str, Any] = {
        "field": field,
        "query_vector": np.asarray(vector).tolist(),  # whole numbers stay whole: an int8 field takes only those
        "k": k,
        "num_candidates": num_candidates(k, num_candidates_factor),
    }
    if filters or exclude:
        knn["filter"] = pre_filter  # inside knn: a pre-filter, so k hits come back when k exist
    # a knn query, not the top-level knn section: the same per-shard search, without the extra DFS round that the
    # top-level section takes (about 0.3 ms of the node's CPU per search here, see docs/decisions/query-path.md)
    return {"query": {"knn": knn}, "size": k, "_source": {"excludes": SOURCE_EXCLUDES}, "track_total_hits": False}


def _text_match(keywords: str, fields: Sequence[str] = TEXT_FIELDS) -> dict[str, Any]:
    return {"multi_match": {"query": keywords, "fields": list(fields), "type": "best_fields"}}


def _highlight(fields: Sequence[str] = HIGHLIGHT_FIELDS) -> dict[str, Any]:
    return {
        "fields": {name: {"number_of_fragments": 2, "fragment_size": 150} for name in fields},
        "require_field_match": True,
    }


def text_body(keywords: str, size: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """A BM25 search of the words in the equations' own fields (`TEXT_FIELDS`) with `filters`, highlighted,
    counting up to `TEXT_COUNT_LIMIT` hits."""
    return {
        "query": {"bool": {"must": [_text_match(keywords)], "filter": filters}},
        "size": size,
        "_source": {"excludes": SOURCE_EXCLUDES},
        "highlight": _highlight(),
        "track_total_hits": TEXT_COUNT_LIMIT,
    }


def paper_text_body(keywords: str, size: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The words' BM25 over the papers' own fields (`PAPER_TEXT_FIELDS`), a search of the papers index with the
    query's paper filters (`paper_filters`): the papers ranked by their title and abstract."""
    return {
        "query": {"bool": {"must": [_text_match(keywords, PAPER_TEXT_FIELDS)], "filter": filters}},
        "size": size,
        "track_total_hits": False,
    }


def paper_contexts_body(keywords: str, size: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The papers ranked by the words in their equations' own fields (`TEXT_FIELDS`): the text search collapsed on
    ``paper_id``, each paper once with its best equation (no scripts: the minimal distribution has none to sum a
    paper's scores)."""
    return {
        "query": {"bool": {"must": [_text_match(keywords)], "filter": filters}},
        "size": size,
        "collapse": {"field": "paper_id"},
        "track_total_hits": False,
    }


def representatives_body(
    paper_ids: Sequence[str], keywords: str | None, filters: list[dict[str, Any]]
) -> dict[str, Any]:
    """One equation for each of ``paper_ids`` that the query's ``filters`` keep: the one whose own fields match the
    words best, else the paper's first (a paper found by its title and abstract alone shows with it)."""
    query: dict[str, Any] = {"bool": {"filter": [*filters, {"terms": {"paper_id": list(paper_ids)}}]}}
    if keywords:
        query["bool"]["should"] = [_text_match(keywords)]
    return {
        "query": query,
        "size": len(paper_ids),
        "collapse": {"field": "paper_id"},
        "sort": [{"_score": "desc"}, {"number": "asc"}],
        "stored_fields": "_none_",
        "docvalue_fields": list(RANKING_FIELDS),
        "track_total_hits": False,
    }


def ranking_only(body: dict[str, Any], fields: Sequence[str] = RANKING_FIELDS) -> dict[str, Any]:
    """The same search returning scores and the ``eq_id`` and ``paper_id`` doc values only (or ``fields``).

    Fusion ranks up to ``candidate_depth`` candidates per list but a page shows a handful, so the lists read no
    stored field at all (``stored_fields: _none_``; not even ``_id``): stored fields are compressed in blocks
    shared with the large ``_source`` (MathML), and decompressing one per candidate was most of the lists' cost
    (see docs/decisions/query-path.md). ``eq_id`` equals ``_id`` for every writer, and doc values are cheap to read.
    """
    light = {key: value for key, value in body.items() if key not in ("highlight", "_source")}
    return {**light, "stored_fields": "_none_", "docvalue_fields": list(fields)}


def needs_papers(query: HybridQuery) -> bool:
    """Whether the fusion reads the papers of the formula lists' candidates: to weigh the words' evidence of each
    candidate's paper (words searched beside the formula), or to group the page by paper. A formula-only search
    that does not group reads none, so its formula lists fetch ``eq_id`` alone: each keyword doc value read costs
    the node a few microseconds per candidate (docs/decisions/query-path.md)."""
    return query.group_by_paper or (query.has_keywords and query.formula_weight < 1)


@dataclass(frozen=True)
class ListInputs:
    """What the ranked lists search with, beside the query and its plan.

    Args:
        structure: the formula's structure (the structural list).
        vector: the formula's vector (the embedding list).
        context_vector: the keywords' text embedding (the context list; None: the list does not run).
        rare_terms: the structural terms the ``rare-terms`` first stage matches (None: all of them).
        query_nodes: the formula's node vectors, sent where the formula lists bring MaxSim scores.
    """

    structure: FormulaStructure | None = None
    vector: np.ndarray | None = None
    context_vector: np.ndarray | None = None
    rare_terms: Sequence[str] | None = None
    query_nodes: np.ndarray | None = None


def list_requests(query: HybridQuery, plan: QueryPlan, inputs: ListInputs) -> list[tuple[str, dict[str, Any]]]:
    """The request body of each ranked list the plan runs, as ``(name, body)``, made `ranking_only`: ``structure``
    (BM25 over structural terms, reranked), ``embedding`` (kNN on the formula vectors), ``text`` (BM25 over the
    words of the equations), ``paper_contexts`` (the same, one hit per paper), ``context`` (kNN of the keywords'
    embedding on the equations' context vectors) and ``papers`` (BM25 over the words of the papers, a search of the
    papers index, last). Where the plan's MaxSim
    scores come with the lists, the formula lists carry the plugin's search extension and its window rescore."""
    filters = query_filters(query)
    words = words_filters(query, plan)
    factor = plan.num_candidates_factor
    bodies: dict[str, dict[str, Any]] = {}
    if "structure" in plan.lists and plan.structure is not None and inputs.structure is not None:
        bodies["structure"] = structure_body(inputs.structure, plan.structure, filters, inputs.rare_terms)
    if "embedding" in plan.lists and inputs.vector is not None:
        bodies["embedding"] = knn_body(inputs.vector, plan.depth, filters, num_candidates_factor=factor)
    keywords = query.keywords or ""
    if "text" in plan.lists:
        bodies["text"] = text_body(keywords, plan.depth, words)
    if "paper_contexts" in plan.lists:
        bodies["paper_contexts"] = paper_contexts_body(keywords, plan.depth, words)
    if "context" in plan.lists and inputs.context_vector is not None:
        bodies["context"] = knn_body(
            inputs.context_vector, plan.depth, words, num_candidates_factor=factor, field=CONTEXT_VECTOR_FIELD
        )
    searches = []
    for name, body in bodies.items():
        light = ranking_only(body, plan.formula_fields if name in FORMULA_LISTS else RANKING_FIELDS)
        if name in FORMULA_LISTS and plan.maxsim is not None and plan.maxsim.in_lists:
            _bring_maxsim(light, plan.maxsim, inputs.query_nodes)
        searches.append((name, light))
    if "papers" in plan.lists:  # the papers index's, after the equations' lists
        searches.append(
            ("papers", ranking_only(paper_text_body(keywords, plan.depth, paper_filters(query)), PAPER_LIST_FIELDS))
        )
    return searches


#: The ranked lists of the formula side.
FORMULA_LISTS = ("structure", "embedding")
#: The words alone rank display equations (an inline formula's only merit would be its page's words).
_DISPLAYS_ONLY = {"bool": {"must_not": [{"term": {"inline": True}}]}}


def _bring_maxsim(body: dict[str, Any], maxsim: MaxSimPlan, query_nodes: np.ndarray | None) -> None:
    """Asks a formula list to bring its top ``list_window`` hits' MaxSim scores (the plugin's search extension, its
    window rescore last in the list's rescores; a window of 0 asks for none: the rescorer then scores them all)."""
    if query_nodes is None or maxsim.list_window <= 0:
        return
    body["ext"] = maxsim_ext(query_nodes, symmetric=maxsim.symmetric)
    rescores = body.get("rescore", [])
    rescores = [rescores] if isinstance(rescores, dict) else list(rescores)
    body["rescore"] = [*rescores, maxsim_window_rescore(maxsim.list_window)]


def page_body(eq_ids: Sequence[str], keywords: str | None) -> dict[str, Any]:
    """The search that fetches a page's equations by id: sources (vector excluded) and, with keywords, highlights of
    the keywords' BM25 query."""
    body: dict[str, Any] = {
        "query": {"terms": {"eq_id": list(eq_ids)}},
        "size": len(eq_ids),
        "_source": {"excludes": SOURCE_EXCLUDES},
        "track_total_hits": False,
    }
    if keywords:
        body["highlight"] = {**_highlight(), "highlight_query": _text_match(keywords)}
    return body


def papers_page_body(paper_ids: Sequence[str], keywords: str | None) -> dict[str, Any]:
    """The search that fetches the page's papers by id (`PAPER_PAGE_FIELDS`) and, with keywords, highlights of the
    words in their titles and abstracts."""
    body: dict[str, Any] = {
        "query": {"ids": {"values": list(paper_ids)}},
        "size": len(paper_ids),
        "_source": {"includes": list(PAPER_PAGE_FIELDS)},
        "track_total_hits": False,
    }
    if keywords:
        body["highlight"] = {
            **_highlight(PAPER_HIGHLIGHT_FIELDS),
            "highlight_query": _text_match(keywords, PAPER_TEXT_FIELDS),
        }
    return body
