"""Turning triplets into model-ready batches, and a DataLoader that builds them in worker processes.

A batch of B triplets is one graph batch of 3B equations: anchors first, then positives, then negatives.
Augmentation and node masks are drawn here, on the CPU side of the loader, so that a GPU never waits on them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.training.augmentation import permute_identifiers
from eqsearch.training.triplets import Triplets
from torch import Tensor
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

INPUT_NAMES = ("tag", "attr", "char", "pos", "edge_index", "graph", "graph_sizes")


def graph_tensors(batch: GraphArrays) -> dict[str, Tensor]:
    """The model inputs of a GraphArrays batch, as tensors (no copy for the int64 arrays).

    Shapes:
        tag, attr, char, pos, graph: ``[N]``; edge_index: ``[2, E]``; graph_sizes: ``[G]``.
    """
    sizes = np.bincount(batch.graph, minlength=batch.num_graphs).astype(np.int64)
    return {
        "tag": torch.from_numpy(batch.tag),
        "attr": torch.from_numpy(batch.attr),
        "char": torch.from_numpy(batch.char),
        "pos": torch.from_numpy(batch.pos),
        "edge_index": torch.from_numpy(batch.edge_index),
        "graph": torch.from_numpy(batch.graph),
        "graph_sizes": torch.from_numpy(sizes),
    }


@dataclass(frozen=True)
class AugmentSettings:
    """What to draw per batch.

    Args:
        augmentation: permute ``<mi>`` characters.
        mi_tag: tag index of ``mi`` (None disables augmentation).
        n_chars: character vocabulary size.
        mean_swaps: Poisson mean of transpositions.
        masking: draw node masks.
        mask_rate: share of nodes masked per equation.
    """

    augmentation: bool
    mi_tag: int | None
    n_chars: int
    mean_swaps: float
    masking: bool
    mask_rate: float


def build_batch(
    graphs: Sequence[GraphArrays],
    anchor: np.ndarray,
    positive: np.ndarray,
    negative: np.ndarray,
    settings: AugmentSettings,
    rng: np.random.Generator,
) -> dict[str, Tensor]:
    """Inputs of one training step: the 3B equations, plus ``node_mask`` when masking is on.

    Masks are drawn per equation (``mask_rate`` of its nodes, at least one), so small equations are masked too.

    Shapes:
        the ``graph_tensors`` keys for ``3B`` graphs; node_mask: ``[N]`` bool.
    """
    chosen = [graphs[i] for i in np.concatenate((anchor, positive, negative)).tolist()]
    if settings.augmentation and settings.mi_tag is not None:
        chosen = [permute_identifiers(g, settings.mi_tag, settings.n_chars, rng, settings.mean_swaps) for g in chosen]
    batch = concatenate_graphs(chosen)
    tensors = graph_tensors(batch)
    if settings.masking:
        sizes = tensors["graph_sizes"].numpy()
        # per node: a uniform draw; per equation: mask its k smallest draws, k = max(1, round(rate * size))
        u = rng.random(batch.num_nodes)
        order = np.lexsort((u, batch.graph))
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        rank = np.empty(batch.num_nodes, dtype=np.int64)
        rank[order] = np.arange(batch.num_nodes) - np.repeat(starts, sizes)
        k = np.maximum(1, np.rint(settings.mask_rate * sizes)).astype(np.int64)
        tensors["node_mask"] = torch.from_numpy(rank < k[batch.graph])
    return tensors


class TripletBatches(IterableDataset):
    """Batches of one epoch over fixed triplets, in a seeded shuffled order, split among DataLoader workers.

    Args:
        graphs: the corpus equations.
        triplets: the sampled triplets.
        batch_size: triplets per batch (the last partial batch is dropped).
        settings: augmentation / masking.
        seed: base seed; the epoch and batch index are mixed in, so a batch is the same whichever worker builds it
            and a resumed run sees the batches it would have seen.
        epoch: which epoch's order to produce.
        skip: batches of this epoch to skip (resume).
    """

    def __init__(
        self,
        graphs: Sequence[GraphArrays],
        triplets: Triplets,
        batch_size: int,
        settings: AugmentSettings,
        seed: int,
        epoch: int = 0,
        skip: int = 0,
    ) -> None:
        super().__init__()
        self.graphs = graphs
        self.triplets = triplets
        self.batch_size = batch_size
        self.settings = settings
        self.seed = seed
        self.epoch = epoch
        self.skip = skip

    def __len__(self) -> int:
        return max(0, len(self.triplets) // self.batch_size - self.skip)

    def __iter__(self) -> Iterator[dict[str, Tensor]]:
        info = get_worker_info()
        worker, n_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.triplets))
        n_batches = len(self.triplets) // self.batch_size
        for b in range(self.skip + worker, n_batches, n_workers):
            rows = order[b * self.batch_size : (b + 1) * self.batch_size]
            rng = np.random.default_rng([self.seed, self.epoch, b])
            yield build_batch(
                self.graphs,
                self.triplets.anchor[rows],
                self.triplets.positive[rows],
                self.triplets.negative[rows],
                self.settings,
                rng,
            )


def triplet_loader(dataset: TripletBatches, num_workers: int, pin_memory: bool) -> DataLoader:
    """A DataLoader over pre-built batches (``batch_size=None``); with workers, batches arrive in order per worker
    round-robin, which is the order of the single-process loader."""
    return DataLoader(
        dataset,
        batch_size=None,
        num_workers=num_workers,
        pin_memory=pin_memory,
        persistent_workers=False,
        prefetch_factor=4 if num_workers else None,
    )
