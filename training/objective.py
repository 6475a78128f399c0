"""The training objective of KDD'20 §4.2: a similarity loss on the triplets plus (optionally) the masking loss."""

from __future__ import annotations

from eqsearch.training.losses import batch_similarities, histogram_loss, infonce_loss, triplet_loss
from eqsearch.training.masking import masking_loss
from eqsearch.training.model import FormulaEncoder, MaskingHeads
from torch import Tensor


def training_losses(
    model: FormulaEncoder,
    heads: MaskingHeads | None,
    batch: dict[str, Tensor],
    *,
    loss: str = "histogram",
    histogram_bins: int = 64,
    margin: float = 1.0,
    temperature: float = 0.1,
) -> dict[str, Tensor]:
    """Losses of one batch of B triplets (3B equations: anchors, positives, negatives).

    One forward pass serves both tasks: the embeddings come from the masked graphs ``x_■`` and the heads classify
    the masked nodes' states ``φ_i(x_■)``; with masking off (``node_mask`` absent or heads None) it is the plain
    similarity task.

    Returns:
        ``{"loss", "similarity", "masking" (when on), "accuracy"}``; accuracy is the share of triplets in the batch
        whose positive similarity beats the negative one (the training-side ranking score).
    """
    node_mask = batch.get("node_mask") if heads is not None else None
    states = model.node_states(batch["tag"], batch["attr"], batch["char"], batch["pos"], batch["edge_index"], node_mask)
    embeddings = model.embed(states, batch["graph"], batch["graph_sizes"]).float()
    b = embeddings.shape[0] // 3
    anchor, positive, negative = embeddings[:b], embeddings[b : 2 * b], embeddings[2 * b :]
    if loss == "histogram":
        s_pos, s_neg = batch_similarities(anchor, positive, negative)
        similarity = histogram_loss(s_pos, s_neg, histogram_bins)
    elif loss == "infonce":
        similarity = infonce_loss(anchor, positive, negative, temperature)
    else:
        similarity = triplet_loss(anchor, positive, negative, margin)
    out = {"similarity": similarity}
    total = similarity
    if node_mask is not None and heads is not None:
        masked = states[node_mask]
        logits = heads(masked)
        targets = (batch["tag"][node_mask], batch["attr"][node_mask], batch["char"][node_mask])
        out["masking"] = masking_loss(logits, targets)
        total = total + out["masking"]
    out["loss"] = total
    out["accuracy"] = ((anchor * positive).sum(1) > (anchor * negative).sum(1)).float().mean().detach()
    return out
