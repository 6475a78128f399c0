"""Held-out report: model vs bag of words on the same hand-built triplets, with the paired paper bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from eqsearch.engine.model.graph import GraphArrays
from eqsearch.training.dataset import Corpus, Paper
from eqsearch.training.evaluate import held_out_report
from eqsearch.training.triplets import SOURCES, Triplets


def _one_node(tag: int) -> GraphArrays:
    zero = np.zeros(1, dtype=np.int64)
    return GraphArrays(
        tag=np.array([tag], dtype=np.int64),
        attr=zero,
        char=zero.copy(),
        pos=zero.copy(),
        edge_index=np.zeros((2, 0), dtype=np.int64),
        graph=zero.copy(),
        num_graphs=1,
    )


def test_held_out_report_scores_both_representations_on_the_same_triplets() -> None:
    # Three papers of two equations; each equation one node whose tag is its whole bag of words.
    tags = [0, 0, 1, 2, 3, 3]
    test = Corpus(
        papers=[Paper("p0", ((0, 1),)), Paper("p1", ((2, 3),)), Paper("p2", ((4, 5),))],
        graphs=[_one_node(t) for t in tags],
        equation_paper=np.array([0, 0, 1, 1, 2, 2]),
    )
    section, paper = SOURCES.index("section"), SOURCES.index("paper")
    triplets = Triplets(
        anchor=np.array([0, 2, 4, 3]),
        positive=np.array([1, 3, 5, 2]),
        negative=np.array([2, 4, 0, 5]),
        source=np.array([section, paper, paper, section]),
    )
    embeddings = np.array([[1, 0], [2, 0], [0, 1], [0, 2], [1, 1], [2, 0.5]], dtype=np.float32)
    report = held_out_report(embeddings, test, triplets, (4, 1, 1), resamples=500)
    # model, inner product: 2 > 0, 2 > 1, 2.5 > 1, 2 > 1: all four. Bag of words (cosine of tag one-hots):
    # T0 1 > 0 and T2 1 > 0 win, T1 and T3 are 0 vs 0 ties (failures).
    assert (report.model.score, report.model_cosine.score, report.bag_of_words.score) == (1.0, 1.0, 0.5)
    assert report.model.papers == 3 and report.model.chromatic == 4  # every pair of triplets shares a paper
    assert report.by_source == {
        "section": {"model": 1.0, "model_cosine": 1.0, "bag_of_words": 0.5},
        "paper": {"model": 1.0, "model_cosine": 1.0, "bag_of_words": 0.5},
    }
    diff = report.model_minus_bag_of_words
    assert diff.difference == pytest.approx(0.5)
    assert diff.papers == 3 and diff.resamples == 500
    # per anchor paper the model gains 0 (p0), 2 of 2 (p1), 0 (p2): every resample lies in [0, 1]
    assert 0.0 <= diff.low <= diff.difference <= diff.high <= 1.0
    assert report.to_dict()["model_minus_bag_of_words"]["difference"] == pytest.approx(0.5)
    assert "model - bag of words: +50.0 points" in report.describe()
