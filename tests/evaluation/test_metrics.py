"""Metrics of KDD'20 §5-6 and ARQMath-style retrieval, and the paired paper bootstrap, on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from eqsearch.engine.model.graph import GraphArrays
from eqsearch.evaluation.baseline import bag_of_words
from eqsearch.evaluation.metrics import (
    bpref,
    greedy_chromatic_number,
    keyword_relevant,
    labelled_ranking_score,
    leave_one_out_accuracy,
    map_prime,
    ndcg_prime,
    nearest_neighbour_hits,
    paired_bootstrap_difference,
    precision_at,
    precision_prime_at,
    ranking_score,
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
    assert nearest_neighbour_hits(sim, ["a", "a", "b"]).tolist() == [True, True, False]
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


def test_paired_bootstrap_collapses_when_every_paper_shows_the_same_difference() -> None:
    # paper 7: a wins 2 of 2, b 1 of 2; paper 3: a 1 of 2, b 0 of 2. Both papers: +1/2 per triplet, so every
    # resample, whatever papers it draws, has difference exactly 0.5.
    wins_a = np.array([1, 1, 1, 0], dtype=bool)
    wins_b = np.array([0, 1, 0, 0], dtype=bool)
    r = paired_bootstrap_difference(wins_a, wins_b, np.array([7, 7, 3, 3]), resamples=200, seed=1)
    assert (r.difference, r.low, r.high, r.share_positive) == (0.5, 0.5, 0.5, 1.0)
    assert (r.papers, r.resamples, r.delta, r.seed) == (2, 200, 0.05, 1)
    assert "+50.0 points, 95% paper-bootstrap interval [+50.0, +50.0]" in r.describe()


def test_paired_bootstrap_resamples_papers_with_their_triplets() -> None:
    # Paper 0: one triplet, a wins, b loses (+1). Paper 1: three triplets, a and b agree (0). On all triplets the
    # difference is 1/4. A resample draws two papers: {0, 0} -> 1, {0, 1} -> 1/4, {1, 1} -> 0, with probabilities
    # 1/4, 1/2, 1/4: the 10% and 90% percentiles are 0 and 1, and a is ahead in about 3/4 of the resamples.
    wins_a = np.array([True, True, False, True])
    wins_b = np.array([False, True, False, True])
    r = paired_bootstrap_difference(wins_a, wins_b, np.array([0, 1, 1, 1]), resamples=4000, delta=0.2, seed=0)
    assert r.difference == pytest.approx(0.25)
    assert (r.low, r.high) == (0.0, 1.0)
    assert r.share_positive == pytest.approx(0.75, abs=0.03)


def test_paired_bootstrap_matches_a_direct_resampling_of_triplets() -> None:
    rng = np.random.default_rng(5)
    papers = rng.integers(0, 9, 120) * 10  # ids need not be 0..N-1
    wins_a, wins_b = rng.random(120) < 0.7, rng.random(120) < 0.6
    r = paired_bootstrap_difference(wins_a, wins_b, papers, resamples=300, delta=0.1, seed=11)
    # the same draws, resampled the slow way: the triplets of each drawn paper, once per draw
    unique = np.unique(papers)
    draws = np.random.default_rng(11).integers(0, len(unique), size=(300, len(unique)))
    replicates = []
    for row in draws:
        rows = np.concatenate([np.flatnonzero(papers == unique[c]) for c in row])
        replicates.append(wins_a[rows].mean() - wins_b[rows].mean())
    low, high = np.quantile(replicates, [0.05, 0.95])
    assert r.difference == pytest.approx(wins_a.mean() - wins_b.mean())
    assert (r.low, r.high) == (pytest.approx(low), pytest.approx(high))
    assert r.share_positive == pytest.approx(np.mean(np.array(replicates) > 0))
    assert r.papers == len(unique)


def test_paired_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="at least one triplet"):
        paired_bootstrap_difference(np.array([], bool), np.array([], bool), np.array([], int))
    with pytest.raises(ValueError, match=r"\[T\] alike"):
        paired_bootstrap_difference(np.array([True]), np.array([True, False]), np.array([0, 0]))
    with pytest.raises(ValueError, match="0 < delta < 1"):
        paired_bootstrap_difference(np.array([True]), np.array([False]), np.array([0]), delta=1.5)


def test_keyword_relevant_fuzzy_match_equals_brute_force_levenshtein() -> None:
    """The one-regex fuzzy match agrees with sliding `levenshtein` over every window of length len(k) ± 1."""
    from eqsearch.evaluation.metrics import levenshtein

    def brute(text: str, keyword: str) -> bool:
        text, keyword = text.lower(), keyword.lower()
        if keyword in text:
            return True
        if len(keyword) <= 10:
            return False
        return any(
            levenshtein(text[start : start + length], keyword) < 2
            for length in (len(keyword) - 1, len(keyword), len(keyword) + 1)
            for start in range(0, max(0, len(text) - length) + 1)
        )

    rng = np.random.default_rng(7)
    keyword = "gradient.descent"  # a literal '.' must stay literal
    alphabet = list("gradientscox. ")
    for _ in range(400):
        word = list(keyword)
        for _ in range(int(rng.integers(0, 3))):  # 0-2 random edits
            op, at = int(rng.integers(3)), int(rng.integers(len(word) + 1))
            char = str(rng.choice(alphabet))
            if op == 0 and at < len(word):
                word[at] = char
            elif op == 1 and at < len(word):
                del word[at]
            else:
                word.insert(at, char)
        text = "see " + "".join(word) + " here"
        assert keyword_relevant(text, [keyword]) == brute(text, keyword), text
    assert not keyword_relevant("see gradientxdescent here", ["gradient.descent"]) or brute(
        "see gradientxdescent here", "gradient.descent"
    )
