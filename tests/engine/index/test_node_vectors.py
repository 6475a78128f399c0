"""The stored node vectors (`node_vectors_value`): the layout the plugin's MaxSim reads, unit rows in int8."""

from __future__ import annotations

import base64
from dataclasses import replace

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


def test_the_field_is_mapped_only_where_chosen_and_the_meta_names_the_encoder():
    from eqsearch.engine.index.mappings import NODE_VECTORS_MAPPING, IndexOptions, index_definition

    plain = index_definition("equations", IndexOptions())["mappings"]
    assert NODE_VECTORS_FIELD not in plain["properties"] and "node_vectors" not in plain["_meta"]
    chosen = index_definition("equations", IndexOptions(node_vectors="b/node_states", node_dims=512))["mappings"]
    assert chosen["properties"][NODE_VECTORS_FIELD] == NODE_VECTORS_MAPPING
    assert (chosen["_meta"]["node_vectors"], chosen["_meta"]["node_dims"]) == ("b/node_states", 512)
    assert chosen["_meta"]["mapping_version"] == plain["_meta"]["mapping_version"]  # an option, not a new mapping
    assert (
        "node_vectors"
        not in index_definition("papers", IndexOptions(node_vectors="b/x", node_dims=2))["mappings"]["_meta"]
    )
    for bad in ({"node_vectors": "b/node_states"}, {"node_dims": 512}, {"node_vectors": "b/x", "node_dims": 0}):
        with pytest.raises(ValueError, match="node vectors need both"):
            IndexOptions(**bad)


FORMULAS = {
    "p0:0": ("x^2 + y", "<math><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><mi>y</mi></math>"),
    "p0:1": (r"\frac{1}{", None),  # KaTeX refused it: no MathML, no node vectors
    "p1:0": ("a+b", "<math><mi>a</mi><mo>+</mo><mi>b</mi></math>"),
}


def test_a_migration_keeps_writes_or_drops_the_node_vectors(es_client, index_name):
    from eqsearch.engine.index import IndexAdmin, IndexOptions, bulk_index
    from eqsearch.engine.model.nodes import load_node_encoder

    node_states = load_node_encoder(None, output="node_states")
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(), kinds=("equations", "jobs"))
    alias = admin.alias("equations")
    actions = [
        {"_index": alias, "_id": eq_id, "_source": {"eq_id": eq_id, "latex": latex, "mathml": mathml}}
        for eq_id, (latex, mathml) in FORMULAS.items()
    ]
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0

    def stored() -> dict[str, str | None]:
        hits = es_client.search(index=alias, size=10, docvalue_fields=[NODE_VECTORS_FIELD])["hits"]["hits"]
        return {hit["_id"]: (hit.get("fields", {}).get(NODE_VECTORS_FIELD) or [None])[0] for hit in hits}

    admin.migrate("equations", node_encoder=node_states)  # --node-vectors: every stored equation gets them
    expected = {
        eq_id: node_vectors_value(node_states.encode([mathml])[0]) if mathml else None
        for eq_id, (_, mathml) in FORMULAS.items()
    }
    assert stored() == expected
    assert admin.options_of("equations").node_vectors == node_states.identity
    admin.migrate("equations")  # a plain migration keeps them (made anew by the shipped bundle's sidecar)
    assert stored() == expected
    assert admin.options_of("equations").node_dims == 512
    dropped = replace(admin.options_of("equations"), node_vectors=None, node_dims=None)  # --no-node-vectors
    admin.migrate("equations", dropped)
    assert stored() == dict.fromkeys(FORMULAS)
    mapping = next(iter(es_client.indices.get_mapping(index=alias).values()))["mappings"]
    assert NODE_VECTORS_FIELD not in mapping["properties"] and "node_vectors" not in mapping["_meta"]


def test_a_migration_refuses_node_vectors_of_another_bundle(es_client, index_name):
    from eqsearch.engine.index import IndexAdmin, IndexOptions, MigrationError

    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(node_vectors="kdd20-gcn:0000000000000000/node_states", node_dims=512))
    with pytest.raises(MigrationError, match="the shipped bundle's are") as refused:
        admin.migrate("equations")
    assert "--no-node-vectors" in (refused.value.hint or "")
    assert admin.current("equations").endswith("-v1")  # nothing moved
