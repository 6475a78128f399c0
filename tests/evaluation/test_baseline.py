"""The lexical baselines: tf-idf over LaTeX tokens and bigrams."""

from __future__ import annotations

import math

import numpy as np
from eqsearch.evaluation.baseline import latex_terms, latex_tfidf, latex_tokens


def test_latex_splits_into_control_words_symbols_letters_numbers_and_characters() -> None:
    assert latex_tokens(r"\frac{a_1}{2.5} + \, x^{10}") == [
        r"\frac", "{", "a", "_", "1", "}", "{", "2.5", "}", "+", r"\,", "x", "^", "{", "10", "}",
    ]  # fmt: skip


def test_terms_are_tokens_and_adjacent_pairs_with_counts() -> None:
    terms = latex_terms("x + x")
    assert terms == {"x": 2, "+": 1, "x +": 1, "+ x": 1}


def test_tfidf_weighs_rare_terms_and_compares_by_cosine() -> None:
    vectors = latex_tfidf(["a^2 + b^2", "x^2 + y^2", "a^2 + b^2", ""])
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, rtol=1e-6)
    assert not vectors[3].any()  # no terms: a zero row
    similarity = vectors @ vectors.T
    assert similarity[0, 2] == max(similarity[0, 1:]) and 0 < similarity[0, 1] < similarity[0, 2]
    # "^" is in three of four equations: weight (1 + ln 2) ln(4/3) in the first
    terms = sorted(set().union(*(latex_terms(t) for t in ["a^2 + b^2", "x^2 + y^2", "a^2 + b^2", ""])))
    raw = (1 + math.log(2)) * math.log(4 / 3)
    norm = np.linalg.norm(vectors[0])
    assert norm > 0 and math.isclose(vectors[0, terms.index("^")], raw / _raw_norm("a^2 + b^2"), rel_tol=1e-5)


def _raw_norm(text: str) -> float:
    corpus = ["a^2 + b^2", "x^2 + y^2", "a^2 + b^2", ""]
    df: dict[str, int] = {}
    for t in corpus:
        for term in latex_terms(t):
            df[term] = df.get(term, 0) + 1
    return math.sqrt(
        sum(((1 + math.log(tf)) * math.log(len(corpus) / df[term])) ** 2 for term, tf in latex_terms(text).items())
    )
