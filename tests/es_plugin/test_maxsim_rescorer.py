"""The plugin's ``eqsearch_maxsim`` rescorer on a real node that has it: the MaxSim of the query's node vectors (rounded
to int8 in the node) against the int8 node vectors stored with each equation equals `maxsim_scores` on those rounded
vectors (both directions, within rounding; queries of one and of two passes of the node's vector kernel,
`test_maxsim_kernels.py`) and lies within 0.03 of it on the float vectors; an equation without stored vectors is told
apart; the service sees which index stores node vectors; hostile bodies get 400s. And the ``eqsearch_maxsim``
search extension: the fetch phase gives every returned hit the rescorer's score to
the last bit, leaves the search's own scores and order alone, and refuses the same hostile bodies.

Skipped when the node lacks the plugin version the engine ships (``conftest.py`` says when CI fails instead).
"""

from __future__ import annotations

import base64

import numpy as np
import pytest
from eqsearch.engine.index.documents import node_vectors_value
from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD, NODE_VECTORS_MAPPING
from eqsearch.engine.search.maxsim import maxsim_scores, stored_maxsim_scores
from eqsearch.engine.search.plugin import (
    MAXSIM_HIT_FIELD,
    MAXSIM_RESCORER,
    PluginUse,
    maxsim_body,
    maxsim_ext,
    maxsim_window_rescore,
)

pytestmark = pytest.mark.es

DIMS = 24


def _stored(value: str) -> np.ndarray:
    raw = base64.b64decode(value)
    nodes, dims = int.from_bytes(raw[1:3], "little"), int.from_bytes(raw[3:5], "little")
    return np.frombuffer(raw[5:], dtype=np.int8).reshape(nodes, dims).astype(np.float32)


@pytest.fixture
def plugin_index(es_client, index_name, require_plugin) -> tuple[str, dict[str, np.ndarray]]:
    require_plugin()
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
@pytest.mark.parametrize("query_nodes", [9, 40])  # one pass of the vector kernel over a candidate, or two
def test_the_node_computes_maxsim_of_the_stored_vectors(es_client, plugin_index, symmetric, query_nodes):
    index, vectors = plugin_index
    query = np.random.default_rng(11).normal(size=(query_nodes, DIMS)).astype(np.float32)
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


def test_the_fetch_phase_gives_each_hit_the_rescorers_score_to_the_last_bit(es_client, plugin_index, require_plugin):
    require_plugin()
    index, vectors = plugin_index
    for seed, symmetric in [(11, False), (12, True), (13, False)]:
        query = np.random.default_rng(seed).normal(size=(int(seed % 7 + 3), DIMS)).astype(np.float32)
        rescored = stored_maxsim_scores(es_client, index, [*vectors, "bare"], query, symmetric=symmetric)
        plain = es_client.search(
            index=index,
            query={"function_score": {"query": {"match_all": {}}, "random_score": {"seed": seed, "field": "eq_id"}}},
            size=50,
            stored_fields="_none_",
            docvalue_fields=["eq_id"],
        )["hits"]["hits"]
        found = es_client.search(
            index=index,
            query={"function_score": {"query": {"match_all": {}}, "random_score": {"seed": seed, "field": "eq_id"}}},
            size=50,
            stored_fields="_none_",
            docvalue_fields=["eq_id"],
            ext=maxsim_ext(query, symmetric=symmetric),
        )["hits"]["hits"]
        # the search's own scores and order are untouched
        assert [(hit["fields"]["eq_id"], hit["_score"]) for hit in found] == [
            (hit["fields"]["eq_id"], hit["_score"]) for hit in plain
        ]
        brought = {
            hit["fields"]["eq_id"][0]: hit["fields"][MAXSIM_HIT_FIELD][0]
            for hit in found
            if MAXSIM_HIT_FIELD in hit["fields"]
        }
        assert brought == rescored  # the same floats, and the bare equation has no score in either
        assert "bare" not in brought and len(brought) == len(vectors)


def test_the_fetch_phase_leaves_a_search_without_the_extension_alone(es_client, plugin_index, require_plugin):
    require_plugin()
    index, _ = plugin_index
    hits = es_client.search(index=index, size=5, stored_fields="_none_", docvalue_fields=["eq_id"])["hits"]["hits"]
    assert hits and all(set(hit["fields"]) == {"eq_id"} for hit in hits)


def test_an_index_without_node_vectors_gives_no_scores(es_client, index_name, require_plugin):
    require_plugin()
    index = f"{index_name}-bare"
    es_client.indices.create(index=index, mappings={"properties": {"eq_id": {"type": "keyword"}}})
    es_client.index(index=index, id="a", document={"eq_id": "a"}, refresh=True)
    ext = maxsim_ext(np.ones((2, DIMS), dtype=np.float32), symmetric=False)
    hits = es_client.search(index=index, docvalue_fields=["eq_id"], ext=ext)["hits"]["hits"]
    assert len(hits) == 1 and MAXSIM_HIT_FIELD not in hits[0]["fields"]


def _status(es_client, index: str, rescorer: dict, where: str = "rescore") -> tuple[int, str]:
    from elasticsearch import ApiError

    body = {"query": {"match_all": {}}}
    if where == "rescore":
        body["rescore"] = {"window_size": 10, MAXSIM_RESCORER: rescorer}
    else:
        body["ext"] = {MAXSIM_RESCORER: rescorer}
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
@pytest.mark.parametrize("where", ["rescore", "ext"])
def test_a_hostile_maxsim_body_gets_a_400_that_says_what_is_wrong(
    es_client, plugin_index, require_plugin, rescorer, says, where
):
    if where == "ext":
        require_plugin()
    index, _ = plugin_index
    status, text = _status(es_client, index, rescorer, where)
    assert status == 400, text
    assert says in text


def test_the_use_sees_which_index_stores_node_vectors(es_client, plugin_index, index_name):
    index, _ = plugin_index
    use = PluginUse(es_client)
    assert use.active and use.maps(index, NODE_VECTORS_FIELD)
    es_client.indices.create(index=f"{index_name}-plain", mappings={"properties": {"eq_id": {"type": "keyword"}}})
    assert not use.maps(f"{index_name}-plain", NODE_VECTORS_FIELD)
    assert not PluginUse(es_client, wanted=False).active
    body = maxsim_body(["e1"], np.ones((2, DIMS), dtype=np.float32), symmetric=False)
    assert body["rescore"][MAXSIM_RESCORER]["dims"] == DIMS and body["size"] == 1


@pytest.mark.parametrize("body", ["[]", '"x"', "{", '{"query_vectors": 5, "dims": "many"}', "null"])
def test_an_ext_that_is_not_an_object_of_its_fields_gets_a_400(es_client, plugin_index, require_plugin, body):
    require_plugin()
    index, _ = plugin_index
    _assert_refused(es_client, index, '{"query": {"match_all": {}}, "ext": {"eqsearch_maxsim": ' + body + "}}")


def _assert_refused(es_client, index: str, raw: str) -> None:
    """A search body sent as these very bytes gets a 400 (never a node error)."""
    from elasticsearch import ApiError

    with pytest.raises(ApiError) as refused:
        es_client.perform_request(
            "POST", f"/{index}/_search", headers={"content-type": "application/json", "accept": "application/json"},
            body=raw.encode(),
        )  # fmt: skip
    assert refused.value.status_code == 400, refused.value


@pytest.mark.parametrize("shards", [1, 3])
def test_the_window_rescore_limits_the_scores_to_each_shards_top_hits(
    es_client, plugin_index, index_name, require_plugin, shards
):
    """Plugin 1.5: with ``eqsearch_maxsim_window`` last in the rescores, only each shard's top K hits bring a score
    (the same floats), the search's scores and order stay; on three shards the fetch phase, a request of its own,
    still knows which hits the query phase's window held."""
    require_plugin()
    index, vectors = plugin_index
    if shards > 1:
        index = f"{index_name}-shards"
        es_client.indices.create(
            index=index,
            settings={"number_of_shards": shards, "number_of_replicas": 0},
            mappings={"properties": {"eq_id": {"type": "keyword"}, NODE_VECTORS_FIELD: NODE_VECTORS_MAPPING}},
        )
        for eq_id, v in vectors.items():
            es_client.index(index=index, id=eq_id, document={"eq_id": eq_id, NODE_VECTORS_FIELD: node_vectors_value(v)})
        es_client.indices.refresh(index=index)
    query = np.random.default_rng(21).normal(size=(5, DIMS)).astype(np.float32)
    rescored = stored_maxsim_scores(es_client, index, list(vectors), query, symmetric=False)
    body = {
        "query": {"function_score": {"query": {"match_all": {}}, "random_score": {"seed": 3, "field": "eq_id"}}},
        "size": 30,
        "stored_fields": "_none_",
        "docvalue_fields": ["eq_id"],
    }
    plain = es_client.search(index=index, **body)["hits"]["hits"]
    window = 7
    found = es_client.search(
        index=index, **body, ext=maxsim_ext(query, symmetric=False), rescore=[maxsim_window_rescore(window)]
    )["hits"]["hits"]
    assert [(h["fields"]["eq_id"], h["_score"]) for h in found] == [(h["fields"]["eq_id"], h["_score"]) for h in plain]
    brought = {
        h["fields"]["eq_id"][0]: h["fields"][MAXSIM_HIT_FIELD][0] for h in found if MAXSIM_HIT_FIELD in h["fields"]
    }
    top = [h["fields"]["eq_id"][0] for h in found[:window] if h["fields"]["eq_id"][0] in vectors]  # "bare" has none
    assert set(top) <= set(brought)  # the list's top K always: what the engine relies on
    assert all(brought[eq_id] == rescored[eq_id] for eq_id in brought)  # the rescorer's floats
    if shards == 1:
        assert set(brought) == set(top)
    else:
        assert window < len(brought) <= shards * window  # each shard's own top K


def test_the_window_rescore_never_cuts_a_tie(es_client, plugin_index, require_plugin):
    """The hits tied with the window's last one are scored too (copies of one formula tie, and the
    engine's fusion may order them otherwise than the shard does), and none below the tie."""
    require_plugin()
    index, vectors = plugin_index
    ids = list(vectors)
    query = np.random.default_rng(21).normal(size=(5, DIMS)).astype(np.float32)
    levels = {"bool": {"should": [  # ten hits at 3.0 (a tie across the window of 7), the rest at 1.0
        {"constant_score": {"filter": {"ids": {"values": ids[:10]}}, "boost": 2.0}},
        {"constant_score": {"filter": {"exists": {"field": "eq_id"}}, "boost": 1.0}},
    ]}}  # fmt: skip
    found = es_client.search(
        index=index, query=levels, size=30, stored_fields="_none_", docvalue_fields=["eq_id"],
        ext=maxsim_ext(query, symmetric=False), rescore=[maxsim_window_rescore(7)],
    )["hits"]["hits"]  # fmt: skip
    assert [h["_score"] for h in found[:11]] == [3.0] * 10 + [1.0]
    brought = {h["fields"]["eq_id"][0] for h in found if MAXSIM_HIT_FIELD in h["fields"]}
    assert brought == set(ids[:10])


@pytest.mark.parametrize("marker", ['{"x": 1}', "[]", '"on"', "null"], ids=["unknown field", "array", "string", "null"])
def test_a_hostile_window_rescore_gets_a_400(es_client, plugin_index, require_plugin, marker):
    require_plugin()
    index, _ = plugin_index
    _assert_refused(
        es_client,
        index,
        '{"query": {"match_all": {}}, "rescore": {"window_size": 5, "eqsearch_maxsim_window": ' + marker + "}}",
    )
