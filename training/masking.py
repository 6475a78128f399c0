"""The masking task of KDD'20 §4.2: hide 15% of the nodes, predict their tag, attribute and character."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def sample_node_mask(num_nodes: int, rate: float, generator: torch.Generator | None = None) -> Tensor:
    """Choose ``round(rate * num_nodes)`` nodes (at least one when there are nodes) to mask, uniformly.

    Shapes:
        returns ``[num_nodes]`` bool, True = masked.
    """
    mask = torch.zeros(num_nodes, dtype=torch.bool)
    if num_nodes == 0 or rate <= 0:
        return mask
    k = max(1, round(rate * num_nodes))
    mask[torch.randperm(num_nodes, generator=generator)[:k]] = True
    return mask


def masking_loss(
    logits: tuple[Tensor, Tensor, Tensor],
    targets: tuple[Tensor, Tensor, Tensor],
) -> Tensor:
    """Mean over the masked nodes of ``(ℓ_tag + ℓ_attr + ℓ_char) / 3`` (KDD'20 §4.2).

    The caller passes the logits and targets of the MASKED nodes only (the authors' later rewrite evaluated the
    unmasked ones, which teaches nothing: the node sees its own features).

    Args:
        logits: tag, attribute and character logits of the masked nodes.
        targets: the true tag, attribute (0 = none) and character (0 = none) indices of those nodes.

    Shapes:
        logits: ``[M, n_tags]``, ``[M, n_attrs + 1]``, ``[M, n_chars + 1]``; targets: three ``[M]``; returns a scalar.
    """
    if targets[0].numel() == 0:
        return logits[0].sum() * 0.0
    losses = [F.cross_entropy(lg.float(), t) for lg, t in zip(logits, targets, strict=True)]
    return (losses[0] + losses[1] + losses[2]) / 3.0
