"""The plugin's ``eqsearch_maxsim`` rescorer on a real node that has it: the MaxSim of the query's node vectors (rounded
to int8 in the node) against the int8 node vectors stored with each equation equals `maxsim_scores` on those rounded
vectors (both directions, within rounding) and lies within 0.03 of it on the float vectors; an equation without
stored vectors is told apart; the service's MaxSim step scores in the node where the index stores vectors; hostile
bodies get 400s.

Skipped when the node lacks the plugin's MaxSim (plugin 1.1 and later; ``conftest.py`` says when CI fails instead).
"""

from __future__ import annotations

import base64

import numpy as np
import pytest
from eqsearch.engine.index.documents import node_vectors_value
from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD, NODE_VECTORS_MAPPING
from eqsearch.engine.search.maxsim import maxsim_scores, stored_maxsim_scores
from eqsearch.engine.search.plugin import MAXSIM_RESCORER, PluginUse, maxsim_body

pytestmark = pytest.mark.es

DIMS = 24


def _stored(value: str) -> np.ndarray:
    raw = base64.b64decode(value)
    nodes, dims = int.from_bytes(raw[1:3], "little"), int.from_bytes(raw[3:5], "little")
    return np.frombuffer(raw[5:], dtype=np.int8).reshape(nodes, dims).astype(np.float32)


@pytest.fixture
def plugin_index(es_client, index_name, require_plugin) -> tuple[str, dict[str, np.ndarray]]:
    require_plugin(maxsim=True)
    es_client.indices.create(
        index=index_name,
        mappings={"properties": {"eq_id": {"type": "keyword"}, NODE_VECTORS_FIELD: NODE_VECTORS_MAPPING}},
    )
    rng = np.random.default_rng(7)
    vectors = {f"e{i}": rng.normal(size=(int(rng.integers(1, 40)), DIMS)).astype(np.float32) for i in range(40)}
    for eq_id, v in vectors.items():
        es_client.index(
            index=index_name, id=eq_id, document={"eq_id": eq_id, NODE_VECTORS_FIELD: node_vectors_value(v)}
        )
    es_client.index(index=index_name, id="bare", document={"eq_id": "bare"})  # no node vectors (no MathML)
    es_client.indices.refresh(index=index_name)
    return index_name, vectors


@pytest.mark.parametrize("symmetric", [False, True])
def test_the_node_computes_maxsim_of_the_stored_vectors(es_client, plugin_index, symmetric):
    index, vectors = plugin_index
    query = np.random.default_rng(11).normal(size=(9, DIMS)).astype(np.float32)
    ids = [*vectors, "bare"]
    scores = stored_maxsim_scores(es_client, index, ids, query, symmetric=symmetric)
    assert set(scores) == set(vectors)  # the bare equation is left out: its fused score will stand
    stored = {eq_id: _stored(node_vectors_value(v)) for eq_id, v in vectors.items()}
    rounded_query = _stored(node_vectors_value(query))  # the node rounds the query's unit rows to int8 alike
    exact = maxsim_scores(rounded_query, [stored[eq_id] for eq_id in vectors], symmetric=symmetric)
    floats = maxsim_scores(query, list(vectors.values()), symmetric=symmetric)
    got = np.array([scores[eq_id] for eq_id in vectors], dtype=np.float32)
    np.testing.assert_allclose(got, exact, atol=1e-3)  # a component may round the other way in float32 here
    assert np.abs(got - floats).max() < 0.03  # int8 against float32 vectors
    assert len(set(np.round(got, 4))) > 30  # the scores differ: the comparison compared something


def _status(es_client, index: str, rescorer: dict) -> tuple[int, str]:
    from elasticsearch import ApiError

    body = {"query": {"match_all": {}}, "rescore": {"window_size": 10, MAXSIM_RESCORER: rescorer}}
    try:
        es_client.search(index=index, **body)
    except ApiError as error:
        return error.status_code, str(error.body)
    return 200, ""


@pytest.mark.parametrize(
    ("rescorer", "says"),
    [
        ({"dims": DIMS}, "needs [query_vectors] and [dims]"),
        ({"query_vectors": "", "dims": DIMS}, "must hold 1 to 2048 vectors"),
        ({"query_vectors": "not base64!", "dims": DIMS}, "is not base64"),
        ({"query_vectors": base64.b64encode(b"\0" * 12).decode(), "dims": DIMS}, "must hold 1 to 2048 vectors"),
        ({"query_vectors": base64.b64encode(b"\0" * 4 * 3000 * 2).decode(), "dims": 2}, "must hold 1 to 2048"),
        ({"query_vectors": base64.b64encode(np.full(DIMS, np.nan, "<f4").tobytes()).decode(), "dims": DIMS}, "finite"),
        ({"query_vectors": "AAAAAA==", "dims": 0}, "[dims] must lie in"),
        ({"query_vectors": "AAAAAA==", "dims": 1, "field": "eq_id"}, "must be binary with doc values"),
        ({"query_vectors": "AAAAAA==", "dims": 1, "nonsense": True}, "nonsense"),
    ],
    ids=lambda value: None,
)
def test_a_hostile_maxsim_body_gets_a_400_that_says_what_is_wrong(es_client, plugin_index, rescorer, says):
    index, _ = plugin_index
    status, text = _status(es_client, index, rescorer)
    assert status == 400, text
    assert says in text


def test_the_service_step_uses_the_node_only_where_the_index_stores_vectors(es_client, plugin_index, index_name):
    index, _ = plugin_index
    use = PluginUse(es_client)
    assert use.stored_node_vectors(index)
    es_client.indices.create(index=f"{index_name}-plain", mappings={"properties": {"eq_id": {"type": "keyword"}}})
    assert not use.stored_node_vectors(f"{index_name}-plain")
    assert not PluginUse(es_client, wanted=False).stored_node_vectors(index)
    body = maxsim_body(["e1"], np.ones((2, DIMS), dtype=np.float32), symmetric=False)
    assert body["rescore"][MAXSIM_RESCORER]["dims"] == DIMS and body["size"] == 1
