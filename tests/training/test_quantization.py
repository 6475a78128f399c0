"""Scalar quantization of stored vectors (int8, int4) and its straight-through fake-quantization."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from eqsearch.training.quantization import fake_quantize, quantize_vectors, rounded_cosines


def test_int8_per_vector_rounds_each_row_to_127_steps_of_its_largest_coordinate() -> None:
    v = np.array([[1.0, -0.5, 0.25, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    q = quantize_vectors(v, 8, "vector")
    step = 1.0 / 127
    np.testing.assert_allclose(q[0], np.rint(v[0] / step) * step, rtol=1e-6)
    assert q[0, 0] == pytest.approx(1.0) and not q[1].any()  # the largest kept, a zero row stays zero
    assert np.abs(q - v).max() <= step / 2 + 1e-7


def test_per_dimension_scales_and_fewer_bits_round_coarser() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(200, 16)).astype(np.float32)
    per_dim = quantize_vectors(v, 8, "dimension")
    assert np.abs(per_dim - v).max() <= (np.abs(v).max(axis=0) / 127 / 2 + 1e-6).max()
    err8 = np.abs(quantize_vectors(v, 8) - v).mean()
    err4 = np.abs(quantize_vectors(v, 4) - v).mean()
    assert err4 > 10 * err8  # 7 levels against 127
    assert len(np.unique(quantize_vectors(v, 4)[0] / (np.abs(v[0]).max() / 7))) <= 15
    with pytest.raises(ValueError, match="scale"):
        quantize_vectors(v, 8, "segment")
    with pytest.raises(ValueError, match="bits"):
        quantize_vectors(v, 1)


def test_fake_quantization_rounds_forward_and_passes_the_gradient_straight_through() -> None:
    z = torch.tensor([[0.9, -0.3, 0.05], [0.1, 0.2, -0.7]], requires_grad=True)
    q = fake_quantize(z, 4)
    np.testing.assert_allclose(q.detach().numpy(), quantize_vectors(z.detach().numpy(), 4), rtol=1e-6)
    q.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), np.ones((2, 3)))


def test_rounded_cosines_score_as_the_engines_int8_index() -> None:
    from eqsearch.engine.index.vectors import byte_vector

    rng = np.random.default_rng(1)
    vectors, queries = rng.normal(size=(50, 8)), rng.normal(size=(3, 8))
    stored = np.asarray([byte_vector(v) for v in vectors], dtype=np.float64)
    asked = np.asarray([byte_vector(q) for q in queries], dtype=np.float64)
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(
        rounded_cosines(queries, vectors, round_queries=True), unit(asked) @ unit(stored).T, atol=1e-5
    )
    float_queries = rounded_cosines(queries, vectors)
    np.testing.assert_allclose(float_queries, unit(queries) @ unit(stored).T, atol=1e-5)
    assert np.abs(float_queries).max() <= 1 + 1e-6  # cosines, whatever the rounding did to the norms
