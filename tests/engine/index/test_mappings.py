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


def test_a_quantized_vector_type_rescores_with_the_floats_as_asked_and_records_it():
    from eqsearch.engine.index.mappings import QUANTIZED_TYPES

    plain = index_definition("equations", IndexOptions(index_type="int8_hnsw"))
    assert "rescore_vector" not in plain["mappings"]["properties"]["vector"]["index_options"]
    assert "oversample" not in plain["mappings"]["_meta"]
    for kind in ("int8_hnsw", "int4_hnsw", "bbq_hnsw"):
        assert kind in QUANTIZED_TYPES
        chosen = index_definition("equations", IndexOptions(index_type=kind, oversample=3.0))["mappings"]
        assert chosen["properties"]["vector"]["index_options"]["rescore_vector"] == {"oversample": 3.0}
        assert chosen["_meta"]["oversample"] == 3.0 and chosen["_meta"]["index_type"] == kind
    floats = index_definition("equations", IndexOptions(index_type="hnsw", oversample=3.0))["mappings"]
    assert "rescore_vector" not in floats["properties"]["vector"]["index_options"]  # nothing to rescore from


def test_int8_vectors_where_compared_by_cosine_and_a_float_context_vector_beside_them():
    from eqsearch.engine.index.mappings import default_element_type

    assert default_element_type("cosine") == "byte"
    assert default_element_type("max_inner_product") == "float"  # an inner product needs the vectors' lengths
    assert default_element_type("cosine", "int8_hnsw") == "float"  # a quantized type quantizes floats itself
    mappings = index_definition("equations", IndexOptions(similarity="cosine", element_type="byte"))["mappings"]
    assert mappings["properties"]["vector"]["element_type"] == "byte"
    assert "element_type" not in mappings["properties"]["context_vector"]  # its writers send floats
    assert mappings["_meta"]["element_type"] == "byte"
    assert "element_type" not in index_definition("equations", IndexOptions())["mappings"]["properties"]["vector"]
    with pytest.raises(ValueError, match="cosine"):
        IndexOptions(element_type="byte")  # max_inner_product
    with pytest.raises(ValueError, match="hnsw"):
        IndexOptions(similarity="cosine", element_type="byte", index_type="bbq_hnsw")
    with pytest.raises(ValueError, match="element_type"):
        IndexOptions(element_type="half")


@pytest.mark.es
def test_an_int8_index_takes_whole_numbers_and_refuses_fractions(es_client, index_name):
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(dims=4, similarity="cosine", element_type="byte"), kinds=("equations",))
    alias = f"{index_name}-equations"
    es_client.index(index=alias, id="p:0", document={"eq_id": "p:0", "vector": [127, -3, 0, 64]}, refresh=True)
    with pytest.raises(BadRequestError):
        es_client.index(index=alias, id="p:1", document={"eq_id": "p:1", "vector": [0.5, 0.1, 0.0, 0.2]})
    with pytest.raises(BadRequestError):
        es_client.index(index=alias, id="p:2", document={"eq_id": "p:2", "vector": [128, 0, 0, 0]})


def test_a_span_is_written_short_its_kind_kept():
    from eqsearch.engine.index.mappings import SPAN_TERM_BYTES, span_term

    span = "r" + "0123456789abcdef"
    term = span_term(span)
    assert term == "rASNFZ4mr" and len(term) == 1 + 4 * SPAN_TERM_BYTES // 3  # six bytes, eight base64 characters
    assert span_term("e" + "0123456789abcdef") == "eASNFZ4mr"  # the kind tells renamed, exact, generalised apart
    assert span_term("r" + "0123456789abffff") == term  # only the first six bytes count
    assert span_term("r" + "ffffffffffff0000") == "r________"  # URL-safe base64: no "/" or "+" in a term
