"""The building blocks of the KDD'20 formula encoder (§4.1), written with plain tensor ops that export to ONNX.

Neighbourhood sums use ``Tensor.index_add`` (ONNX ``ScatterND`` with ``reduction="add"``), so the exported graph
accepts any number of nodes, edges and equations per batch.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def neighbourhood_sum(h: Tensor, edge_index: Tensor) -> Tensor:
    """Sum each node's features over its closed neighbourhood N(i) ∪ {i} of the undirected tree.

    The featurizer stores parent -> child edges only; the sum adds both directions and the self loop, as the
    paper's ``∑_{j ∈ N(i) ∪ i}`` does (KDD'20 §4.1).

    Args:
        h: node features.
        edge_index: parent -> child edges, row 0 = parent, row 1 = child.

    Returns:
        ``h_i + ∑_{j child of i} h_j + h_{parent(i)}`` for every node i.

    Shapes:
        h: ``[N, D]``; edge_index: ``[2, E]``; returns ``[N, D]``.
    """
    parent, child = edge_index[0], edge_index[1]
    out = h.index_add(0, child, h.index_select(0, parent))
    return out.index_add(0, parent, h.index_select(0, child))


def sinusoidal_positions(pos: Tensor, dim: int) -> Tensor:
    """Fixed sinusoidal embeddings of integer positions (Vaswani et al. 2017; KDD'20 §4.1 ``E(p_j)``).

    Computed on the fly rather than looked up in a table, so there is no largest position.

    Args:
        pos: integer positions (a node's index among its parent's children).
        dim: embedding width (even).

    Returns:
        ``E[p, 2k] = sin(p / 10000^(2k/dim))``, ``E[p, 2k+1] = cos(p / 10000^(2k/dim))``.

    Shapes:
        pos: ``[N]``; returns ``[N, dim]``.
    """
    if dim % 2:
        raise ValueError(f"the position embedding width must be even, got {dim}")
    k = torch.arange(dim // 2, device=pos.device, dtype=torch.float32)
    inv_freq = torch.exp(k * (-2.0 * math.log(10000.0) / dim))
    angles = pos.to(torch.float32).unsqueeze(1) * inv_freq.unsqueeze(0)
    return torch.stack((angles.sin(), angles.cos()), dim=2).reshape(pos.shape[0], dim)


class NodeInputLayer(nn.Module):
    """First layer of KDD'20 §4.1: ``x_i = ReLU(∑_{j ∈ N(i) ∪ i} W x_j + α E(p_j) + b)``.

    ``W x_j`` of the paper's 256-d one-hot vector is computed as the sum of three embedding lookups (tag, attribute,
    character); the "no attribute" and "no character" index 0 maps to a zero row (an all-zero one-hot segment).

    Args:
        n_tags: tag vocabulary size (indices ``[0, n_tags)``).
        n_attrs: attribute vocabulary size (indices ``[0, n_attrs]``, 0 = none).
        n_chars: character vocabulary size (indices ``[0, n_chars]``, 0 = none).
        dim: output width (512 in the paper).

    Shapes:
        tag, attr, char, pos: ``[N]``; edge_index: ``[2, E]``; node_mask: ``[N]`` bool or None; returns ``[N, dim]``.
    """

    def __init__(self, n_tags: int, n_attrs: int, n_chars: int, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.tag = nn.Embedding(n_tags, dim)
        self.attr = nn.Embedding(n_attrs + 1, dim, padding_idx=0)
        self.char = nn.Embedding(n_chars + 1, dim, padding_idx=0)
        self.bias = nn.Parameter(torch.zeros(dim))
        self.alpha = nn.Parameter(torch.ones(()))  # learnable scale of the position term, initialised to 1
        for table in (self.tag, self.attr, self.char):
            nn.init.normal_(table.weight, std=1.0 / math.sqrt(3 * dim))
        with torch.no_grad():
            self.attr.weight[0].zero_()
            self.char.weight[0].zero_()

    def forward(
        self,
        tag: Tensor,
        attr: Tensor,
        char: Tensor,
        pos: Tensor,
        edge_index: Tensor,
        node_mask: Tensor | None = None,
    ) -> Tensor:
        features = self.tag(tag) + self.attr(attr) + self.char(char)
        if node_mask is not None:  # masking task: the masked nodes' one-hot features are all zero, positions stay
            features = features * (~node_mask).unsqueeze(1).to(features.dtype)
        h = features + self.alpha * sinusoidal_positions(pos, self.dim).to(features.dtype)
        return torch.relu(neighbourhood_sum(h, edge_index) + self.bias)


class GraphConvolution(nn.Module):
    """A graph convolution of KDD'20 §4.1: ``x_i^(l) = ReLU(∑_{j ∈ N(i) ∪ i} W^(l) x_j^(l-1) + b^(l))``.

    Args:
        in_dim: input width.
        out_dim: output width (512 in the paper).

    Shapes:
        x: ``[N, in_dim]``; edge_index: ``[2, E]``; returns ``[N, out_dim]``.
    """

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return torch.relu(neighbourhood_sum(self.linear(x), edge_index) + self.bias)


def mean_pool(x: Tensor, graph: Tensor, graph_sizes: Tensor) -> Tensor:
    """Mean of the node features of each equation (KDD'20 §4.1).

    ``graph_sizes`` carries the number of equations as its length, which keeps that number a dynamic dimension in
    the exported ONNX graph instead of a value computed from the data.

    Shapes:
        x: ``[N, D]``; graph: ``[N]``; graph_sizes: ``[G]``; returns ``[G, D]``.
    """
    sums = x.new_zeros((graph_sizes.shape[0], x.shape[1])).index_add(0, graph, x)
    return sums / graph_sizes.clamp(min=1).to(x.dtype).unsqueeze(1)


class SoftNormalization(nn.Module):
    """Divide embeddings by the mean + standard deviation of their norms (KDD'20 §4.1).

    Batch statistics in training, running averages (updated like batch normalisation) at inference, so most
    embeddings have norm below 1 without being forced onto the unit sphere.

    Args:
        momentum: weight of the newest batch in the running averages.
        eps: added to the scale to avoid a division by zero.

    Shapes:
        z: ``[G, D]``; returns ``[G, D]``.
    """

    def __init__(self, momentum: float = 0.01, eps: float = 1e-6) -> None:
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.ones(()))
        self.register_buffer("running_std", torch.zeros(()))

    def forward(self, z: Tensor) -> Tensor:
        if self.training and z.shape[0] > 1:
            norms = z.float().norm(dim=1)
            mean, std = norms.mean(), norms.std()
            with torch.no_grad():
                self.running_mean.lerp_(mean.detach(), self.momentum)
                self.running_std.lerp_(std.detach(), self.momentum)
            scale = mean + std
        else:
            scale = self.running_mean + self.running_std
        return z / (scale.to(z.dtype) + self.eps)
