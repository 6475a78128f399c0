"""Index definitions: names, versions, and the mappings a real node accepts (and the documents it refuses)."""

from __future__ import annotations

import pytest
from elasticsearch import BadRequestError
from eqsearch.engine.index import (
    INDEX_KINDS,
    MAPPING_VERSIONS,
    IndexAdmin,
    IndexOptions,
    alias_name,
    index_definition,
    parse_version,
    probe_text_analyzer,
    versioned_name,
)


def test_names_and_versions():
    assert alias_name("eqsearch", "equations") == "eqsearch-equations"
    assert versioned_name("eqsearch", "papers", 3) == "eqsearch-papers-v3"
    assert parse_version("eqsearch", "papers", "eqsearch-papers-v12") == 12
    assert parse_version("eqsearch", "papers", "eqsearch-papers-vX") is None
    assert parse_version("eqsearch", "papers", "eqsearch-equations-v1") is None
    with pytest.raises(ValueError):
        alias_name("eqsearch", "nope")
    with pytest.raises(ValueError):
        IndexOptions(analyzer="french")


def test_equations_definition_carries_the_decision_and_the_analyzer():
    definition = index_definition("equations", IndexOptions(dims=64, analyzer="english"))
    vector = definition["mappings"]["properties"]["vector"]
    assert vector["dims"] == 64
    assert vector["similarity"] == "max_inner_product"
    assert vector["index_options"]["type"] == "hnsw"
    assert definition["mappings"]["properties"]["context"]["analyzer"] == "english"
    assert definition["mappings"]["_meta"]["analyzer"] == "english"
    assert definition["mappings"]["dynamic"] == "strict"


@pytest.mark.es
def test_the_node_accepts_every_definition(es_client, index_name):
    analyzer = probe_text_analyzer(es_client)
    assert analyzer == "standard"  # the minimal distribution has no analysis-common, hence no english analyzer
    admin = IndexAdmin(es_client, index_name)
    created = admin.ensure(IndexOptions(analyzer=analyzer))
    assert created == {kind: f"{index_name}-{kind}-v1" for kind in INDEX_KINDS}
    mapping = es_client.indices.get_mapping(index=f"{index_name}-equations")[created["equations"]]["mappings"]
    assert mapping["properties"]["vector"]["index_options"]["type"] == "hnsw"
    assert mapping["_meta"]["mapping_version"] == MAPPING_VERSIONS["equations"]
    assert admin.ensure(IndexOptions(analyzer=analyzer)) == created  # idempotent


@pytest.mark.es
def test_strict_mappings_refuse_unknown_fields_and_wrong_widths(es_client, index_name):
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(), kinds=("equations",))
    alias = f"{index_name}-equations"
    es_client.index(index=alias, id="p:0", document={"eq_id": "p:0", "vector": [0.1] * 64}, refresh=True)
    with pytest.raises(BadRequestError):
        es_client.index(index=alias, id="p:1", document={"eq_id": "p:1", "surprise": 1})
    with pytest.raises(BadRequestError):
        es_client.index(index=alias, id="p:2", document={"eq_id": "p:2", "vector": [0.1] * 32})
