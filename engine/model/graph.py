"""The array interface between the featurizer, the training code and the ONNX encoder.

An equation's MathML tree becomes a graph (KDD'20 §3.2). Node features are three categorical indices
(XML tag, attribute, character) instead of the paper's 256-d one-hot vector: the model's first layer
looks the indices up in three embedding tables, which is the same linear map as W·one_hot and far
cheaper. Index conventions (fixed; the vocabulary sizes live in `engine.model.vocabulary.Vocabulary`):

- ``tag``  in ``[0, n_tags)``; the last slot is "unknown tag".
- ``attr`` in ``[0, n_attrs]``; 0 = "no attribute" (an all-zero one-hot segment), the last slot is "unknown".
- ``char`` in ``[0, n_chars]``; 0 = "no character", the last slot is "unknown".
- ``pos``: the node's index among its parent's children (the root has 0).
- ``edge_index``: parent -> child edges only, shape ``[2, E]``; the model adds the reverse edges and self loops.
- ``graph``: for each node, the index of the equation it belongs to (non-decreasing), ``num_graphs`` in all.

Every array is int64 and C-contiguous so that it can go to torch or onnxruntime without a copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GraphArrays:
    """One equation graph, or a batch of them concatenated (see module docstring for conventions).

    Shapes:
        tag, attr, char, pos, graph: ``[N]``; edge_index: ``[2, E]``.
    """

    tag: np.ndarray
    attr: np.ndarray
    char: np.ndarray
    pos: np.ndarray
    edge_index: np.ndarray
    graph: np.ndarray
    num_graphs: int

    @property
    def num_nodes(self) -> int:
        return int(self.tag.shape[0])

    def validate(self) -> None:
        """Raise ValueError if the arrays break the conventions above."""
        n = self.num_nodes
        for name in ("tag", "attr", "char", "pos", "graph"):
            array = getattr(self, name)
            if array.dtype != np.int64 or array.shape != (n,):
                raise ValueError(f"GraphArrays.{name} must be int64 of shape ({n},), got {array.dtype} {array.shape}")
        if self.edge_index.dtype != np.int64 or self.edge_index.ndim != 2 or self.edge_index.shape[0] != 2:
            raise ValueError(f"GraphArrays.edge_index must be int64 [2, E], got {self.edge_index.shape}")
        if self.edge_index.size and (self.edge_index.min() < 0 or self.edge_index.max() >= n):
            raise ValueError("GraphArrays.edge_index refers to a node that does not exist")
        if n and (np.any(np.diff(self.graph) < 0) or self.graph[0] < 0 or self.graph[-1] >= self.num_graphs):
            raise ValueError("GraphArrays.graph must be non-decreasing in [0, num_graphs)")


def concatenate_graphs(graphs: Sequence[GraphArrays]) -> GraphArrays:
    """Batch graphs into one GraphArrays, offsetting edges and graph indices."""
    if not graphs:
        empty = np.zeros(0, dtype=np.int64)
        return GraphArrays(empty, empty, empty, empty, np.zeros((2, 0), dtype=np.int64), empty, 0)
    sizes = np.array([g.num_nodes for g in graphs], dtype=np.int64)
    node_offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    graph_counts = np.array([g.num_graphs for g in graphs], dtype=np.int64)
    graph_offsets = np.concatenate(([0], np.cumsum(graph_counts)[:-1]))
    edge_index = np.concatenate([g.edge_index + off for g, off in zip(graphs, node_offsets, strict=True)], axis=1)
    return GraphArrays(
        tag=np.concatenate([g.tag for g in graphs]),
        attr=np.concatenate([g.attr for g in graphs]),
        char=np.concatenate([g.char for g in graphs]),
        pos=np.concatenate([g.pos for g in graphs]),
        edge_index=np.ascontiguousarray(edge_index),
        graph=np.concatenate([g.graph + off for g, off in zip(graphs, graph_offsets, strict=True)]),
        num_graphs=int(graph_counts.sum()),
    )
