"""Batches of triplets: masks per equation, augmentation of <mi> characters only, objective on masked nodes."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from eqsearch.engine.model.graph import GraphArrays
from eqsearch.training.augmentation import permute_identifiers, random_character_permutation
from eqsearch.training.batching import AugmentSettings, TripletBatches, build_batch
from eqsearch.training.model import FormulaEncoder, MaskingHeads, ModelConfig
from eqsearch.training.objective import training_losses
from eqsearch.training.triplets import Triplets


def test_permutation_keeps_no_character_fixed() -> None:
    p = random_character_permutation(16, 32.0, np.random.default_rng(0))
    assert p[0] == 0 and sorted(p.tolist()) == list(range(17))


def test_permute_identifiers_touches_mi_nodes_only(make_graph) -> None:
    g = make_graph(40, np.random.default_rng(3))
    mi = 2
    out = permute_identifiers(g, mi, 16, np.random.default_rng(4), mean_swaps=64)
    other = g.tag != mi
    assert np.array_equal(out.char[other], g.char[other])
    assert not np.array_equal(out.char[~other], g.char[~other])
    assert np.array_equal(out.tag, g.tag)


def _settings(masking: bool = True) -> AugmentSettings:
    return AugmentSettings(augmentation=True, mi_tag=2, n_chars=16, mean_swaps=32, masking=masking, mask_rate=0.15)


def test_build_batch_masks_every_equation(make_graph) -> None:
    rng = np.random.default_rng(5)
    graphs = [make_graph(n, rng) for n in (2, 10, 20, 40)]
    batch = build_batch(graphs, np.array([0, 1]), np.array([2, 3]), np.array([3, 0]), _settings(), rng)
    sizes = batch["graph_sizes"].numpy()
    assert sizes.tolist() == [2, 10, 20, 40, 40, 2]
    per_graph = np.bincount(batch["graph"].numpy()[batch["node_mask"].numpy()], minlength=6)
    assert per_graph.tolist() == [1, 2, 3, 6, 6, 1]


def test_objective_masking_loss_is_on_the_masked_nodes(make_graph) -> None:
    rng = np.random.default_rng(6)
    graphs = [make_graph(8, rng) for _ in range(6)]
    config = ModelConfig(n_tags=8, n_attrs=4, n_chars=16, hidden_dim=8, embedding_dim=4)
    model, heads = FormulaEncoder(config).eval(), MaskingHeads(config)
    batch = build_batch(graphs, np.array([0, 1]), np.array([2, 3]), np.array([4, 5]), _settings(), rng)
    out = training_losses(model, heads, batch)
    assert set(out) == {"loss", "similarity", "masking", "accuracy"}
    mask = batch["node_mask"]
    states = model.node_states(batch["tag"], batch["attr"], batch["char"], batch["pos"], batch["edge_index"], mask)
    logits = heads(states[mask])
    targets = (batch["tag"][mask], batch["attr"][mask], batch["char"][mask])
    expected = sum(F.cross_entropy(lg, t) for lg, t in zip(logits, targets, strict=True)) / 3
    torch.testing.assert_close(out["masking"], expected)
    inverted = (
        sum(  # the inverted-mask bug of the authors' rewrite would give this instead
            F.cross_entropy(lg, t)
            for lg, t in zip(
                heads(states[~mask]), (batch["tag"][~mask], batch["attr"][~mask], batch["char"][~mask]), strict=True
            )
        )
        / 3
    )
    assert not torch.isclose(out["masking"], inverted)


def test_triplet_batches_are_reproducible_and_resumable(make_graph) -> None:
    rng = np.random.default_rng(7)
    graphs: list[GraphArrays] = [make_graph(5, rng) for _ in range(10)]
    idx = np.arange(8)
    triplets = Triplets(idx, (idx + 1) % 10, (idx + 2) % 10, np.zeros(8, dtype=np.int64))
    full = list(TripletBatches(graphs, triplets, 2, _settings(), seed=1))
    resumed = list(TripletBatches(graphs, triplets, 2, _settings(), seed=1, skip=2))
    assert len(full) == 4 and len(resumed) == 2
    for a, b in zip(full[2:], resumed, strict=True):
        assert all(torch.equal(a[k], b[k]) for k in a)
