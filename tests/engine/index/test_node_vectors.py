"""The stored node vectors (`node_vectors_value`): the layout the plugin's MaxSim reads, unit rows in int8."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from eqsearch.engine.index.documents import NODE_VECTORS_FORMAT, node_vectors_value, with_node_vectors_field
from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD


def test_node_vectors_are_a_header_then_unit_rows_rounded_to_int8():
    vectors = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, -2.0]], dtype=np.float32)
    raw = base64.b64decode(node_vectors_value(vectors))
    assert raw[0] == NODE_VECTORS_FORMAT
    assert (int.from_bytes(raw[1:3], "little"), int.from_bytes(raw[3:5], "little")) == (2, 3)
    assert len(raw) == 5 + 2 * 3  # bytes per equation: 5 + nodes x width
    rows = np.frombuffer(raw[5:], dtype=np.int8).reshape(2, 3)
    assert rows.tolist() == [[76, 102, 0], [0, 0, -127]]  # 0.6 and 0.8 of 127, the unit row of -2


def test_a_zero_row_stays_zero_and_bad_shapes_are_refused():
    raw = base64.b64decode(node_vectors_value(np.zeros((1, 4))))
    assert raw[5:] == bytes(4)
    for bad in (np.zeros(4), np.zeros((0, 4)), np.zeros((2, 0)), np.zeros((70_000, 1))):
        with pytest.raises(ValueError, match="node vectors must be"):
            node_vectors_value(bad)


def test_a_formula_without_nodes_gets_no_field():
    document = {"eq_id": "x"}
    assert with_node_vectors_field(document, None) == document
    assert with_node_vectors_field(document, np.zeros((0, 4))) == document
    assert NODE_VECTORS_FIELD in with_node_vectors_field(document, np.ones((2, 4)))
