"""The similarity losses of KDD'20 §4.2: the histogram loss (eq. 2) and the triplet loss (eq. 1)."""

from __future__ import annotations

import torch
from torch import Tensor


def soft_histogram(similarities: Tensor, bins: int) -> Tensor:
    """Normalised histogram of similarities on ``[-1, 1]`` with the triangular kernel (KDD'20 §4.2).

    The ``bins`` nodes ``t_1 = -1, ..., t_R = 1`` are ``Δ = 2 / (R - 1)`` apart; a similarity ``s`` adds
    ``max(0, 1 - |s - t_r| / Δ)`` to node r, so each value's weights sum to 1 and the histogram is differentiable.

    Shapes:
        similarities: ``[M]``; returns ``[bins]`` summing to 1.
    """
    delta = 2.0 / (bins - 1)
    nodes = torch.linspace(-1.0, 1.0, bins, device=similarities.device, dtype=similarities.dtype)
    s = similarities.clamp(-1.0, 1.0).unsqueeze(1)
    weights = (1.0 - (s - nodes.unsqueeze(0)).abs() / delta).clamp(min=0.0)
    return weights.sum(0) / max(similarities.shape[0], 1)


def histogram_loss(positive: Tensor, negative: Tensor, bins: int = 64) -> Tensor:
    """Histogram loss of Ustinova & Lempitsky (2016), KDD'20 eq. 2.

    The probability that a random negative similarity exceeds a random positive one, estimated from the two soft
    histograms: ``∑_r h⁻_r ∑_{r' ≤ r} h⁺_{r'}``.

    Args:
        positive: similarities ⟨φ̄(x), φ̄(x⁺)⟩ of the positive pairs.
        negative: similarities of the negative pairs (all anchor / negative pairs of the batch).
        bins: R, the number of histogram nodes (64 in the paper).

    Shapes:
        positive: ``[M]``; negative: ``[K]``; returns a scalar.
    """
    h_pos = soft_histogram(positive, bins)
    h_neg = soft_histogram(negative, bins)
    return (h_neg * torch.cumsum(h_pos, dim=0)).sum()


def triplet_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0) -> Tensor:
    """Triplet loss with inner-product similarity, KDD'20 eq. 1: ``max(0, Δ - ⟨a, p⟩ + ⟨a, n⟩)``, averaged.

    Shapes:
        anchor, positive, negative: ``[B, D]``; returns a scalar.
    """
    s_pos = (anchor * positive).sum(1)
    s_neg = (anchor * negative).sum(1)
    return torch.relu(margin - s_pos + s_neg).mean()


def infonce_loss(anchor: Tensor, positive: Tensor, negative: Tensor, temperature: float = 0.1) -> Tensor:
    """InfoNCE (van den Oord et al. 2018; SimCLR's NT-Xent without the symmetric half): each anchor must pick its
    own positive among every positive and negative of the batch, by cosine similarity over ``temperature``.

    A contrastive objective of formula similarity itself: with self pairs (`training.triplets`, ``self_share``) the
    positive is a second view of the anchor (identifiers renamed, other nodes masked), so the encoder learns what
    survives those changes, beside the contextual pairs of KDD'20.

    Shapes:
        anchor, positive, negative: ``[B, D]``; returns a scalar.
    """
    a = torch.nn.functional.normalize(anchor, dim=1)
    candidates = torch.nn.functional.normalize(torch.cat([positive, negative]), dim=1)
    logits = a @ candidates.T / temperature
    targets = torch.arange(a.shape[0], device=a.device)
    return torch.nn.functional.cross_entropy(logits, targets)


def batch_similarities(anchor: Tensor, positive: Tensor, negative: Tensor) -> tuple[Tensor, Tensor]:
    """Positive similarities of the B triplets and the B² anchor-vs-every-negative similarities of the batch.

    Each anchor is contrasted with all negatives of the batch (one-vs-all), as the paper's implementation does.

    Shapes:
        anchor, positive, negative: ``[B, D]``; returns ``[B]`` and ``[B * B]``.
    """
    return (anchor * positive).sum(1), (anchor @ negative.T).reshape(-1)
