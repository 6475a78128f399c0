"""Histogram loss (eq. 2), triplet loss (eq. 1) and the masking loss on the masked nodes only."""

from __future__ import annotations

import pytest
import torch
from eqsearch.training.losses import batch_similarities, histogram_loss, infonce_loss, soft_histogram, triplet_loss
from eqsearch.training.masking import masking_loss, sample_node_mask


def test_soft_histogram_triangular_kernel_sums_to_one() -> None:
    h = soft_histogram(torch.tensor([0.0, 1.0, -1.0, 0.1]), bins=5)  # nodes -1, -0.5, 0, 0.5, 1
    assert h.sum().item() == pytest.approx(1.0)
    assert h[2].item() == pytest.approx((1.0 + 0.8) / 4)
    assert h[3].item() == pytest.approx(0.2 / 4)


def test_histogram_loss_orders_positives_above_negatives() -> None:
    good = histogram_loss(torch.full((8,), 0.9), torch.full((64,), -0.5), bins=64)
    bad = histogram_loss(torch.full((8,), -0.5), torch.full((64,), 0.9), bins=64)
    assert good.item() == pytest.approx(0.0, abs=1e-6)
    assert bad.item() == pytest.approx(1.0, abs=1e-6)
    s = torch.zeros(4, requires_grad=True)
    histogram_loss(s + 0.01, torch.zeros(16), bins=64).backward()
    assert s.grad is not None and torch.all(s.grad <= 0)  # raising positive similarities lowers the loss


def test_triplet_loss_margin_one() -> None:
    a = torch.tensor([[1.0, 0.0]])
    assert triplet_loss(a, torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])).item() == pytest.approx(0.0)
    assert triplet_loss(a, torch.tensor([[0.0, 1.0]]), torch.tensor([[1.0, 0.0]])).item() == pytest.approx(2.0)


def test_infonce_picks_each_anchors_own_positive_among_the_batch() -> None:
    anchors = torch.eye(3)
    right = infonce_loss(anchors, torch.eye(3), -torch.eye(3), temperature=0.1)
    wrong = infonce_loss(anchors, torch.eye(3).roll(1, dims=0), -torch.eye(3), temperature=0.1)
    assert right.item() < 0.01 < 5.0 < wrong.item()
    # cosine: the scale of the vectors does not matter
    assert infonce_loss(3 * anchors, torch.eye(3), -torch.eye(3)).item() == pytest.approx(right.item(), rel=1e-5)


def test_batch_similarities_all_anchor_negative_pairs() -> None:
    a, p, n = torch.eye(3), torch.eye(3), torch.ones(3, 3)
    s_pos, s_neg = batch_similarities(a, p, n)
    assert s_pos.tolist() == [1.0, 1.0, 1.0] and s_neg.shape == (9,)


def test_masking_loss_uses_only_the_given_masked_nodes() -> None:
    logits = (torch.tensor([[10.0, 0.0]]), torch.tensor([[10.0, 0.0]]), torch.tensor([[10.0, 0.0]]))
    right = masking_loss(logits, (torch.tensor([0]), torch.tensor([0]), torch.tensor([0])))
    wrong = masking_loss(logits, (torch.tensor([1]), torch.tensor([1]), torch.tensor([1])))
    assert right.item() < 1e-3 < 5 < wrong.item()
    empty = masking_loss(tuple(x[:0] for x in logits), tuple(torch.zeros(0, dtype=torch.long) for _ in range(3)))
    assert empty.item() == 0.0


def test_sample_node_mask_rate() -> None:
    mask = sample_node_mask(100, 0.15, torch.Generator().manual_seed(0))
    assert mask.sum().item() == 15
    assert sample_node_mask(2, 0.15).sum().item() == 1
