"""What eqsearch relies on in Elasticsearch, proved on a real node with exact expected results.

A 64-d `dense_vector` (int8_hnsw) beside text and keyword fields; bulk indexing a few hundred documents; kNN,
BM25, and kNN + BM25 in one request with named clauses; `collapse` on a keyword field; an alias swapped
atomically between two index versions.
"""

from __future__ import annotations

import numpy as np
import pytest
from elasticsearch import helpers

pytestmark = pytest.mark.es

DIMS = 64
N_DOCS = 300


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


_RNG = np.random.default_rng(7)
# Dense vectors like real embeddings: int8 quantisation clips outlying components, so spiky test vectors
# (one-hot-like) would measure the quantiser, not the search.
QUERY_VECTOR = _unit(_RNG.normal(size=DIMS))


def _with_cosine(cos: float) -> np.ndarray:
    """A dense unit vector whose cosine with QUERY_VECTOR is exactly `cos`."""
    noise = _RNG.normal(size=DIMS)
    orthogonal = _unit(noise - noise.dot(QUERY_VECTOR) * QUERY_VECTOR)
    return cos * QUERY_VECTOR + np.sqrt(1 - cos**2) * orthogonal


def _corpus() -> list[dict]:
    """Docs 0-9 have cosine 1.0, 0.95, ..., 0.55 with the query; every other doc has cosine 0.3 at most."""
    rng = np.random.default_rng(11)
    docs = []
    for i in range(N_DOCS):
        if i < 10:
            vector, paper = _with_cosine(1.0 - 0.05 * i), f"p{i // 2}"
        else:
            vector, paper = _with_cosine(float(rng.uniform(-0.3, 0.3))), f"p{100 + i // 10}"
        words = ["energy", "lattice", "entropy", "gradient", "kernel", "operator"]
        context = " ".join(words[(i + k) % len(words)] for k in range(4))
        if i == 42:
            context += " ferromagnetism of the ising model"
        docs.append({"eq_id": f"eq{i}", "paper_id": paper, "context": context, "vector": vector.tolist()})
    return docs


MAPPING = {
    "properties": {
        "eq_id": {"type": "keyword"},
        "paper_id": {"type": "keyword"},
        "context": {"type": "text"},
        "vector": {
            "type": "dense_vector",
            "dims": DIMS,
            "similarity": "cosine",
            "index_options": {"type": "int8_hnsw"},
        },
    }
}


def _create(es_client, name: str, docs: list[dict]) -> None:
    es_client.indices.create(index=name, mappings=MAPPING, settings={"number_of_shards": 1, "number_of_replicas": 0})
    actions = ({"_index": name, "_id": doc["eq_id"], "_source": doc} for doc in docs)
    indexed, errors = helpers.bulk(es_client, actions, chunk_size=100, raise_on_error=False)
    assert errors == []
    assert indexed == len(docs)
    es_client.indices.refresh(index=name)


@pytest.fixture
def contract_index(es_client, index_name) -> str:
    _create(es_client, index_name, _corpus())
    return index_name


def _ids(response) -> list[str]:
    return [hit["_id"] for hit in response["hits"]["hits"]]


QUERY = QUERY_VECTOR.tolist()


def test_bulk_indexed_every_document_with_its_mapping(es_client, contract_index):
    assert es_client.count(index=contract_index)["count"] == N_DOCS
    mapping = es_client.indices.get_mapping(index=contract_index)[contract_index]["mappings"]["properties"]
    assert mapping["vector"]["type"] == "dense_vector"
    assert mapping["vector"]["dims"] == DIMS
    assert mapping["vector"]["index_options"]["type"] == "int8_hnsw"


def test_knn_returns_the_nearest_vectors_in_order(es_client, contract_index):
    response = es_client.search(
        index=contract_index, knn={"field": "vector", "query_vector": QUERY, "k": 10, "num_candidates": 100}, size=10
    )
    assert _ids(response) == [f"eq{i}" for i in range(10)]
    # cosine similarity s is scored (1 + s) / 2
    assert response["hits"]["hits"][0]["_score"] == pytest.approx(1.0, abs=0.01)
    assert response["hits"]["hits"][9]["_score"] == pytest.approx((1 + 0.55) / 2, abs=0.01)


def test_knn_prefilter_keeps_k_hits(es_client, contract_index):
    response = es_client.search(
        index=contract_index,
        knn={"field": "vector", "query_vector": QUERY, "k": 3, "num_candidates": 100,
             "filter": {"terms": {"paper_id": ["p1", "p3"]}}},
        size=3,
    )  # fmt: skip
    assert _ids(response) == ["eq2", "eq3", "eq6"]


def test_bm25_finds_the_only_matching_document(es_client, contract_index):
    response = es_client.search(index=contract_index, query={"match": {"context": "ising"}})
    assert response["hits"]["total"]["value"] == 1
    assert _ids(response) == ["eq42"]


def test_hybrid_knn_plus_bm25_in_one_request_names_what_matched(es_client, contract_index):
    response = es_client.search(
        index=contract_index,
        knn={"field": "vector", "query_vector": QUERY, "k": 10, "num_candidates": 100, "_name": "formula"},
        query={"match": {"context": {"query": "ising", "_name": "text"}}},
        size=20,
    )
    ids = _ids(response)
    assert ids[0] == "eq42"  # the BM25 score of a rare term outweighs a kNN score in [0, 1]
    assert set(ids) == {"eq42"} | {f"eq{i}" for i in range(10)}
    assert ids[1:] == [f"eq{i}" for i in range(10)]
    matched = {hit["_id"]: set(hit.get("matched_queries", [])) for hit in response["hits"]["hits"]}
    assert matched["eq42"] == {"text"}
    assert all(matched[f"eq{i}"] == {"formula"} for i in range(10))


def test_collapse_groups_hits_by_paper(es_client, contract_index):
    response = es_client.search(
        index=contract_index,
        knn={"field": "vector", "query_vector": QUERY, "k": 10, "num_candidates": 100},
        collapse={"field": "paper_id"},
        size=10,
    )
    assert _ids(response) == ["eq0", "eq2", "eq4", "eq6", "eq8"]
    assert [hit["fields"]["paper_id"] for hit in response["hits"]["hits"]] == [["p0"], ["p1"], ["p2"], ["p3"], ["p4"]]


def test_alias_swaps_atomically_between_index_versions(es_client, index_name):
    docs = _corpus()
    v1, v2, alias = f"{index_name}-v1", f"{index_name}-v2", index_name
    _create(es_client, v1, docs[:100])
    _create(es_client, v2, docs)
    es_client.indices.put_alias(index=v1, name=alias)
    assert es_client.count(index=alias)["count"] == 100
    es_client.indices.update_aliases(
        actions=[{"remove": {"index": v1, "alias": alias}}, {"add": {"index": v2, "alias": alias}}]
    )
    assert list(es_client.indices.get_alias(name=alias)) == [v2]
    assert es_client.count(index=alias)["count"] == N_DOCS
