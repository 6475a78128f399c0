"""How formula vectors are stored and queried: rounded to int8, one scale per vector, where compared by cosine."""

from __future__ import annotations

import numpy as np
import pytest
from eqsearch.engine.index.vectors import byte_vector, query_vector, stored_vector


def test_one_scale_per_vector_maps_the_largest_magnitude_to_127():
    assert byte_vector([0.5, -1.0, 0.25, 0.0]) == [64, -127, 32, 0]
    assert byte_vector(np.array([3.0, 1.5])) == [127, 64]
    assert byte_vector([1e-9, -4e-9]) == [32, -127]  # the scale is the vector's own, however small it is
    assert byte_vector([0.0, 0.0]) is None and byte_vector([]) is None  # no direction for cosine
    assert byte_vector([np.inf, 1.0]) is None


def test_rounding_keeps_the_cosine():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 128))
    exact = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    qa, qb = np.array(byte_vector(a), dtype=float), np.array(byte_vector(b), dtype=float)
    assert qa @ qb / np.linalg.norm(qa) / np.linalg.norm(qb) == pytest.approx(exact, abs=0.01)


def test_cosine_indices_store_and_query_whole_numbers_the_others_floats():
    assert stored_vector(np.array([0.5, -1.0], dtype=np.float32), "cosine") == [64, -127]
    assert stored_vector(np.array([0.5, -1.0], dtype=np.float32), "max_inner_product") == [0.5, -1.0]
    assert stored_vector([0.0, 0.0], "cosine") is None
    rounded = query_vector(np.array([0.1, -0.2], dtype=np.float32), "cosine")
    assert rounded.dtype == np.int8 and rounded.tolist() == [64, -127]
    assert query_vector(np.zeros(2, dtype=np.float32), "cosine").tolist() == [0.0, 0.0]
    same = np.array([0.1, -0.2], dtype=np.float32)
    assert query_vector(same, "dot_product") is same
