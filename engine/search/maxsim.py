"""MaxSim reranking of the formula side (Amador and Zanibbi, ICTIR'25): node vectors compared ColBERT-style.

A formula is a bag of node vectors (`engine.model.nodes`: the KDD'20 network's node states, or a fixed projection of
them; the states rank better than the bundle's own per-node projections). A candidate's MaxSim score is, for every
query node, the cosine of its most similar candidate node, averaged over the query's nodes (the paper sums them, eq.
4: for one query the mean ranks alike and stays in [-1, 1], so it blends with other scores without knowing the
query's size). It rewards a candidate that holds every part of the query somewhere, where
the pooled formula vector only compares averages.

It reranks the top ``window`` of the formula side after fusion (`maxsim_rerank`): their normalised fused score and
their normalised MaxSim score are blended by ``weight`` (1: MaxSim alone), and the window stays ahead of the rest,
whose order is kept. Elasticsearch's multi-vector field needs an Enterprise licence, so the scores come from one of
two places. Where the index stores the ranker's node vectors (int8 rows in one doc value, written at ingest where an
index opts in: `engine.index.documents.with_node_vectors`) and every node has eqsearch's plugin, the node scores
MaxSim: the ranked lists bring their top hits' scores, or its rescorer scores the candidates in a second request
(`stored_maxsim_scores`). Elsewhere the candidates' node vectors are computed here, from their stored MathML, and
cached by equation id (`NodeVectorCache`). Which vectors and why: ``docs/decisions/maxsim-node-vectors.md``; where
the scores come from and why: ``docs/decisions/maxsim-placement.md``. Pure functions on numpy arrays, the cache, the
search's step (`rerank_formula_side`, with `candidate_node_vectors` reading the candidates' MathML in one request),
and `MaxSimStage`, a search service's rerank with the choice of where its scores come from (the ranked lists, the
node, or here).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch
    from eqsearch.engine.model.nodes import NodeEncoder
    from eqsearch.engine.search.plan import MaxSimPlan
    from eqsearch.engine.search.requests import RankedLists

__all__ = [
    "MaxSimStage",
    "NodeVectorCache",
    "candidate_node_vectors",
    "maxsim_rerank",
    "maxsim_scores",
    "rerank_formula_side",
    "scored_by_node",
    "stored_maxsim_scores",
    "unit_rows",
]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero). Shapes: ``[n, d]`` -> ``[n, d]`` float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def maxsim_scores(
    query: np.ndarray, candidates: Sequence[np.ndarray], *, normalise: bool = True, symmetric: bool = False
) -> np.ndarray:
    """ColBERT's late-interaction score of each candidate: the mean over query nodes of the best candidate node.

    ``S(Q, C) = 1/|Q| · Σ_i max_j q_i · c_j`` (Amador and Zanibbi eq. 4, divided by ``|Q|``), with cosine
    similarities when ``normalise``. A candidate without nodes scores ``-inf``.

    Args:
        query: the query's node vectors.
        candidates: each candidate's node vectors.
        normalise: compare unit-length rows (cosine); False: raw inner products.
        symmetric: average the score with the candidate's own MaxSim against the query (every candidate node's
            best query node), so that what the candidate holds beyond the query also counts.

    Returns:
        One score per candidate, float32.

    Shapes:
        query: ``[|Q|, d]``; candidates: ``[|C_k|, d]`` each; returns ``[len(candidates)]``.
    """
    scores = np.full(len(candidates), -np.inf, dtype=np.float32)
    present = [k for k, c in enumerate(candidates) if len(c)]
    if not present or not len(query):
        return scores
    q = unit_rows(query) if normalise else np.asarray(query, dtype=np.float32)
    stacked = np.concatenate([np.asarray(candidates[k], dtype=np.float32) for k in present])
    c = unit_rows(stacked) if normalise else stacked
    similarities = q @ c.T  # [|Q|, Σ|C_k|]
    starts = np.cumsum([0] + [len(candidates[k]) for k in present[:-1]])
    best = np.maximum.reduceat(similarities, starts, axis=1)  # [|Q|, len(present)]
    scores[present] = best.mean(axis=0)
    if symmetric:
        sizes = np.diff(np.append(starts, similarities.shape[1]))
        back = np.add.reduceat(similarities.max(axis=0), starts) / sizes  # [len(present)]
        scores[present] = (scores[present] + back) / 2
    return scores


def _minmax(values: np.ndarray) -> np.ndarray:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return np.zeros_like(values)
    low, high = float(finite.min()), float(finite.max())
    out = (np.where(np.isfinite(values), values, low) - low) / (high - low) if high > low else np.ones_like(values)
    return out.astype(np.float32)


def maxsim_rerank(
    ranking: Sequence[tuple[str, float]], maxsim: Mapping[str, float], *, window: int, weight: float
) -> list[tuple[str, float]]:
    """The top ``window`` of a ranking rescored with MaxSim, the rest after them in their order.

    In the window, the score becomes ``1 + (1 - weight) · norm(score) + weight · norm(maxsim)`` (min-max
    normalised within the window; a candidate without a MaxSim score, such as a formula KaTeX could not convert,
    takes its normalised fused score in its place, so the rerank neither lifts nor sinks it); below it, the score is
    min-max normalised into ``[0, 1)``, so the reranked window stays ahead.

    Args:
        ranking: ``(id, score)``, best first.
        maxsim: id -> MaxSim score, for (some of) the window's ids.
        window: how many of the top are rescored.
        weight: MaxSim's share of the new score (0..1; 1: MaxSim alone orders the window).

    Returns:
        The reranked ``(id, score)``, best first.
    """
    head, tail = list(ranking[:window]), list(ranking[window:])
    if not head:
        return []
    fused = _minmax(np.array([score for _, score in head], dtype=np.float32))
    late = _minmax(np.array([maxsim.get(doc, -np.inf) for doc, _ in head], dtype=np.float32))
    missing = np.array([not math.isfinite(maxsim.get(doc, -math.inf)) for doc, _ in head])
    late[missing] = fused[missing]  # no node vectors (no MathML): no evidence either way, the fused score stands
    blended = (1.0 + (1.0 - weight) * fused + weight * late).tolist()  # float32 arithmetic, read back as floats
    order = sorted(range(len(head)), key=lambda k: (-blended[k], k))
    out = [(head[k][0], blended[k]) for k in order]
    if tail:
        rest = _minmax(np.array([score for _, score in tail], dtype=np.float32)) * 0.999
        out.extend(zip([doc for doc, _ in tail], rest.tolist(), strict=True))
    return out


class NodeVectorCache:
    """Node vectors of candidate equations by id, least recently used dropped first; thread-safe.

    Args:
        compute: id list -> ``{id: node vectors}`` for those it can (others are left out: no MathML, bad MathML).
        size: how many equations to keep (0: none). The vectors are kept in float16 (the 64-d node vectors of a
            50-node equation: 6.4 kB).
    """

    def __init__(self, compute: Callable[[list[str]], Mapping[str, np.ndarray]], size: int = 8192) -> None:
        self.compute = compute
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # equations encoded so far (the cost the cache saves)

    def get(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The node vectors of ``ids`` (float16), computing the missing ones in one call."""
        ids = list(dict.fromkeys(ids))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for doc in ids:
                if (vectors := self._items.get(doc)) is not None:
                    self._items.move_to_end(doc)
                    found[doc] = vectors
        missing = [doc for doc in ids if doc not in found]
        if missing:
            fresh = {doc: np.asarray(v, dtype=np.float16) for doc, v in self.compute(missing).items()}
            self.computed += len(fresh)
            found.update(fresh)
            if self.size > 0:
                with self._lock:
                    self._items.update(fresh)
                    while len(self._items) > self.size:
                        self._items.popitem(last=False)
        return found

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def rerank_formula_side(
    ranking: list[tuple[str, float]],
    query_nodes: np.ndarray,
    cache: NodeVectorCache,
    *,
    window: int,
    weight: float,
    symmetric: bool,
    stored: Callable[[list[str]], Mapping[str, float]] | None = None,
) -> list[tuple[str, float]]:
    """The formula side's top ``window`` reranked by MaxSim of the query's node vectors against the candidates'
    (from the cache, which computes the missing ones; or, with ``stored``, the node's scores from the vectors the
    index stores, `stored_maxsim_scores`); the rest keeps its order."""
    if not ranking or window <= 0:
        return ranking
    ids = [eq_id for eq_id, _ in ranking[:window]]
    if stored is not None:
        return maxsim_rerank(ranking, stored(ids), window=len(ids), weight=weight)
    nodes = cache.get(ids)
    scores = maxsim_scores(query_nodes, [nodes.get(eq_id, np.zeros((0, 1))) for eq_id in ids], symmetric=symmetric)
    maxsim = {eq_id: float(score) for eq_id, score in zip(ids, scores, strict=True)}
    return maxsim_rerank(ranking, maxsim, window=len(ids), weight=weight)


def stored_maxsim_scores(
    client: Elasticsearch, index: str, eq_ids: list[str], query_nodes: np.ndarray, *, symmetric: bool
) -> dict[str, float]:
    """MaxSim scores of ``eq_ids`` computed inside the node from their stored node vectors, by eqsearch's plugin
    (`engine.search.plugin.maxsim_body`): one request, no MathML fetched, no network run here. Candidates without
    stored vectors are left out (the rerank then keeps their fused score)."""
    from eqsearch.engine.search.errors import call
    from eqsearch.engine.search.plugin import MAXSIM_MISSING, maxsim_body

    body = maxsim_body(eq_ids, query_nodes, symmetric=symmetric)
    found = call(client.search, index=index, filter_path=["hits.hits._score", "hits.hits.fields"], **body)
    scores = {}
    for hit in (found.get("hits") or {}).get("hits") or ():
        if hit["_score"] is not None and hit["_score"] > MAXSIM_MISSING / 2:
            scores[hit["fields"]["eq_id"][0]] = float(hit["_score"])
    return scores


def candidate_node_vectors(
    client: Elasticsearch, index: str, node_encoder: NodeEncoder, eq_ids: list[str]
) -> dict[str, np.ndarray]:
    """The node vectors of stored equations, from their MathML fetched in one request (those without MathML, or
    whose MathML does not featurize, are left out)."""
    from eqsearch.engine.model.featurize import MathMLError
    from eqsearch.engine.search.requests import fetch_sources

    sources = fetch_sources(client, index, {"terms": {"eq_id": eq_ids}}, len(eq_ids), ["eq_id", "mathml"])
    found = [(s["eq_id"], s["mathml"]) for s in sources if s.get("mathml")]
    try:
        vectors = node_encoder.encode([mathml for _, mathml in found])
    except MathMLError:  # one bad document: encode the others one by one
        vectors = []
        for _, mathml in found:
            try:
                vectors.extend(node_encoder.encode([mathml]))
            except MathMLError:
                vectors.append(np.zeros((0, node_encoder.dim), dtype=np.float32))
    return {eq_id: v for (eq_id, _), v in zip(found, vectors, strict=True) if len(v)}


def scored_by_node(lists: Mapping[str, list[tuple[str, float]]], scores: Mapping[str, float], window: int) -> set[str]:
    """The hits the node scored for MaxSim when the formula ``lists`` brought their ``scores``: each formula list's top
    ``window`` (with or without node vectors) and any deeper hit that brought a score (the plugin's window never cuts
    a tie with its last); a fused candidate outside them is asked of the rescorer."""
    from eqsearch.engine.search.query import FORMULA_LISTS

    tops = {eq_id for name in FORMULA_LISTS for eq_id, _ in (lists.get(name) or [])[:window]}
    return tops | set(scores)


class MaxSimStage:
    """A search service's MaxSim rerank of the formula side, with the scores from where its plan says: brought by the
    ranked lists (the plugin's search extension, for each list's top hits; a candidate below them asked of the node's
    rescorer), or computed here from the candidates' MathML and cached (`NodeVectorCache`).

    Args:
        client: the cluster.
        alias: the equations alias.
        node_encoder: the service's node encoder (None: its ranking has no MaxSim).
        cache_size: how many candidates' node vectors are kept.
    """

    def __init__(
        self, client: Elasticsearch, alias: str, node_encoder: NodeEncoder | None, cache_size: int = 8192
    ) -> None:
        self.client = client
        self.alias = alias
        self.node_encoder = node_encoder
        self.vectors = NodeVectorCache(self._candidate_nodes, cache_size)

    def rerank(
        self, ranking: list[tuple[str, float]], query_nodes: np.ndarray, plan: MaxSimPlan, found: RankedLists
    ) -> list[tuple[str, float]]:
        """The formula side's top ``plan.window`` reranked by MaxSim against ``query_nodes``: from the scores the
        ranked lists brought (``found.maxsim``; a candidate they did not score asked of the node's rescorer), or
        computed here."""
        stored = None
        if plan.in_lists:

            def stored(ids: list[str]) -> dict[str, float]:
                scores = {eq_id: found.maxsim[eq_id] for eq_id in ids if eq_id in found.maxsim}
                unscored = [eq_id for eq_id in ids if eq_id not in found.maxsim_scored]
                if unscored:  # below every list's scored top: the rescorer's request, for these alone
                    more = stored_maxsim_scores(
                        self.client, self.alias, unscored, query_nodes, symmetric=plan.symmetric
                    )
                    scores.update(more)
                return scores

        return rerank_formula_side(
            ranking,
            query_nodes,
            self.vectors,
            window=plan.window,
            weight=plan.weight,
            symmetric=plan.symmetric,
            stored=stored,
        )

    def _candidate_nodes(self, eq_ids: list[str]) -> dict[str, np.ndarray]:
        if self.node_encoder is None:
            return {}
        return candidate_node_vectors(self.client, self.alias, self.node_encoder, eq_ids)
