"""Client-side fusion on hand-made ranked lists: exact scores, order, ties, weights, and degenerate inputs."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.fusion import (
    INLINE_FACTOR,
    Fused,
    evidence_fusion,
    is_inline,
    linear_fusion,
    min_max,
    paper_evidence,
    paper_placeholder,
    placeholder_paper,
    reciprocal_rank_fusion,
    words_side,
)

FORMULA = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
TEXT = [("c", 12.0), ("d", 6.0), ("a", 3.0)]


def ids(fused: list[Fused]) -> list[str]:
    return [item.doc_id for item in fused]


def test_rrf_sums_reciprocal_ranks_and_keeps_raw_scores_and_ranks():
    fused = reciprocal_rank_fusion({"formula": FORMULA, "text": TEXT}, k=60)
    scores = {item.doc_id: item.score for item in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62) and scores["d"] == pytest.approx(1 / 62)
    # a and c tie, b and d tie: ties are broken by document id
    assert ids(fused) == ["a", "c", "b", "d"]
    first = fused[0]
    assert first.scores == {"formula": 0.9, "text": 3.0} and first.ranks == {"formula": 1, "text": 3}
    assert fused[3].scores == {"text": 6.0} and fused[3].ranks == {"text": 2}


def test_rrf_weights_scale_each_list_and_zero_drops_a_list():
    weighted = reciprocal_rank_fusion({"formula": FORMULA, "text": TEXT}, k=60, weights={"formula": 2.0, "text": 0.0})
    assert ids(weighted) == ["a", "b", "c", "d"]  # the formula order; d (text only) scores 0
    assert weighted[0].score == pytest.approx(2 / 61)
    assert weighted[3].score == 0.0
    # a list missing from the weights counts with weight 1
    partial = reciprocal_rank_fusion({"formula": FORMULA, "text": TEXT}, k=60, weights={"formula": 0.0})
    assert ids(partial) == ["c", "d", "a", "b"]


def test_rrf_rank_constant_and_its_validation():
    small_k = reciprocal_rank_fusion({"formula": FORMULA}, k=1)
    assert [item.score for item in small_k] == pytest.approx([1 / 2, 1 / 3, 1 / 4])
    with pytest.raises(ValueError, match="k must be positive"):
        reciprocal_rank_fusion({"formula": FORMULA}, k=0)


def test_rrf_of_one_list_keeps_its_order_and_of_none_is_empty():
    assert ids(reciprocal_rank_fusion({"text": TEXT})) == ["c", "d", "a"]
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"formula": [], "text": []}) == []
    assert ids(reciprocal_rank_fusion({"formula": [], "text": TEXT})) == ["c", "d", "a"]


def test_a_list_naming_a_document_twice_keeps_its_first_entry():
    fused = reciprocal_rank_fusion({"formula": [("a", 0.9), ("b", 0.5), ("a", 0.1)]}, k=60)
    assert ids(fused) == ["a", "b"]
    assert fused[0].scores == {"formula": 0.9} and fused[0].ranks == {"formula": 1}


def test_min_max_rescales_within_a_list():
    assert min_max([("a", 4.0), ("b", 3.0), ("c", 2.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert min_max([("a", 7.0), ("b", 7.0)]) == {"a": 1.0, "b": 1.0}  # all equal: all 1
    assert min_max([]) == {}


def test_linear_fusion_blends_normalised_scores_by_weight():
    fused = linear_fusion({"formula": FORMULA, "text": TEXT}, {"formula": 0.5, "text": 0.5})
    scores = {item.doc_id: item.score for item in fused}
    # formula normalised: a 1, b 0.5, c 0; text normalised: c 1, d 1/3, a 0
    assert scores == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.5, "d": 1 / 6})
    assert ids(fused) == ["a", "c", "b", "d"]  # a and c tie at 0.5: by id
    assert fused[1].scores == {"formula": 0.7, "text": 12.0} and fused[1].ranks == {"formula": 3, "text": 1}


def test_linear_fusion_full_weight_is_one_list_and_missing_weights_count_zero():
    formula_only = linear_fusion({"formula": FORMULA, "text": TEXT}, {"formula": 1.0, "text": 0.0})
    assert ids(formula_only)[:3] == ["a", "b", "c"]
    assert {item.doc_id: item.score for item in formula_only}["d"] == 0.0
    unweighted = linear_fusion({"formula": FORMULA, "text": TEXT}, {"text": 1.0})
    assert ids(unweighted) == ["c", "d", "a", "b"]


def test_linear_fusion_of_one_list_and_of_empty_lists():
    one = linear_fusion({"text": TEXT}, {"text": 0.5})
    assert ids(one) == ["c", "d", "a"]
    assert [item.score for item in one] == pytest.approx([0.5, 0.5 / 3, 0.0])
    assert linear_fusion({}, {"formula": 1.0}) == []
    assert linear_fusion({"formula": [], "text": []}, {"formula": 0.5, "text": 0.5}) == []


def test_evidence_fusion_lets_the_formula_judge_the_equation_and_the_words_its_paper():
    # p1:1 is the exact formula on the page the words describe; p1:2 a sibling that shares the page's words but only
    # a weak part of the formula; p2:1 the exact formula on an unrelated page; p3:1 has the words and no formula.
    formula = [("p1:1", 10.0), ("p2:1", 10.0), ("p1:2", 3.0)]
    text = [("p1:2", 5.0), ("p3:1", 5.0), ("p1:1", 4.0)]
    papers = [("p1", 6.0), ("p3", 5.0)]  # the papers by the words in their titles and abstracts
    paper_of = {"p1:1": "p1", "p1:2": "p1", "p2:1": "p2", "p3:1": "p3"}
    fused = evidence_fusion(formula, text, papers, paper_of, weight=0.5, paper_share=0.5)
    assert ids(fused) == ["p1:1", "p1:2", "p2:1", "p3:1"]
    first = fused[0]
    assert first.score == pytest.approx(0.5 * 1.0 + 0.5 * (0.5 * 1.0 + 0.5 * 0.8))
    assert first.scores == {"formula": 10.0, "words": 4.0, "paper": 6.0} and first.ranks == {"formula": 1, "words": 3}
    assert fused[2].scores == {"formula": 10.0}  # its paper is not among the words' papers
    # the balance at its ends: the formula alone, the words alone
    assert ids(evidence_fusion(formula, text, papers, paper_of, weight=1.0, paper_share=0.5))[:2] == ["p1:1", "p2:1"]
    words = evidence_fusion([], text, papers, paper_of, weight=0.0, paper_share=0.5)
    assert ids(words) == ["p1:2", "p3:1", "p1:1"]  # 0.5 x paper + 0.5 x own words: 1.0, 0.917, 0.9
    assert evidence_fusion([], [], [], {}, weight=0.5, paper_share=0.5) == []


def test_papers_rank_by_their_words_anywhere_and_each_stands_as_its_best_worded_equation_or_a_placeholder():
    formula = [("p1:1", 10.0)]
    text = [("p1:1", 2.0)]
    papers = [("p2", 8.0), ("p1", 4.0), ("p3", 2.0)]  # by title and abstract
    contexts = [("p4:2", 9.0), ("p1:1", 2.0)]  # by each paper's best equation's context
    paper_of = {"p1:1": "p1", "p4:2": "p4"}
    ranking, representatives = paper_evidence(papers, contexts, paper_of, {"structure": formula, "text": text})
    assert ranking == [("p4", 9.0), ("p2", 8.0), ("p1", 4.0), ("p3", 2.0)]  # the larger of the two, per paper
    # p4 and p1 stand as their best-worded equations; p2 and p3, found by their title alone, as placeholders
    assert representatives == {"p4:2": "p4", paper_placeholder("p2"): "p2", "p1:1": "p1", paper_placeholder("p3"): "p3"}
    assert placeholder_paper(paper_placeholder("a:b")) == "a:b" and placeholder_paper("p1:1") is None
    paper_of |= representatives
    fused = evidence_fusion(
        formula, text, ranking, paper_of, weight=0.3, paper_share=0.5, representatives=list(representatives)
    )
    by_id = {placeholder_paper(item.doc_id) or item.doc_id: item for item in fused}
    assert [placeholder_paper(item.doc_id) or item.doc_id for item in fused] == ["p1:1", "p4:2", "p2", "p3"]
    assert by_id["p2"].score == pytest.approx(0.7 * 0.5 * 8 / 9) and by_id["p2"].scores == {"paper": 8.0}
    assert by_id["p1:1"].score == pytest.approx(0.3 + 0.7 * (0.5 * 4 / 9 + 0.5 * 1.0))
    # the same words evidence ranks the words side of the other fusions
    side = dict(words_side(text, ranking, paper_of, list(representatives), 0.5))
    assert side["p1:1"] == pytest.approx(0.5 * 4 / 9 + 0.5) and side["p4:2"] == pytest.approx(0.5)
    assert side[paper_placeholder("p3")] == pytest.approx(0.5 * 2 / 9)


def test_evidence_fusion_of_lists_without_positive_scores_stays_defined():
    fused = evidence_fusion([("a", 0.0), ("b", -1.0)], [], [], {}, weight=1.0, paper_share=0.5)
    assert {item.doc_id for item in fused} == {"a", "b"} and all(item.score == 1.0 for item in fused)


def test_is_inline_reads_the_equation_id():
    assert is_inline("2101.00001v2:i17") and is_inline("paper:with:colons:i0")
    assert not is_inline("2101.00001v2:17") and not is_inline("idx:3")


def test_evidence_fusion_inline_factor_weighs_an_inline_formulas_formula_evidence_when_both_sides_search():
    # p1:i4 is an inline fragment that matches the formula best; p1:2 the display the words and the formula find;
    # p1:i5 an inline formula of the same page found by the words only
    formula = [("p1:i4", 10.0), ("p1:2", 8.0), ("p2:1", 5.0)]
    text = [("p1:2", 6.0), ("p1:i5", 6.0), ("p1:i4", 3.0)]
    papers = [("p1", 6.0)]
    paper_of = {"p1:i4": "p1", "p1:i5": "p1", "p1:2": "p1", "p2:1": "p2"}
    plain = evidence_fusion(formula, text, papers, paper_of, weight=0.5, paper_share=0.75, inline_factor=1.0)
    assert ids(plain) == ["p1:i4", "p1:2", "p1:i5", "p2:1"]  # 0.5 + 0.5 x (0.75 + 0.25 x 0.5) = 0.9375 > 0.9
    weighed = evidence_fusion(formula, text, papers, paper_of, weight=0.5, paper_share=0.75, inline_factor=0.8)
    assert ids(weighed) == ["p1:2", "p1:i4", "p1:i5", "p2:1"]
    scores = {item.doc_id: item.score for item in weighed}
    assert scores["p1:i4"] == pytest.approx(0.5 * 0.8 + 0.5 * (0.75 + 0.25 * 0.5)) and scores["p1:2"] == 0.9
    assert scores["p1:i5"] == pytest.approx(0.5 * 1.0)  # its words only: untouched
    assert INLINE_FACTOR < 1.0  # the default weighs them: the display first
    assert ids(evidence_fusion(formula, text, papers, paper_of, weight=0.5, paper_share=0.75)) == ids(weighed)
    # the formula alone, or the words alone: the factor changes nothing
    for factor in (1.0, 0.5):
        alone = evidence_fusion(formula, [], [], paper_of, weight=0.5, paper_share=0.75, inline_factor=factor)
        assert [(item.doc_id, item.score) for item in alone] == [("p1:i4", 0.5), ("p1:2", 0.4), ("p2:1", 0.25)]
        words = evidence_fusion([], text, papers, paper_of, weight=0.0, paper_share=0.25, inline_factor=factor)
        assert [(item.doc_id, item.score) for item in words] == [("p1:2", 1.0), ("p1:i5", 1.0), ("p1:i4", 0.625)]
    with pytest.raises(ValueError, match="inline_factor"):
        evidence_fusion(formula, text, papers, paper_of, weight=0.5, paper_share=0.75, inline_factor=1.5)
