"""The structural list: its request body (BM25 over a formula's structural terms, its first stage, then its rerank by
shared sub-expressions, as the query plan's `engine.search.plan.StructureList` says) and the rare terms it may start
from.

The rerank rescores the list's top window by the largest sub-expressions each candidate shares with the query
(`engine.model.structure` spans), weighed by the larger of the two formulas' sizes. Without scripting (the minimal
distribution has no Painless) it is a ``function_score`` over a ``dis_max`` of one constant-score term per span; where
the plan runs it inside the node, the plugin's requests give the same scores (`engine.search.plugin`). The body is a
pure function of its arguments.

The list can start from the query's rare terms (`RareRule`, `rarest_terms`): BM25 over every structural term of a
query (some eighty, many in a large share of all equations: ``=``, ``V:x``) walks long posting lists, most of a
formula query's cost at a million equations, while the rare terms carry most of the score
(``docs/decisions/structural-first-stage.md``). Which terms are rare is read from the index by one cached
``_termvectors`` request (`TermStatistics`; a failed read never fails a search: the query then uses all of its terms),
or, where every node has the plugin and the index stores the forward index, chosen by each shard itself from the rule
the list sends (the plan's ``shard`` first stage, the plugin's ``eqsearch_terms`` query), with the same arithmetic.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eqsearch.engine.index.mappings import SIZE_FIELD, SPANS_FIELD, STRUCTURE_FIELD, VECTOR_FIELDS, span_term
from eqsearch.engine.model.structure import FormulaStructure
from eqsearch.engine.search.plugin import bm25_rescore, structure_rescore, terms_query

if TYPE_CHECKING:
    from eqsearch.engine.search.plan import StructureList

__all__ = [
    "MAX_RERANK_SPANS",
    "MIN_RERANK_SPAN",
    "RARE_AT_LEAST",
    "RareRule",
    "TermFrequencies",
    "TermStatistics",
    "rarest_terms",
    "structure_body",
]


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


def _rerank_spans(structure: FormulaStructure, kind: str, short: bool) -> list[tuple[str, int]]:
    """The query's sub-expressions of one kind (``r`` renamed, ``e`` exact, ``g`` generalised) the rerank looks
    for, as (term, size): those of at least `MIN_RERANK_SPAN` symbols, the `MAX_RERANK_SPANS` largest, each as the
    index writes it (`span_term` where ``short``, the index's mapping version `SHORT_SPANS_SINCE` on)."""
    spans = [
        (span, span_size)
        for span, span_size in structure.spans.items()
        if span.startswith(kind) and span_size >= MIN_RERANK_SPAN
    ]
    if len(spans) > MAX_RERANK_SPANS:
        spans = sorted(spans, key=lambda item: (-item[1], item[0]))[:MAX_RERANK_SPANS]
    if not short:
        return sorted(spans)
    terms: dict[str, int] = {}
    for span, span_size in spans:
        term = span_term(span)
        terms[term] = max(terms.get(term, 0), span_size)
    return sorted(terms.items())


def _span_match(structure: FormulaStructure, kind: str, weight: float, short: bool) -> dict[str, Any] | None:
    """The largest of the query's sub-expressions of one kind (`_rerank_spans`) that a candidate shares, as
    ``weight`` x its size / the query's size: a ``dis_max`` of one constant-score term per span."""
    size = max(structure.size, 1)
    queries = [
        {"constant_score": {"filter": {"term": {SPANS_FIELD: span}}, "boost": weight * span_size / size}}
        for span, span_size in _rerank_spans(structure, kind, short)
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
        selected = [span for kind in plan.span_kinds for span in _rerank_spans(structure, kind, plan.short_spans)]
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
    spans = [m for kind in plan.span_kinds if (m := _span_match(structure, kind, plan.rerank_weight, plan.short_spans))]
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


#: The fewest terms the first stage keeps (when the query has them), whatever their share.
RARE_AT_LEAST = 8


@dataclass(frozen=True)
class TermFrequencies:
    """What the index says of some terms.

    Attributes:
        shares: term -> the share of the documents that hold it (0 for a term no document holds).
        documents: the documents with the field (of the shard that answered).
    """

    shares: dict[str, float]
    documents: int


class TermStatistics:
    """Document frequencies of structural terms in one index, cached.

    Args:
        termvectors: the client's ``termvectors`` method (``Elasticsearch.termvectors``).
        field: the structural terms' field.
        max_terms: terms kept in the cache (least recently used go first).
        ttl_s: how long a frequency is trusted (the index grows and shrinks under ingest jobs).
        clock: seconds, for tests.
    """

    def __init__(
        self,
        termvectors: Callable[..., Any],
        field: str,
        *,
        max_terms: int = 200_000,
        ttl_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._termvectors = termvectors
        self.field = field
        self.max_terms = max_terms
        self.ttl_s = ttl_s
        self._clock = clock
        self._cache: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()
        self._documents: dict[str, int] = {}
        self._lock = threading.Lock()  # web servers search from several threads
        self.requests = 0

    def frequencies(self, index: str, terms: Iterable[str]) -> TermFrequencies | None:
        """The share of the documents holding each term, or None when the index could not say (then the caller uses
        all terms).

        Args:
            index: the index or alias (one index behind it).
            terms: the terms.
        """
        now = self._clock()
        wanted = list(dict.fromkeys(terms))
        found: dict[str, float] = {}
        missing: list[str] = []
        with self._lock:
            for term in wanted:
                cached = self._cache.get((index, term))
                if cached is not None and now - cached[1] < self.ttl_s:
                    self._cache.move_to_end((index, term))
                    found[term] = cached[0]
                else:
                    missing.append(term)
        if missing:
            answer = self._read(index, missing)
            if answer is None:
                return None
            read, documents = answer
            with self._lock:
                self._documents[index] = documents
                for term, share in read.items():
                    self._cache[(index, term)] = (share, now)
                    self._cache.move_to_end((index, term))
                while len(self._cache) > self.max_terms:
                    self._cache.popitem(last=False)
            found.update(read)
        return TermFrequencies(found, self._documents.get(index, 0))

    def _read(self, index: str, terms: Sequence[str]) -> tuple[dict[str, float], int] | None:
        self.requests += 1
        try:
            response = self._termvectors(
                index=index,
                doc={self.field: " ".join(terms)},
                fields=[self.field],
                term_statistics=True,
                field_statistics=True,
                positions=False,
                offsets=False,
                payloads=False,
            )
        except Exception:  # any failure (a missing index, a dead node) only costs the first stage
            return None
        vectors = response.get("term_vectors", {}).get(self.field)
        if not vectors:
            return dict.fromkeys(terms, 0.0), 0
        documents = int(vectors.get("field_statistics", {}).get("doc_count", 0))
        stats = vectors.get("terms", {})
        return {term: int(stats.get(term, {}).get("doc_freq", 0)) / max(documents, 1) for term in terms}, documents


@dataclass(frozen=True)
class RareRule:
    """`rarest_terms`'s rule as a request carries it to the plugin, which applies it in the shard (``rare`` of the
    ``eqsearch_terms`` query, ``except_rare`` of the ``eqsearch_bm25`` rescorer).

    Attributes:
        max_share: the largest share of the documents a rare term is in.
        min_matches: how many documents the least rare term kept must be in (the rerank window).
        at_least: the fewest terms kept.
    """

    max_share: float
    min_matches: int
    at_least: int = RARE_AT_LEAST

    def request(self) -> dict[str, float | int]:
        """The rule's object in a request body."""
        return {"max_share": self.max_share, "min_matches": self.min_matches, "at_least": self.at_least}


def rarest_terms(
    terms: Sequence[str],
    frequencies: TermFrequencies,
    *,
    max_share: float,
    min_matches: int,
    at_least: int = RARE_AT_LEAST,
) -> list[str] | None:
    """The terms the structural list matches first: the distinct terms found in at most ``max_share`` of the
    documents, then more of the rarest until there are ``at_least`` and one of them alone is in ``min_matches``
    documents, so that the first stage matches at least that many (a small index, or a query of common terms,
    still fills the rescore window); None when that leaves no term out (then the query uses them all). Terms no
    document holds are left out: they cost nothing and score nothing. Ties keep the query's order."""
    shares = frequencies.shares
    distinct = [term for term in dict.fromkeys(terms) if shares.get(term, 0.0) > 0]
    order = sorted(distinct, key=lambda term: shares[term])  # stable: ties in query order
    kept = 0
    for term in order:
        enough = kept >= at_least and shares[order[kept - 1]] * frequencies.documents >= min_matches
        if shares[term] > max_share and enough:
            break
        kept += 1
    return order[:kept] if kept < len(distinct) else None
