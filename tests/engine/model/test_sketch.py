"""Structure sketches: byte vectors of the right width, the same for the index and the query, close for formulas that
share their terms (rare ones most), and absent when there is nothing to hash."""

from __future__ import annotations

import math

import numpy as np
import pytest
from eqsearch.engine.model.sketch import SKETCH_DIMS, document_sketch, idf, query_sketch, sketch
from eqsearch.engine.model.structure import formula_structure


def _cosine(a: list[int] | None, b: list[int] | None) -> float:
    assert a is not None and b is not None
    x, y = np.asarray(a, float), np.asarray(b, float)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def test_a_sketch_is_bytes_of_the_fixed_width_scaled_to_its_largest_coordinate():
    vector = document_sketch(formula_structure(None, r"\frac{a}{b} + c^2").tokens)
    assert vector is not None and len(vector) == SKETCH_DIMS
    assert all(isinstance(value, int) and -127 <= value <= 127 for value in vector)
    assert max(map(abs, vector)) == 127
    assert document_sketch(formula_structure(None, r"\frac{a}{b} + c^2").tokens) == vector  # no randomness


def test_nothing_to_hash_gives_no_sketch():
    assert document_sketch([]) is None
    assert sketch({"V:x": 0.0}) is None
    assert query_sketch(["V:x", "N:2"], {"V:x": 0.0, "N:2": 0.0}, documents=100) is None  # no document holds them


def test_a_formula_is_nearest_to_itself_then_to_the_same_shape_in_other_letters():
    query = formula_structure(None, "x^2 + y^2 = z^2").tokens
    documents = {
        latex: document_sketch(formula_structure(None, latex).tokens)
        for latex in ("x^2 + y^2 = z^2", "a^2 + b^2 = c^2", r"\int_0^1 f(t) \, dt", r"\sum_{k=1}^n k")
    }
    mine = query_sketch(query)
    nearness = {latex: _cosine(mine, vector) for latex, vector in documents.items()}
    assert nearness["x^2 + y^2 = z^2"] == pytest.approx(max(nearness.values()))
    assert nearness["x^2 + y^2 = z^2"] > 0.9
    assert nearness["a^2 + b^2 = c^2"] > max(nearness[r"\int_0^1 f(t) \, dt"], nearness[r"\sum_{k=1}^n k"]) + 0.2


def test_the_query_weighs_rare_terms_up():
    common, rare = ["T:common", "T:common|T:x|n"], ["T:rare", "T:rare|T:y|n"]
    with_common, with_rare = document_sketch(common), document_sketch(rare)
    plain = query_sketch(common + rare)
    weighed = query_sketch(common + rare, {**dict.fromkeys(common, 0.9), **dict.fromkeys(rare, 0.001)}, 10_000)
    assert _cosine(weighed, with_rare) - _cosine(weighed, with_common) > 0.5
    assert abs(_cosine(plain, with_rare) - _cosine(plain, with_common)) < abs(
        _cosine(weighed, with_rare) - _cosine(weighed, with_common)
    )


def test_idf_is_lucenes():
    assert idf(0.0, 1000) == pytest.approx(math.log(1 + 1000.5 / 0.5))
    assert idf(0.5, 1000) == pytest.approx(math.log(1 + 500.5 / 500.5))
    assert idf(0.001, 1_000_000) > idf(0.1, 1_000_000)
