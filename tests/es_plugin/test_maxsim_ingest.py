"""MaxSim over node vectors written by the real ingest job (``--node-vectors``), scored inside a real node by the
plugin, against the same rerank computed by the search service from the candidates' MathML (float32 node states):
the scores agree to the int8 rounding of both sides' unit rows, and the rankings are the same. The ranked lists
bring the MaxSim scores (the fetch phase's search extension): the same ranking and scores, to the last bit, as the
rescorer's second request, which is then not sent; only each list's top hits are scored, and a fused candidate
below them is asked of the rescorer alone: the same ranking again."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from eqsearch.engine.search import HybridQuery
from eqsearch.engine.search import maxsim as maxsim_module
from eqsearch.engine.search.maxsim import maxsim_scores, stored_maxsim_scores
from eqsearch.engine.search.plan import QueryPlan
from eqsearch.engine.search.rankers import get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.evaluation.formulas import formula_ranking, indexed_collection, read_formula_file
from formula_collection import ARQMATH_EXCERPT

DEV = ARQMATH_EXCERPT
RANKER = "structure+embedding+rerank+maxsim"


@pytest.fixture(scope="module")
def ingested(plugin_client, converter):
    """The development collection's first 400 formulas ingested with their node states; yields (indexed, encoder,
    topics)."""
    from eqsearch.engine.model import load_encoder

    encoder = load_encoder()
    formulas = read_formula_file(DEV / "collection.tsv", "visual_id")[:400]
    topics = [latex for _, latex in read_formula_file(DEV / "topics.tsv", "topic")][:8]
    with indexed_collection(
        plugin_client, encoder, converter, formulas, "dev", node_vectors=get_ranker(RANKER).maxsim_nodes
    ) as indexed:
        assert indexed.job.counts["equations_with_node_vectors"] > 300
        # one segment before any comparison: a background merge between two searches rebuilds the kNN graph, which
        # moves the embedding list's scores in their last bits (the tests compare rankings to the last bit)
        equations = f"{indexed.prefix}-equations"
        plugin_client.indices.forcemerge(index=equations, max_num_segments=1)
        plugin_client.indices.refresh(index=equations)
        yield indexed, encoder, topics


def test_maxsim_in_the_node_ranks_as_the_services_own(plugin_client, require_plugin, converter, ingested):
    require_plugin()
    indexed, encoder, topics = ingested
    ranking = get_ranker(RANKER)
    in_node = indexed.service(encoder, converter, ranking=ranking, depth=100)
    client = SearchService(
        plugin_client, encoder, converter, index_prefix=indexed.prefix, candidate_depth=100, ranking=ranking,
        plugin=False,
    )  # fmt: skip
    swaps = 0
    for latex in topics:
        node_run, client_run = formula_ranking(in_node, latex, 100), formula_ranking(client, latex, 100)
        node_scores, client_scores = dict(node_run), dict(client_run)
        assert set(node_scores) == set(client_scores)
        # the blended scores agree to the int8 rounding: 0.3 x a min-max normalised MaxSim moved by < 0.01
        assert max(abs(node_scores[doc] - client_scores[doc]) for doc in client_scores) < 0.005
        # and the rankings differ only where two candidates' scores lie that close: near-ties, swapped
        position = {doc: rank for rank, (doc, _) in enumerate(node_run)}
        for i, (a, score_a) in enumerate(client_run[:30]):
            for b, score_b in client_run[i + 1 : 30]:
                if position[a] > position[b]:
                    swaps += 1
                    assert score_a - score_b < 0.01, (latex, a, b)
        # the window's MaxSim scores themselves: int8 in the node against float32 here
        formula = in_node.formulas.get(read_query(latex))
        eq_ids = [f"{doc}:0" for doc, _ in client_run[: ranking.maxsim_window]]
        stored = stored_maxsim_scores(plugin_client, in_node.equations_alias, eq_ids, formula.nodes, symmetric=False)
        assert len(stored) > len(eq_ids) * 0.8
        floats = client.maxsim.vectors.get(eq_ids)
        for eq_id, score in stored.items():
            exact = maxsim_scores(formula.nodes, [floats[eq_id].astype(np.float32)])[0]
            assert abs(score - exact) < 0.01, eq_id
    assert swaps < 10 * len(topics)  # a few near-ties per topic, not a different ranking
    assert in_node.maxsim.vectors.computed == 0  # no candidate's node vectors were computed by the service
    assert client.maxsim.vectors.computed > 0


def _lists_window(window: int):
    """A plan variant: the formula lists bring the MaxSim scores of their top ``window`` hits (0: none)."""

    def variant(plan: QueryPlan) -> QueryPlan:
        return replace(plan, maxsim=replace(plan.maxsim, list_window=window)) if plan.maxsim else plan

    return variant


def _searches_of(client, index: str) -> int:
    """How many shard query phases the node has run on ``index`` (its search statistics)."""
    stats = client.indices.stats(index=index, metric="search")
    return int(stats["_all"]["total"]["search"]["query_total"])


def test_the_lists_bring_the_scores_the_second_request_gave(
    plugin_client, require_plugin, converter, ingested, monkeypatch
):
    require_plugin()
    indexed, encoder, topics = ingested
    ranking = get_ranker(RANKER)
    in_lists = indexed.service(encoder, converter, ranking=ranking, depth=100)
    second = indexed.service(encoder, converter, ranking=ranking, depth=100)
    second.plan_variant = _lists_window(0)  # the lists bring nothing: the rescorer's second request for the window
    alias = in_lists.equations_alias
    assert in_lists.plan(HybridQuery(latex=topics[0])).maxsim.in_lists
    shards = len({shard["shard"] for shard in plugin_client.cat.shards(index=alias, format="json")})
    asked = []  # the rescorer's requests, by either service
    rescorer = maxsim_module.stored_maxsim_scores
    monkeypatch.setattr(maxsim_module, "stored_maxsim_scores", lambda *a, **k: asked.append(a[2]) or rescorer(*a, **k))
    for latex in topics:
        before = _searches_of(plugin_client, alias)
        lists_run = formula_ranking(in_lists, latex, 100)
        middle, from_lists = _searches_of(plugin_client, alias), len(asked)
        second_run = formula_ranking(second, latex, 100)
        after = _searches_of(plugin_client, alias)
        assert lists_run == second_run  # the same ids and the same floats
        # one search fewer (no second request), unless a fused candidate lay below every list's scored top
        assert (after - middle) - (middle - before) == (0 if from_lists else shards)
        assert len(asked) == from_lists + 1  # the second service asked once
        del asked[:]
    assert in_lists.maxsim.vectors.computed == 0 and second.maxsim.vectors.computed == 0


def test_a_candidate_the_lists_did_not_score_is_asked_of_the_rescorer(
    plugin_client, require_plugin, converter, ingested, monkeypatch
):
    """The node scores each list's top hits of the plan's list window; a fused window candidate outside them (rare at
    the ranker's window) gets its score from the rescorer's request for it alone: here every list's top 3 only, so
    most of the window is asked, and the runs still equal the second request's."""
    require_plugin()
    indexed, encoder, topics = ingested
    ranking = get_ranker(RANKER)
    in_lists = indexed.service(encoder, converter, ranking=ranking, depth=100)
    in_lists.plan_variant = _lists_window(3)
    second = indexed.service(encoder, converter, ranking=ranking, depth=100)
    second.plan_variant = _lists_window(0)
    alias = in_lists.equations_alias
    for latex in topics[:4]:
        before = _searches_of(plugin_client, alias)
        assert formula_ranking(in_lists, latex, 100) == formula_ranking(second, latex, 100)
        assert _searches_of(plugin_client, alias) - before > 0
    assert in_lists.maxsim.vectors.computed == 0


def test_a_ranker_of_another_node_output_is_scored_by_the_service(plugin_client, converter, ingested):
    """The index's ``_meta`` names node_states: a ranker of the 64-d projections must not be sent to the node (its
    candidates would all lack vectors of its width), so the service computes its MaxSim itself."""
    indexed, encoder, topics = ingested
    ranking = replace(get_ranker(RANKER), name="projections", maxsim_nodes="node_vectors")
    service = indexed.service(encoder, converter, ranking=ranking, depth=20)
    service.search(HybridQuery(latex=topics[0], size=10))
    assert service.maxsim.vectors.computed > 0


def read_query(latex: str):
    from eqsearch.engine.model.patterns import read_query_variables

    return read_query_variables(latex)


def test_the_in_node_ranker_reranks_formula_only_searches(plugin_client, require_plugin, converter, ingested):
    """The in-node MaxSim ranker (`maxsim_in_node`, `maxsim_formula_only`): on an index with node vectors a
    formula-only search is the MaxSim ranker's exactly; with keywords it is structure+embedding+rerank's."""
    require_plugin()
    indexed, encoder, topics = ingested
    default = indexed.service(encoder, converter, ranking=get_ranker(f"{RANKER}-in-node"), depth=50)
    maxsim = indexed.service(encoder, converter, ranking=get_ranker(RANKER), depth=50)
    before = indexed.service(encoder, converter, ranking=get_ranker("structure+embedding+rerank"), depth=50)
    for latex in topics[:3]:
        assert formula_ranking(default, latex, 50) == formula_ranking(maxsim, latex, 50)
        with_words = HybridQuery(latex=latex, keywords="matrix", size=10)
        assert default.plan(HybridQuery(latex=latex)).maxsim.in_lists and default.plan(with_words).maxsim is None
        hits = [(hit.eq_id, hit.score) for hit in default.search(with_words).hits]
        assert hits == [(hit.eq_id, hit.score) for hit in before.search(with_words).hits]
    assert default.maxsim.vectors.computed == 0
