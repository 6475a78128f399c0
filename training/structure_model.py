"""The structure-bag encoder in torch (kind ``structure-bag``, runtime: `engine.model.structure_bag`).

A formula's hashed structural terms are looked up in one table and summed with their weights (an embedding bag),
the sum is scaled by the inverse square root of the total weight, refined by a residual two-layer MLP, projected to
``embedding_dim`` and put on the unit sphere. Written with ``index_select``/``index_add`` so that it exports to ONNX
with dynamic numbers of terms and formulas (the sums become ``ScatterND(reduction="add")``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor, nn


@dataclass(frozen=True)
class StructureBagConfig:
    """Dimensions of the structure-bag encoder.

    Args:
        buckets: rows of the term table (the features' ``buckets``).
        width: width of the table and of the MLP's residual stream.
        hidden: width of the MLP's hidden layer.
        embedding_dim: width of the output vectors.
        query_head: whether the model has a `QueryHead` (a second similarity over the same stored vectors, served at
            query time; not part of the exported graph).
    """

    buckets: int = 1 << 16
    width: int = 64
    hidden: int = 512
    embedding_dim: int = 64
    query_head: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class StructureBagModel(nn.Module):
    """Hashed structural terms -> unit vectors.

    Shapes:
        ids, weights, graph: ``[T]`` (int64, float32, int64); graph_sizes: ``[G]`` int64;
        returns ``[G, embedding_dim]``.
    """

    def __init__(self, config: StructureBagConfig) -> None:
        super().__init__()
        self.config = config
        self.table = nn.Embedding(config.buckets, config.width)
        nn.init.normal_(self.table.weight, std=0.1)
        self.norm = nn.LayerNorm(config.width)
        self.mlp = nn.Sequential(
            nn.Linear(config.width, config.hidden), nn.GELU(), nn.Linear(config.hidden, config.width)
        )
        self.projection = nn.Linear(config.width, config.embedding_dim)
        self.query_head = QueryHead(config.embedding_dim) if config.query_head else None

    def bag(self, ids: Tensor, weights: Tensor, graph: Tensor, graph_sizes: Tensor) -> Tensor:
        """Weighted sum of each formula's term rows over the square root of its total weight. Shapes: ``[G, width]``.

        Uses ``embedding_bag`` (an order of magnitude faster on a CPU than a gather and a scatter); the exported graph
        (`export.structure_bag.ExportedStructureBag`) makes the same sum with ``index_select``/``index_add``.
        """
        offsets = torch.cumsum(graph_sizes, 0) - graph_sizes
        sums = nn.functional.embedding_bag(ids, self.table.weight, offsets, mode="sum", per_sample_weights=weights)
        total = weights.new_zeros((graph_sizes.shape[0],)).index_add(0, graph, weights)
        return sums / torch.sqrt(total.clamp(min=1.0)).unsqueeze(1)

    def head(self, h: Tensor) -> Tensor:
        """Bag -> unit vector: the residual MLP, the projection, the normalisation. Shapes: ``[G, embedding_dim]``."""
        h = h + self.mlp(self.norm(h))
        z = self.projection(h)
        return z / torch.sqrt((z * z).sum(dim=1, keepdim=True) + 1e-12)

    def forward(self, ids: Tensor, weights: Tensor, graph: Tensor, graph_sizes: Tensor) -> Tensor:
        return self.head(self.bag(ids, weights, graph, graph_sizes))


class QueryHead(nn.Module):
    """A learned query-side map of a stored vector (`engine.model.structure_bag`, ``query_heads``): a query vector
    ``M z`` ranks the stored unit vectors ``z'`` by ``z^T M^T z'``, another similarity over the same index. Starts as
    the identity (the stored cosine).

    Shapes: z ``[B, D]``; returns ``[B, D]``, not normalised.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.matrix = nn.Parameter(torch.eye(dim))

    def forward(self, z: Tensor) -> Tensor:
        return z @ self.matrix.T
