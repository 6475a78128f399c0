"""The graph arrays between the featurizer, training and the ONNX encoder (`engine/model/graph.py`): the conventions
`GraphArrays.validate` holds them to, and batches made by `concatenate_graphs` (edges and graph indices offset,
features kept in order, an empty batch)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs


def _path(n: int, tag: int = 1) -> GraphArrays:
    """A chain of ``n`` nodes, each the child of the one before."""
    ids = np.arange(n, dtype=np.int64)
    edges = np.stack([ids[:-1], ids[1:]]) if n > 1 else np.zeros((2, 0), dtype=np.int64)
    zeros = np.zeros(n, dtype=np.int64)
    return GraphArrays(np.full(n, tag, dtype=np.int64), zeros, ids + 1, zeros, edges, zeros, 1)


def test_a_tree_keeps_the_conventions(make_graph):
    graph = make_graph(9, np.random.default_rng(3))
    graph.validate()
    assert graph.num_nodes == 9 and graph.edge_index.shape == (2, 8)
    _path(1).validate()  # one node, no edge


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tag": np.zeros(4, dtype=np.int32)}, r"GraphArrays\.tag must be int64 of shape \(4,\), got int32"),
        ({"pos": np.zeros(5, dtype=np.int64)}, r"GraphArrays\.pos must be int64 of shape \(4,\)"),
        ({"edge_index": np.zeros((3, 2), dtype=np.int64)}, r"edge_index must be int64 \[2, E\]"),
        ({"edge_index": np.array([[0], [4]], dtype=np.int64)}, "refers to a node that does not exist"),
        ({"edge_index": np.array([[-1], [1]], dtype=np.int64)}, "refers to a node that does not exist"),
        ({"graph": np.array([0, 1, 0, 1], dtype=np.int64), "num_graphs": 2}, "must be non-decreasing"),
        ({"graph": np.array([0, 0, 1, 1], dtype=np.int64)}, r"in \[0, num_graphs\)"),
    ],
)
def test_arrays_that_break_a_convention_are_refused_naming_it(change, message):
    with pytest.raises(ValueError, match=message):
        replace(_path(4), **change).validate()


def test_a_batch_offsets_edges_and_graph_indices_and_keeps_the_features_in_order():
    first, second, third = _path(3, tag=1), _path(1, tag=2), _path(2, tag=3)
    batch = concatenate_graphs([first, second, third])
    batch.validate()
    assert batch.num_nodes == 6 and batch.num_graphs == 3
    assert batch.tag.tolist() == [1, 1, 1, 2, 3, 3] and batch.char.tolist() == [1, 2, 3, 1, 1, 2]
    assert batch.edge_index.tolist() == [[0, 1, 4], [1, 2, 5]]
    assert batch.graph.tolist() == [0, 0, 0, 1, 2, 2]
    assert batch.edge_index.flags["C_CONTIGUOUS"] and batch.edge_index.dtype == np.int64
    again = concatenate_graphs([batch, first])  # a batch of batches: graph indices continue after the first's
    again.validate()
    assert again.num_graphs == 4 and again.graph.tolist() == [0, 0, 0, 1, 2, 2, 3, 3, 3]
    assert again.edge_index.tolist() == [[0, 1, 4, 6, 7], [1, 2, 5, 7, 8]]


def test_an_empty_batch_has_no_nodes_and_no_graphs():
    empty = concatenate_graphs([])
    empty.validate()
    assert (empty.num_nodes, empty.num_graphs, empty.edge_index.shape) == (0, 0, (2, 0))
    assert all(array.dtype == np.int64 for array in (empty.tag, empty.attr, empty.char, empty.pos, empty.graph))
