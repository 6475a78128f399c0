"""Metrics of KDD'20 §5-6 and ARQMath-style retrieval, on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from eqsearch.engine.graph import GraphArrays
from eqsearch.training.baseline import bag_of_words
from eqsearch.training.metrics import (
    bpref,
    greedy_chromatic_number,
    keyword_relevant,
    labelled_ranking_score,
    leave_one_out_accuracy,
    map_prime,
    ndcg_prime,
    precision_at,
    precision_prime_at,
    ranking_score,
    read_qrels,
    trec_metrics,
    unnormalized_average_precision,
)


def test_ranking_score_and_bounds() -> None:
    papers = np.array([[0, 0, 1], [2, 2, 3], [0, 0, 2]])
    r = ranking_score(np.array([0.9, 0.1, 0.5]), np.array([0.1, 0.9, 0.5]), papers, n_papers=4, delta=0.05)
    assert r.score == pytest.approx(1 / 3)  # a tie counts as a failure
    assert r.chromatic == 2  # triplets 0 and 2 share papers; 1 shares paper 2 with 2
    assert r.bound_eq9 == pytest.approx(math.sqrt(math.log(20) * 2 / 6))
    assert r.bound_theorem51 == pytest.approx(3 * math.sqrt(math.log(20) / 8))


def test_greedy_colouring_of_disjoint_triplets_uses_one_colour() -> None:
    assert greedy_chromatic_number(np.array([[0, 0, 1], [2, 3, 4], [5, 5, 6]])) == 1


def test_leave_one_out_and_labelled_ranking() -> None:
    sim = np.array([[1, 0.9, 0.1], [0.9, 1, 0.2], [0.1, 0.2, 1.0]])
    assert leave_one_out_accuracy(sim, [0, 0, 1]) == pytest.approx(2 / 3)
    assert labelled_ranking_score(sim, [0, 0, 1]) == pytest.approx(1.0)


def test_keyword_heuristic_and_precision() -> None:
    assert keyword_relevant("The Ising model on a graph", ["ising"])
    assert keyword_relevant("policy gradiant methods", ["policy gradient"])  # > 10 chars, distance 1
    assert not keyword_relevant("nothing here", ["lstm"])
    assert precision_at([True, False, True], 10) == pytest.approx(0.2)
    assert unnormalized_average_precision([True, False, True]) == pytest.approx(1 + 2 / 3)


def test_prime_metrics_remove_unjudged() -> None:
    judged = {"a": 3.0, "b": 0.0, "c": 2.0}
    ranking = ["x", "a", "y", "b", "c"]
    assert precision_prime_at(ranking, judged, k=2) == pytest.approx(0.5)
    assert map_prime(ranking, judged) == pytest.approx((1 + 2 / 3) / 2)
    ideal = 3 + 2 / math.log2(3)
    assert ndcg_prime(ranking, judged) == pytest.approx((3 + 2 / math.log2(4)) / ideal)
    assert bpref(ranking, judged) == pytest.approx((1 + 0) / 2)
    qrels = read_qrels(["q1 0 a 3", "q1 0 b 0", "q1 0 c 2"])
    assert trec_metrics({"q1": ranking}, qrels)["topics"] == 1


def test_bag_of_words_sums_one_hot_segments() -> None:
    g = GraphArrays(
        tag=np.array([0, 1, 1]),
        attr=np.array([0, 2, 0]),
        char=np.array([0, 3, 3]),
        pos=np.zeros(3, dtype=np.int64),
        edge_index=np.array([[0, 0], [1, 2]]),
        graph=np.zeros(3, dtype=np.int64),
        num_graphs=1,
    )
    v = bag_of_words([g], n_tags=2, n_attrs=2, n_chars=4)[0]
    assert v.tolist() == [1, 2, 0, 1, 0, 0, 2, 0]
