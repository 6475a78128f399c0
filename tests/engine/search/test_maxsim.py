"""The MaxSim rerank (Amador and Zanibbi, ICTIR'25): scores on hand-computed examples, the window's rescore, the
candidate cache, the rankers' checks, and the rerank end to end on a real node with the shipped node-states sidecar."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from eqsearch.engine.search.maxsim import NodeVectorCache, maxsim_rerank, maxsim_scores
from eqsearch.engine.search.rankers import RANKERS, FormulaRanking, get_ranker
from formula_collection import DETERMINANT, EULER, FORMULAS, LIMIT, numbered

IN_NODE = "structure+embedding+rerank+maxsim-in-node"


def test_maxsim_is_the_mean_over_query_nodes_of_the_best_candidate_node():
    query = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    candidates = [
        np.array([[2.0, 0.0], [1.0, 1.0]]),  # q1 -> (2,0): cos 1; q2 -> (1,1): cos 1/√2
        np.array([[0.0, 3.0]]),  # q1 -> cos 0; q2 -> cos 1
        np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]),  # both exactly: 1
        np.zeros((0, 2)),  # no nodes: never ahead of a candidate with some
    ]
    scores = maxsim_scores(query, candidates)
    assert scores[:3] == pytest.approx([(1 + 1 / math.sqrt(2)) / 2, 0.5, 1.0], abs=1e-6)
    assert scores[3] == -np.inf
    # raw inner products: q1 -> 2, q2 -> 1 for the first; q1 -> 0, q2 -> 3 for the second
    assert maxsim_scores(query, candidates[:2], normalise=False) == pytest.approx([1.5, 1.5])
    assert maxsim_scores(query, []).shape == (0,)


def test_the_rerank_reorders_the_window_only_and_keeps_it_ahead():
    ranking = [("a", 9.0), ("b", 7.0), ("c", 5.0), ("d", 4.0), ("e", 1.0)]
    maxsim = {"a": 0.2, "b": 0.4, "c": 0.9}
    alone = maxsim_rerank(ranking, maxsim, window=3, weight=1.0)
    assert [doc for doc, _ in alone] == ["c", "b", "a", "d", "e"]
    assert min(score for doc, score in alone[:3]) > max(score for doc, score in alone[3:])
    # half and half: a = 0.5·1 + 0.5·0 = 0.5, b = 0.5·0.5 + 0.5·(0.2/0.7) ≈ 0.393, c = 0 + 0.5 = 0.5 (a first: ties
    # keep the fused order)
    blended = maxsim_rerank(ranking, maxsim, window=3, weight=0.5)
    assert [doc for doc, _ in blended] == ["a", "c", "b", "d", "e"]
    assert blended[2][1] == pytest.approx(1 + 0.5 * 0.5 + 0.5 * (0.2 / 0.7), abs=1e-6)
    # a candidate without node vectors (no MathML) keeps its fused score in MaxSim's place: a = 1 stays first, c's
    # MaxSim (1 after normalisation) lifts it above b (0)
    assert [doc for doc, _ in maxsim_rerank(ranking, {"b": 0.1, "c": 0.3}, window=3, weight=1.0)] == [
        "a",
        "c",
        "b",
        "d",
        "e",
    ]
    assert maxsim_rerank([], {}, window=3, weight=1.0) == []


def test_the_cache_computes_each_candidate_once_and_drops_the_least_recent():
    calls: list[list[str]] = []

    def compute(ids: list[str]) -> dict[str, np.ndarray]:
        calls.append(ids)
        return {doc: np.full((2, 3), float(len(doc))) for doc in ids if doc != "bad"}

    cache = NodeVectorCache(compute, size=2)
    first = cache.get(["a", "bb", "bad"])
    assert set(first) == {"a", "bb"} and first["bb"].dtype == np.float16
    assert set(cache.get(["a", "bb"])) == {"a", "bb"} and calls == [["a", "bb", "bad"]]
    cache.get(["ccc"])  # "bb" was used last, "a" before it: "a" goes
    cache.get(["a", "bb"])
    assert calls[-1] == ["a"] and cache.computed == 4


def test_rankers_check_the_maxsim_settings():
    assert get_ranker("maxsim").maxsim_window > 0 and get_ranker("maxsim").structure == 0
    fused = RANKERS["structure+embedding+rerank+maxsim"]
    assert fused.maxsim_window > 0 and 0 < fused.maxsim_weight < 1 and fused.rerank_window > 0
    with pytest.raises(ValueError, match="MaxSim window needs a weight"):
        FormulaRanking("x", "", embedding=1.0, maxsim_window=100)
    with pytest.raises(ValueError, match="MaxSim window needs a weight"):
        FormulaRanking("x", "", embedding=1.0, maxsim_window=100, maxsim_weight=1.5)
    with pytest.raises(ValueError, match="node_vectors or node_states"):
        FormulaRanking("x", "", embedding=1.0, maxsim_window=100, maxsim_weight=1.0, maxsim_nodes="edges")
    for flag in ("maxsim_in_node", "maxsim_formula_only"):
        with pytest.raises(ValueError, match="need a MaxSim window"):
            FormulaRanking("x", "", embedding=1.0, **{flag: True})
    # the MaxSim ranker's rerank, in the node only, of formula-only searches
    default = get_ranker(IN_NODE)
    assert default.maxsim_in_node and default.maxsim_formula_only and not fused.maxsim_in_node
    plain = replace(default, maxsim_in_node=False, maxsim_formula_only=False)
    assert replace(plain, name=fused.name, description=fused.description) == fused


@pytest.mark.es
def test_the_in_node_ranker_goes_without_maxsim_where_the_index_stores_no_node_vectors(es_client, index_name):
    """An index without node vectors: the in-node MaxSim ranker ranks as structure+embedding+rerank, the same
    results, and the service computes no candidate's node vectors."""
    from eqsearch.engine.latex import KatexConverter
    from eqsearch.engine.model import load_encoder
    from eqsearch.engine.search import HybridQuery
    from eqsearch.evaluation.formulas import formula_ranking, indexed_collection

    encoder = load_encoder()
    with (
        KatexConverter() as converter,
        indexed_collection(
            es_client, encoder, converter, list(COLLECTION.items()), "test", index_prefix=index_name
        ) as indexed,
    ):
        default = indexed.service(encoder, converter, ranking=get_ranker(IN_NODE), depth=20)
        before = indexed.service(encoder, converter, ranking=get_ranker("structure+embedding+rerank"), depth=20)
        assert default.plan(HybridQuery(latex="x^2")).maxsim is None
        for latex in (r"\frac{x^2 + x + c}{x^2 + 2x + c}", r"a^2 + b^2 = c^2"):
            assert formula_ranking(default, latex, 20) == formula_ranking(before, latex, 20)
        default.search(HybridQuery(latex=r"\sum_{k=0}^{n}\binom{n}{k}k", size=5))
        assert default.maxsim.vectors.computed == 0


COLLECTION = numbered(*FORMULAS, EULER, LIMIT, DETERMINANT)


@pytest.mark.es
@pytest.mark.parametrize("name", ["maxsim", "structure+embedding+rerank+maxsim"])
def test_the_maxsim_rankers_run_end_to_end_through_the_production_path(es_client, index_name, name):
    """The real ingest job, the shipped bundle and its sidecar, the real search service: the window is reranked by
    MaxSim (the candidates' node vectors come from their stored MathML, once) and the right formulas come first."""
    from eqsearch.engine.latex import KatexConverter
    from eqsearch.engine.model import load_encoder
    from eqsearch.engine.search import HybridQuery
    from eqsearch.evaluation.formulas import indexed_collection

    encoder = load_encoder()
    ranking = get_ranker(name)
    with (
        KatexConverter() as converter,
        indexed_collection(
            es_client, encoder, converter, list(COLLECTION.items()), "test", index_prefix=index_name
        ) as indexed,
    ):
        service = indexed.service(encoder, converter, ranking=ranking, depth=20)
        # the node states, or (the share) their fixed 64-d projection
        assert service.node_encoder is not None and service.node_encoder.dim == (512 if name == "maxsim" else 64)
        reranked: list[list[tuple[str, float]]] = []
        inner = service.maxsim.rerank
        service.maxsim.rerank = lambda ranking, nodes, *more: (
            reranked.append(inner(ranking, nodes, *more)) or reranked[-1]
        )
        results = service.search(HybridQuery(latex=r"\frac{x^2 + x + c}{x^2 + 2x + c}", size=5))
        assert {hit.paper_id for hit in results.hits[:2]} == {"1", "2"}
        assert reranked and all(score >= 1.0 for _, score in reranked[0][: ranking.maxsim_window])
        assert service.maxsim.vectors.computed == len(reranked[0][: ranking.maxsim_window])
        service.search(HybridQuery(latex=r"\frac{x^2 + x + c}{x^2 + 2x + c}", size=5, page=2))
        assert service.maxsim.vectors.computed == len(reranked[0][: ranking.maxsim_window])  # the next page: cached
        results = service.search(HybridQuery(latex=r"\sum_{k=0}^{n}\binom{n}{k}k", size=5))
        assert {hit.paper_id for hit in results.hits[:2]} == {"3", "4"}
        # a service that asks each list for 2 candidates still fills the MaxSim window: its lists go that deep
        shallow = indexed.service(encoder, converter, ranking=ranking, depth=2)
        shallow.search(HybridQuery(latex=r"a^2 + b^2 = c^2", size=2))
        assert shallow.maxsim.vectors.computed >= 6


def test_the_lists_say_which_hits_they_scored():
    """Each formula list's top hits of the plan's list window were scored (with or without node vectors), and any
    deeper hit that brought a score (a tie with the window's last); the text lists and other deeper hits were not: a
    fused window candidate among those is asked of the rescorer."""
    from eqsearch.engine.search.maxsim import scored_by_node
    from eqsearch.engine.search.plugin import MAXSIM_WINDOW_RESCORER, maxsim_window_rescore

    assert maxsim_window_rescore(45) == {"window_size": 45, MAXSIM_WINDOW_RESCORER: {}}
    lists = {
        "structure": [(f"s{i}", 1.0) for i in range(5)],
        "embedding": [(f"e{i}", 1.0) for i in range(5)],
        "text": [("t0", 1.0)],
    }
    assert scored_by_node(lists, {"s0": 0.5, "e1": 0.25}, 2) == {"s0", "s1", "e0", "e1"}
    tied = scored_by_node(lists, {"s0": 0.5, "s3": 0.75}, 2)  # a hit below the window that brought a score: a tie
    assert tied == {"s0", "s1", "s3", "e0", "e1"}


def test_the_extension_asks_what_the_rescorer_asks():
    """One request for both (the same vectors, dims and field): the node then scores both the same way."""
    from eqsearch.engine.search.plugin import MAXSIM_RESCORER, maxsim_body, maxsim_ext

    nodes = np.random.default_rng(3).normal(size=(5, 64)).astype(np.float32)
    ext = maxsim_ext(nodes, symmetric=True)
    assert ext == {MAXSIM_RESCORER: maxsim_body(["a"], nodes, symmetric=True)["rescore"][MAXSIM_RESCORER]}
    assert ext[MAXSIM_RESCORER]["dims"] == 64 and ext[MAXSIM_RESCORER]["symmetric"] is True
