"""The structural list's request body: BM25 over a formula's structural terms, then its rerank by shared
sub-expressions.

The rerank rescores the list's top window by the largest sub-expressions each candidate shares with the query
(`engine.model.structure` spans), weighed by the larger of the two formulas' sizes. Without scripting (the minimal
distribution has no Painless) it is a ``function_score`` over a ``dis_max`` of one constant-score term per span;
where every node has eqsearch's plugin, the plugin's ``eqsearch_structure`` rescorer computes the same scores from
the same spans (`engine.search.plugin`), and where the index also stores each equation's forward index, the
plugin's ``eqsearch_bm25`` rescorer gives the window its BM25 from it instead of walking the terms' posting lists, and
where every node's plugin has the ``eqsearch_terms`` query, the first stage is that query, whose shard chooses the rare
terms.
Pure functions of their arguments, like the rest of `engine.search.query`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from eqsearch.engine.index.mappings import (
    SIZE_FIELD,
    SPANS_FIELD,
    STRUCTURE_FIELD,
    STRUCTURE_VECTOR_FIELD,
    VECTOR_FIELDS,
)
from eqsearch.engine.model.structure import SPAN_KINDS, FormulaStructure
from eqsearch.engine.search.plugin import bm25_rescore, structure_rescore, terms_query
from eqsearch.engine.search.rankers import FormulaRanking
from eqsearch.engine.search.termstats import RareRule

__all__ = ["MAX_RERANK_SPANS", "MIN_RERANK_SPAN", "structure_body", "structure_rerank_window"]


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
    k: int,
    filters: list[dict[str, Any]],
    *,
    rerank_window: int = 0,
    rerank_weight: float = 0.0,
    first_stage: Sequence[str] | None = None,
    candidate_sizes: bool = False,
    span_kinds: Sequence[str] = SPAN_KINDS,
    plugin: bool = False,
    forward_index: bool = False,
    structure_vector: Sequence[float] | None = None,
    knn_window: int = 0,
    knn_candidates: int = 0,
    rare_rule: RareRule | None = None,
    term_at_a_time: bool = False,
) -> dict[str, Any]:
    """BM25 over the structural terms of the equations (`engine.model.structure`), optionally reranked.

    The rerank rescores the top ``rerank_window`` by the sub-expressions they share with the query: the BM25 score
    times ``1 + rerank_weight x (exact + generalised)``, each part the size of the largest shared sub-expression
    over the query's size, or with ``candidate_sizes`` over the larger of the query's and the candidate's (the
    index's `SIZE_FIELD`): then only a candidate of the query's size that is the query scores the full factor, and
    a long formula holding the query, or a short piece of it, less. A product rather than a sum, so that the rerank
    needs no knowledge of the BM25 scale.

    With ``first_stage`` (the query's rarest terms, `engine.search.termstats`), the equations are first matched on
    those terms alone, and a first rescore adds the BM25 of the other terms to the top ``rerank_window``'s scores
    before the sub-expression rescore: BM25 is a sum over the terms, so those candidates get the same scores as
    without a first stage, for a fraction of the posting lists walked. Candidates below the window keep their
    first-stage score, which is never above the full score of any candidate in it.

    With a ``structure_vector`` (the query's structure-bag vector, `engine.model.structure_bag`), the equations are
    first found by kNN on theirs: the ``knn_window`` nearest, whose cosine a first rescore replaces by their BM25
    over every term (``first_stage`` is then ignored), before the sub-expression rescore of the ``rerank_window``.
    No posting list is walked but for those candidates; an equation outside the window is not in the list.

    Args:
        structure: the query formula's structure (`formula_structure`).
        k: how many equations.
        filters: filter clauses (`query_filters`).
        rerank_window: candidates rescored (0: no rerank).
        rerank_weight: weight of the shared sub-expressions in the rescore.
        first_stage: the terms matched first (None: all of them); needs a ``rerank_window``.
        candidate_sizes: weigh the shared sub-expressions by the larger size (the index must have `SIZE_FIELD`;
            a document without it counts as the query's size).
        span_kinds: the two kinds of sub-expressions matched (`SPAN_KINDS`: renamed and generalised; ``("e", "g")``
            for an index made before structure version 2, which holds spans with the letters kept).
        plugin: the cluster has eqsearch's plugin on every node (`engine.search.plugin`): the sub-expression
            rescore is its ``eqsearch_structure`` rescorer, the same scores from a list of spans instead of a query
            of one clause per span.
        forward_index: with ``plugin``, the index stores each equation's forward index (`FORWARD_INDEX_FIELD`) and
            every node has the plugin's BM25 rescorer: the window's BM25 (the other terms' with a ``first_stage``,
            every term's after the kNN) is its ``eqsearch_bm25`` rescorer, the same scores without posting lists.
        structure_vector: the query's structure-bag vector: start from kNN on the index's (needs a
            ``rerank_window`` and a ``knn_window``).
        knn_window: how many nearest the kNN first stage finds (at least ``k``).
        knn_candidates: the kNN's ``num_candidates`` with a ``structure_vector``.
        rare_rule: with ``plugin`` and ``forward_index`` (and the ``eqsearch_terms`` query on every node), the first
            stage's rare terms are chosen by the shard by this rule (`engine.search.termstats.RareRule`) in place of
            ``first_stage``: the plugin's ``eqsearch_terms`` query of every term, then its BM25 rescorer of the terms
            the rule does not keep; the same scores and windows as ``first_stage`` chosen by the client from the same
            frequencies. Ignored without a ``rerank_window`` or with a ``structure_vector``.
        term_at_a_time: with ``rare_rule`` (and a plugin that scores it so on every node), the shard scores that first
            stage term at a time and keeps its best ``max(k, rerank_window)`` hits among those ``filters`` let
            through (sent to it as well), the only ones the search reads: the same hits and scores.

    Returns:
        The search body.
    """
    knn_stage = structure_vector is not None and rerank_window > 0 and knn_window > 0
    native_bm25 = plugin and forward_index
    knn_window = max(knn_window, k)
    counts = _term_counts(structure)
    shard_rare = (
        rare_rule is not None and native_bm25 and rerank_window > 0 and not knn_stage and len(counts) <= MAX_BM25_TERMS
    )
    staged = first_stage is not None and rerank_window > 0 and not knn_stage and not shard_rare
    top = max(k, rerank_window) if term_at_a_time else 0
    match = (
        terms_query(counts, rare_rule, top, filters)
        if shard_rare
        else _terms_match(structure, first_stage if staged else None)
    )
    body: dict[str, Any] = {
        "query": {"bool": {"must": [match], "filter": filters}},
        "size": k,
        "_source": {"excludes": list(VECTOR_FIELDS)},
        "track_total_hits": False,
    }
    rescores: list[dict[str, Any]] = []
    rest = [] if first_stage is None or not staged else sorted(set(structure.tokens) - set(first_stage))
    first_stage = first_stage if knn_stage else None
    if knn_stage:
        knn: dict[str, Any] = {
            "field": STRUCTURE_VECTOR_FIELD,
            "query_vector": [float(x) for x in (structure_vector if structure_vector is not None else ())],
            "k": knn_window,
            "num_candidates": max(knn_candidates, knn_window),
        }
        if filters:
            knn["filter"] = {"bool": {"filter": list(filters)}}
        body["query"] = {"knn": knn}
        if first_stage:  # the union of the kNN window and the rare terms' matches, the kNN's first
            knn["boost"] = KNN_UNION_BOOST
            rare = _terms_match(structure, first_stage)
            body["query"] = {"bool": {"should": [{"knn": knn}, rare], "filter": filters}}
            knn_window += rerank_window
        # the cosine only chose the window: BM25 over every term takes its place
        rescores.append(_window_bm25(structure, None, window=knn_window, replace=True, forward_index=native_bm25))
    elif staged and rest:
        rescores.append(_window_bm25(structure, rest, window=rerank_window, replace=False, forward_index=native_bm25))
    elif shard_rare:
        rescores.append(bm25_rescore(counts, window=rerank_window, replace=False, except_rare=rare_rule))
    if plugin:
        selected = [span for kind in span_kinds for span in _rerank_spans(structure, kind)]
        if rerank_window > 0 and rerank_weight > 0 and selected:
            rescores.append(
                structure_rescore(
                    selected,
                    query_size=max(structure.size, 1),
                    weight=rerank_weight,
                    window=rerank_window,
                    candidate_sizes=candidate_sizes,
                )
            )
    spans = [] if plugin else [m for kind in span_kinds if (m := _span_match(structure, kind, rerank_weight))]
    if rerank_window > 0 and rerank_weight > 0 and spans:
        # The match_all clause makes every candidate match with 1 + the shared sub-expressions, so that the
        # multiplication keeps the BM25 order of the candidates that share nothing.
        if candidate_sizes:
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
        rescores.append(
            {
                "window_size": rerank_window,
                "query": {
                    "rescore_query": rescore,
                    "query_weight": 1.0,
                    "rescore_query_weight": 1.0,
                    "score_mode": "multiply",
                },
            }
        )
    if rescores:
        body["rescore"] = rescores[0] if len(rescores) == 1 else rescores
    return body


#: The kNN's boost in a union with the rare terms: a cosine score in [0, 1] times this tops any BM25 of the rare terms,
#: so that the whole kNN window lies in the rescore window, whatever the rare terms add to it.
KNN_UNION_BOOST = 1e4


def structure_rerank_window(ranking: FormulaRanking, depth: int) -> int:
    """How many structural candidates the rerank covers: the ranking's rerank window, or the list's ``depth`` when
    that is deeper, so that a deep evaluation reranks what it reads (0: the ranking has no rerank)."""
    return max(ranking.rerank_window, depth) if ranking.rerank_window else 0
