"""The structural list's request body: BM25 over a formula's structural terms, its first stage, then its rerank by
shared sub-expressions, as the query plan's `engine.search.plan.StructureList` says.

The rerank rescores the list's top window by the largest sub-expressions each candidate shares with the query
(`engine.model.structure` spans), weighed by the larger of the two formulas' sizes. Without scripting (the minimal
distribution has no Painless) it is a ``function_score`` over a ``dis_max`` of one constant-score term per span; where
the plan runs it inside the node, the plugin's requests give the same scores (`engine.search.plugin`). Pure functions
of their arguments.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from eqsearch.engine.index.mappings import SIZE_FIELD, SPANS_FIELD, STRUCTURE_FIELD, VECTOR_FIELDS
from eqsearch.engine.model.structure import FormulaStructure
from eqsearch.engine.search.plugin import bm25_rescore, structure_rescore, terms_query

if TYPE_CHECKING:
    from eqsearch.engine.search.plan import StructureList

__all__ = ["MAX_RERANK_SPANS", "MIN_RERANK_SPAN", "structure_body"]


def _larger_size_share(query_size: int) -> list[dict[str, Any]]:
    """``function_score`` functions that scale the shared sub-expressions' share of the query's size to their share
    of the larger of the query's and the candidate's: 1 up to the query's size, then query size / candidate size
    (a candidate without a size counts as the query's). Functions, not a script: the minimal distribution of
    Elasticsearch has no scripting language."""
    return [
        {"filter": {"range": {SIZE_FIELD: {"lte": query_size}}}, "weight": 1.0},
        {
            "field_value_factor": {
                "field": SIZE_FIELD,
                "factor": 1.0 / query_size,
                "modifier": "reciprocal",
                "missing": query_size,
            }
        },
    ]


#: The smallest sub-expression the rerank looks for. One symbol (``x``, ``=``, ``V:*``) is shared by nearly every
#: candidate in the window, so its posting list is the longest to walk for the smallest share: left out, the
#: development figures do not move and the structural request takes ~0.5 ms less at 1M
#: (docs/decisions/structural-rerank.md).
MIN_RERANK_SPAN = 2
#: The most sub-expressions of one kind a query sends to the rerank: its largest. A formula of a few hundred symbols
#: has thousands of spans, and Elasticsearch refuses a query of more clauses than its ``max_clause_count`` (16,384 on
#: the local node's 1 GiB heap) outright; past this cap a very long query loses only the credit of its small spans.
MAX_RERANK_SPANS = 2048


def _rerank_spans(structure: FormulaStructure, kind: str) -> list[tuple[str, int]]:
    """The query's sub-expressions of one kind (``r`` renamed, ``e`` exact, ``g`` generalised) the rerank looks
    for, as (hash, size): those of at least `MIN_RERANK_SPAN` symbols, the `MAX_RERANK_SPANS` largest."""
    spans = [
        (span, span_size)
        for span, span_size in structure.spans.items()
        if span.startswith(kind) and span_size >= MIN_RERANK_SPAN
    ]
    if len(spans) > MAX_RERANK_SPANS:
        spans = sorted(spans, key=lambda item: (-item[1], item[0]))[:MAX_RERANK_SPANS]
    return sorted(spans)


def _span_match(structure: FormulaStructure, kind: str, weight: float) -> dict[str, Any] | None:
    """The largest of the query's sub-expressions of one kind (`_rerank_spans`) that a candidate shares, as
    ``weight`` x its size / the query's size: a ``dis_max`` of one constant-score term per span."""
    size = max(structure.size, 1)
    queries = [
        {"constant_score": {"filter": {"term": {SPANS_FIELD: span}}, "boost": weight * span_size / size}}
        for span, span_size in _rerank_spans(structure, kind)
    ]
    return {"dis_max": {"queries": queries, "tie_breaker": 0.0}} if queries else None


#: The most terms the plugin's BM25 rescorer takes (``Bm25RescorerBuilder.MAX_TERMS``); a formula with more (none
#: of the development collection's) gets the plain rescore.
MAX_BM25_TERMS = 16_384


def _term_counts(structure: FormulaStructure, only: Sequence[str] | None = None) -> dict[str, int]:
    """The formula's distinct terms (or those of them in ``only``) with their counts, in the query's order."""
    kept = set(only) if only is not None else None
    return {term: count for term, count in Counter(structure.tokens).items() if kept is None or term in kept}


def _terms_match(structure: FormulaStructure, only: Sequence[str] | None = None) -> dict[str, Any]:
    """BM25 over the formula's terms (or those of them in ``only``), each once with its count as boost: the score
    of a ``match`` on the whole text (where a repeated term adds its clause again), in a third fewer clauses."""
    should = [
        {"term": {STRUCTURE_FIELD: {"value": term, "boost": float(count)}}}
        if count > 1
        else {"term": {STRUCTURE_FIELD: term}}
        for term, count in _term_counts(structure, only).items()
    ]
    return {"bool": {"should": should}}


def _window_bm25(
    structure: FormulaStructure, only: Sequence[str] | None, *, window: int, replace: bool, forward_index: bool
) -> dict[str, Any]:
    """The rescore that gives the top ``window`` the BM25 of the formula's terms (or of those in ``only``): added
    to their scores, or with ``replace`` in their place. With ``forward_index``, the plugin's ``eqsearch_bm25``
    rescorer computes it from the equations' forward index; otherwise a query rescore of ``term`` clauses."""
    counts = _term_counts(structure, only)
    if forward_index and 0 < len(counts) <= MAX_BM25_TERMS:
        return bm25_rescore(counts, window=window, replace=replace)
    weights = {"query_weight": 0.0 if replace else 1.0, "rescore_query_weight": 1.0}
    return {
        "window_size": window,
        "query": {"rescore_query": _terms_match(structure, only), **weights, "score_mode": "total"},
    }


def structure_body(
    structure: FormulaStructure,
    plan: StructureList,
    filters: list[dict[str, Any]],
    rare_terms: Sequence[str] | None = None,
) -> dict[str, Any]:
    """BM25 over the structural terms of the equations (`engine.model.structure`), optionally reranked, as ``plan``
    says (`engine.search.plan.StructureList`).

    The rerank rescores the top ``rerank_window`` by the sub-expressions they share with the query: the BM25 score
    times ``1 + rerank_weight x (exact + generalised)``, each part the size of the largest shared sub-expression
    over the query's size, or with ``candidate_sizes`` over the larger of the query's and the candidate's (the
    index's `SIZE_FIELD`): then only a candidate of the query's size that is the query scores the full factor, and
    a long formula holding the query, or a short piece of it, less. A product rather than a sum, so that the rerank
    needs no knowledge of the BM25 scale.

    The first stage (`engine.search.plan.FirstStage`): with ``rare-terms``, the equations are first matched on the
    query's ``rare_terms`` alone (None: all terms), and a first rescore adds the BM25 of the other terms to the top
    ``rerank_window``'s scores before the sub-expression rescore: BM25 is a sum over the terms, so those candidates get
    the same scores as without a first stage, for a fraction of the posting lists walked. Candidates below the window
    keep their first-stage score, which is never above the full score of any candidate in it. With ``shard``, the
    plugin's ``eqsearch_terms`` query lets the shard choose the rare terms by the same rule, and its ``eqsearch_bm25``
    rescorer adds the others: the same scores and windows, no ``_termvectors`` request (a formula of more terms than
    the rescorer takes matches all its terms). Where the plan is ``native``, the sub-expression rescore is the
    plugin's ``eqsearch_structure`` rescorer, and with ``forward_index`` the window's BM25 its ``eqsearch_bm25``: the
    same scores from a list of spans and the forward index instead of one clause per span and the posting lists.

    Args:
        structure: the query formula's structure (`formula_structure`).
        plan: the structural list's part of the query plan.
        filters: filter clauses (`query_filters`).
        rare_terms: the terms the ``rare-terms`` first stage matches (None: all of them).

    Returns:
        The search body.
    """
    k, rerank_window, weight = plan.depth, plan.rerank_window, plan.rerank_weight
    native_bm25 = plan.native and plan.forward_index
    counts = _term_counts(structure)
    shard = plan.first_stage == "shard" and native_bm25 and rerank_window > 0 and len(counts) <= MAX_BM25_TERMS
    staged = plan.first_stage == "rare-terms" and rare_terms is not None and rerank_window > 0
    match = (
        terms_query(counts, plan.rare_rule, plan.top, filters)
        if shard
        else _terms_match(structure, rare_terms if staged else None)
    )
    body: dict[str, Any] = {
        "query": {"bool": {"must": [match], "filter": filters}},
        "size": k,
        "_source": {"excludes": list(VECTOR_FIELDS)},
        "track_total_hits": False,
    }
    rescores: list[dict[str, Any]] = []
    rest = sorted(set(structure.tokens) - set(rare_terms)) if staged and rare_terms is not None else []
    if rest:
        rescores.append(_window_bm25(structure, rest, window=rerank_window, replace=False, forward_index=native_bm25))
    elif shard:
        rescores.append(bm25_rescore(counts, window=rerank_window, replace=False, except_rare=plan.rare_rule))
    if rerank_window > 0 and weight > 0:
        rescores.extend(_rerank(structure, plan))
    if rescores:
        body["rescore"] = rescores[0] if len(rescores) == 1 else rescores
    return body


def _rerank(structure: FormulaStructure, plan: StructureList) -> list[dict[str, Any]]:
    """The sub-expression rescore of the top ``rerank_window``: the plugin's rescorer where the plan is ``native``,
    else a query rescore (a ``function_score`` with the candidates' sizes over one ``constant_score`` term a span)."""
    if plan.native:
        selected = [span for kind in plan.span_kinds for span in _rerank_spans(structure, kind)]
        if not selected:
            return []
        return [
            structure_rescore(
                selected,
                query_size=max(structure.size, 1),
                weight=plan.rerank_weight,
                window=plan.rerank_window,
                candidate_sizes=plan.candidate_sizes,
            )
        ]
    spans = [m for kind in plan.span_kinds if (m := _span_match(structure, kind, plan.rerank_weight))]
    if not spans:
        return []
    # The match_all clause makes every candidate match with 1 + the shared sub-expressions, so that the
    # multiplication keeps the BM25 order of the candidates that share nothing.
    if plan.candidate_sizes:
        shares = _larger_size_share(max(structure.size, 1))
        spans = [
            {
                "function_score": {
                    "query": {"bool": {"should": spans}},
                    "functions": shares,
                    "score_mode": "first",
                    "boost_mode": "multiply",
                }
            }
        ]
    rescore = {"bool": {"should": [{"match_all": {"boost": 1.0}}, *spans]}}
    return [
        {
            "window_size": plan.rerank_window,
            "query": {
                "rescore_query": rescore,
                "query_weight": 1.0,
                "rescore_query_weight": 1.0,
                "score_mode": "multiply",
            },
        }
    ]
