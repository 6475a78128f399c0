"""Scalar quantization of stored vectors (int8, int4) and its straight-through fake-quantization."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from eqsearch.training.quantization import fake_quantize, quantize_vectors


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
