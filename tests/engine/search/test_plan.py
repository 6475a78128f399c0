"""The query plan, decided without a node: which lists run and how deep, the structural list's first stage and what
runs inside the node by what the cluster and the index offer, where MaxSim's scores come from, and the warnings."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest
from eqsearch.engine.model.structure import SPAN_KINDS, formula_structure
from eqsearch.engine.search.plan import Offer, PlanSettings, make_plan
from eqsearch.engine.search.query import RANKING_FIELDS, HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from search_plans import FormulaParts, planned

STRUCTURE = formula_structure(None, "x^2 + y^2 = z^2")
VECTOR = np.ones(4, dtype=np.float32)
PLUGIN = Offer(plugin=True, forward_index=True)


def test_the_default_plans_the_structure_and_embedding_lists_and_the_words_with_keywords():
    formula_only = planned(HybridQuery(latex="x"), DEFAULT_RANKER, structure=STRUCTURE, vector=VECTOR)
    assert formula_only.lists == ("structure", "embedding") and formula_only.depth == 100
    assert formula_only.formula_fields == RANKING_FIELDS[:1]  # no paper read: nothing fuses by paper
    both = planned(HybridQuery(latex="x", keywords="energy"), DEFAULT_RANKER, structure=STRUCTURE, vector=VECTOR)
    assert (
        both.lists == ("structure", "embedding", "text", "paper_contexts", "papers")
        and both.formula_fields == RANKING_FIELDS
    )
    assert not both.words_displays_only
    words = planned(HybridQuery(keywords="energy", fusion="rrf"), DEFAULT_RANKER)
    assert (
        words.lists == ("text", "paper_contexts", "papers") and words.words_displays_only
    )  # every fusion weighs the papers' words
    assert planned(HybridQuery(keywords="energy", inline="only")).words_displays_only is False
    formula_side_off = planned(
        HybridQuery(latex="x", keywords="e", formula_weight=0.0), DEFAULT_RANKER, structure=STRUCTURE, vector=VECTOR
    )
    assert formula_side_off.lists == ("text", "paper_contexts", "papers")


def test_the_first_stage_and_the_node_follow_what_the_cluster_offers():
    query = HybridQuery(latex="x")
    ranking = get_ranker(DEFAULT_RANKER)
    plain = planned(query, ranking, structure=STRUCTURE).structure
    assert plain.first_stage == "rare-terms" and not plain.native and not plain.forward_index and plain.top == 0
    assert plain.rerank_window == 300 and plain.rare_rule is None
    rescorer_only = planned(query, ranking, structure=STRUCTURE, offer=Offer(plugin=True)).structure
    assert rescorer_only.native and rescorer_only.first_stage == "rare-terms"  # an index without the forward index
    shard = planned(query, ranking, structure=STRUCTURE, offer=PLUGIN).structure
    assert shard.first_stage == "shard" and shard.native and shard.forward_index
    assert shard.top == 300 and shard.rare_rule.request() == {"max_share": 0.05, "min_matches": 300, "at_least": 8}
    deep = planned(query, ranking, structure=STRUCTURE, offer=PLUGIN, depth=1000).structure
    assert deep.depth == deep.rerank_window == deep.top == 1000  # the rerank and the shard's top cover what is read
    every_term = planned(query, "structure+embedding+rerank/all-terms", structure=STRUCTURE, offer=PLUGIN).structure
    assert every_term.first_stage == "all-terms" and every_term.top == 0


def test_a_pattern_reaches_deeper_in_the_structural_list_only():
    formula = FormulaParts(STRUCTURE, VECTOR, pattern=type("P", (), {"has_variables": True})())
    plan = make_plan(HybridQuery(latex="?a"), formula, get_ranker(DEFAULT_RANKER), Offer(), PlanSettings())
    assert plan.depth == 100 and plan.structure.depth == 300


def test_an_older_index_or_another_encoder_is_planned_around_with_a_warning():
    older = Offer(rerank_fields=False, rerank_warning="migrate it")
    plan = planned(HybridQuery(latex="x"), DEFAULT_RANKER, structure=STRUCTURE, vector=VECTOR, offer=older)
    assert plan.structure.span_kinds == ("e", "g") and not plan.structure.candidate_sizes
    assert plan.warnings == ("migrate it",)
    assert planned(HybridQuery(latex="x"), DEFAULT_RANKER, structure=STRUCTURE).structure.span_kinds == SPAN_KINDS
    other = Offer(encoder_mismatch="re-embed it")
    plan = planned(HybridQuery(latex="x"), DEFAULT_RANKER, structure=STRUCTURE, vector=VECTOR, offer=other)
    assert plan.lists == ("structure",) and plan.warnings == ("re-embed it",)
    context = Offer(text_encoder_mismatch="migrate the context")
    plan = planned(HybridQuery(keywords="bell"), "structure+embedding+rerank+context", offer=context, context=True)
    assert plan.lists == ("text", "paper_contexts", "papers") and plan.warnings == ("migrate the context",)


def test_a_page_past_the_depth_is_planned_empty_with_a_warning():
    plan = planned(HybridQuery(latex="x", page=11, size=10), DEFAULT_RANKER, structure=STRUCTURE)
    assert plan.past_depth and "page 11 starts past them" in plan.warnings[0]


def test_maxsim_scores_come_from_the_lists_where_the_index_stores_node_vectors():
    nodes = np.ones((3, 4), dtype=np.float32)
    formula = FormulaParts(STRUCTURE, VECTOR, nodes)

    def plan(ranker: str, offer: Offer, query: HybridQuery = HybridQuery(latex="x")):  # noqa: B008
        return make_plan(query, formula, get_ranker(ranker), offer, PlanSettings())

    service_side = plan("structure+embedding+rerank+maxsim", PLUGIN).maxsim
    assert not service_side.in_lists and service_side.window == 30 and service_side.list_window == 45
    in_lists = plan("structure+embedding+rerank+maxsim", replace(PLUGIN, node_vectors=True)).maxsim
    assert in_lists.in_lists
    assert plan("structure+embedding+rerank+maxsim-in-node", PLUGIN).maxsim is None  # only inside the node
    stored = replace(PLUGIN, node_vectors=True)
    assert plan("structure+embedding+rerank+maxsim-in-node", stored).maxsim.in_lists
    with_words = HybridQuery(latex="x", keywords="energy")
    assert plan("structure+embedding+rerank+maxsim-in-node", stored, with_words).maxsim is None  # formula-only
    assert plan("maxsim", PLUGIN).depth == 300  # the lists fill the MaxSim window
    assert plan(DEFAULT_RANKER, stored).maxsim is None


def test_a_plan_is_immutable():
    plan = planned(HybridQuery(latex="x"), DEFAULT_RANKER, structure=STRUCTURE)
    with pytest.raises(FrozenInstanceError):
        plan.depth = 5  # type: ignore[misc]
