"""Layers of the KDD'20 encoder against dense reference computations on tiny trees."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from eqsearch.training.layers import (
    SoftNormalization,
    mean_pool,
    neighbourhood_sum,
    sinusoidal_positions,
)


def test_neighbourhood_sum_matches_dense_closed_neighbourhood(make_graph) -> None:
    g = make_graph(9, np.random.default_rng(0))
    n = g.num_nodes
    adjacency = np.eye(n)
    adjacency[g.edge_index[0], g.edge_index[1]] = 1
    adjacency[g.edge_index[1], g.edge_index[0]] = 1
    h = torch.randn(n, 5)
    expected = torch.from_numpy(adjacency).float() @ h
    torch.testing.assert_close(neighbourhood_sum(h, torch.from_numpy(g.edge_index)), expected)


def test_sinusoidal_positions_follow_vaswani() -> None:
    e = sinusoidal_positions(torch.tensor([0, 3]), 8)
    assert e.shape == (2, 8)
    torch.testing.assert_close(e[0], torch.tensor([0.0, 1.0] * 4))
    assert e[1, 0].item() == pytest.approx(np.sin(3.0))
    assert e[1, 3].item() == pytest.approx(np.cos(3.0 / 10000 ** (2 / 8)), rel=1e-5)
    with pytest.raises(ValueError):
        sinusoidal_positions(torch.tensor([1]), 7)


def test_mean_pool_averages_each_graph() -> None:
    x = torch.tensor([[1.0], [3.0], [10.0]])
    out = mean_pool(x, torch.tensor([0, 0, 1]), torch.tensor([2, 1]))
    torch.testing.assert_close(out, torch.tensor([[2.0], [10.0]]))


def test_soft_normalization_batch_stats_in_training_running_at_inference() -> None:
    norm = SoftNormalization(momentum=1.0)
    z = torch.tensor([[3.0, 4.0], [0.0, 1.0]])  # norms 5 and 1: mean 3, std sqrt(8)
    out = norm.train()(z)
    scale = 3.0 + np.sqrt(8.0)
    torch.testing.assert_close(out, z / scale, atol=1e-5, rtol=1e-5)
    assert norm.running_mean.item() == pytest.approx(3.0)
    out_eval = norm.eval()(torch.tensor([[6.0, 8.0]]))
    torch.testing.assert_close(out_eval, torch.tensor([[6.0, 8.0]]) / scale, atol=1e-5, rtol=1e-5)
