"""On a real node: an equations index of an older mapping version is stale, and ``migrate`` makes every equation's
derived fields anew from its stored formula: the forward index an index of version 6 lacks (the terms the structural
field holds, counted), as the earlier bumps filled sizes (5) and long spans (6), and, from version 8, with the derived
fields indexed and in doc values but no longer in the documents' sources (an index of version 7 holds them there),
from version 9, without the paper's own fields (title, abstract, authors, citations: the papers index's), and, from
version 10, with the formula vectors compared by cosine rounded to int8 and stored so (``element_type: byte``),
from version 11, with the spans written short (`span_term`), and, from version 12, with 32 links a vector in the HNSW
graph, recorded in the index's ``_meta``.
The search side's use of the forward index is tested in ``tests/es_plugin/``."""

from __future__ import annotations

import numpy as np
import pytest
from eqsearch.engine.index import FORWARD_INDEX_FIELD, STRUCTURE_FIELD, IndexAdmin, IndexOptions, bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import (
    DERIVED_FIELDS,
    MAPPING_VERSIONS,
    PAPER_ONLY_FIELDS,
    SPANS_FIELD,
    index_definition,
    span_term,
)
from eqsearch.engine.index.vectors import query_vector
from eqsearch.engine.model.structure import formula_structure

#: An equation's copy of its paper's fields, as mapping versions up to 8 held them.
PAPER = {"title": "On sums", "abstract": "Sums of squares.", "authors": ["A. Author"], "citations_out": ["p9"]}

#: The old index's float vectors (cosine), one per formula that converted.
VECTORS = {"p0:0": [0.5, -0.25, 1.0, 0.125], "p1:0": [-2.0, 0.0, 0.5, 1.5]}

FORMULAS = {
    "p0:0": ("x^2 + x^2", "<math><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><msup><mi>x</mi><mn>2</mn></msup></math>"),
    "p0:1": (r"\frac{1}{", None),  # KaTeX refused it: its terms come from the LaTeX
    "p1:0": ("a+b", "<math><mi>a</mi><mo>+</mo><mi>b</mi></math>"),
}


def _old_index(es_client, admin: IndexAdmin, index_name: str, version: int) -> str:
    """An equations index as mapping ``version`` made it, holding `FORMULAS` (version 7: with their derived fields in
    their sources; version 6: without a forward index)."""
    old = index_definition("equations", IndexOptions(dims=4, similarity="cosine"))
    papers = index_definition("papers", IndexOptions())["mappings"]["properties"]
    old["mappings"]["properties"].update({name: papers[name] for name in PAPER_ONLY_FIELDS})
    if version < 8:
        old["mappings"].pop("_source")
    old["mappings"]["_meta"]["mapping_version"] = version
    del old["mappings"]["_meta"]["element_type"]  # recorded from version 10
    for recorded in ("hnsw_m", "ef_construction"):  # recorded from version 12, with a graph of 16 links before
        del old["mappings"]["_meta"][recorded]
    old["mappings"]["properties"]["vector"]["index_options"]["m"] = 16
    if version < 7:
        old["mappings"]["properties"].pop(FORWARD_INDEX_FIELD)
    source = f"{index_name}-equations-v1"
    es_client.indices.create(index=source, **old, aliases={admin.alias("equations"): {"is_write_index": True}})
    actions = []
    for eq_id, (latex, mathml) in FORMULAS.items():
        body = {"eq_id": eq_id, "paper_id": eq_id.split(":")[0], "latex": latex, "mathml": mathml, **PAPER}
        if eq_id in VECTORS:
            body["vector"] = VECTORS[eq_id]
        if version >= 7:
            body.update(structure_fields(mathml, latex))
            body[SPANS_FIELD] = sorted(formula_structure(mathml, latex).spans)  # 16 hex digits before version 11
        actions.append({"_index": source, "_id": eq_id, "_source": body})
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0
    return source


@pytest.mark.parametrize("version", [6, 7, 8, 9, 10, 11])
def test_migrating_an_older_index_makes_every_derived_field_and_keeps_them_out_of_the_sources(
    es_client, index_name, version
):
    admin = IndexAdmin(es_client, index_name)
    source = _old_index(es_client, admin, index_name, version)
    if version == 7:  # before version 8: the derived fields were most of each stored source
        stored = es_client.get(index=source, id="p0:0")["_source"]
        assert set(DERIVED_FIELDS) - {"node_vectors"} <= set(stored)
    assert admin.describe("equations")["stale"]
    report = admin.migrate("equations")
    assert (report.copied, report.target_count) == (3, 3)
    described = admin.describe("equations")
    assert not described["stale"] and described["mapping_version"] == MAPPING_VERSIONS["equations"] == 12
    assert described["vector"]["element_type"] == "byte" and admin.options_of("equations").element_type == "byte"
    assert described["vector"]["index_options"]["m"] == 32 and admin.options_of("equations").hnsw_m == 32
    alias = admin.alias("equations")
    hits = es_client.search(index=alias, size=10, docvalue_fields=[FORWARD_INDEX_FIELD])["hits"]["hits"]
    assert len(hits) == 3
    for hit in hits:
        body = hit["_source"]
        assert not set(DERIVED_FIELDS) & set(body) and body["latex"] == FORMULAS[hit["_id"]][0]
        assert not set(PAPER_ONLY_FIELDS) & set(body) and body["paper_id"] == hit["_id"].split(":")[0]
        made = structure_fields(body.get("mathml"), body["latex"])
        assert hit["fields"][FORWARD_INDEX_FIELD] == [made[FORWARD_INDEX_FIELD]]  # made anew from the formula
    with_field = {"query": {"exists": {"field": FORWARD_INDEX_FIELD}}}
    assert es_client.count(index=alias, **with_field)["count"] == 3
    # the structural terms are indexed: the formula of x^2 + x^2 is found by its terms, as before the migration
    term = structure_fields(FORMULAS["p0:0"][1], FORMULAS["p0:0"][0])[STRUCTURE_FIELD].split()[0]
    found = es_client.search(index=alias, query={"term": {STRUCTURE_FIELD: term}})["hits"]["hits"]
    assert "p0:0" in {hit["_id"] for hit in found}
    # the spans are written short: found by their short terms, no longer by their 16 hex digits
    span = max(formula_structure(FORMULAS["p0:0"][1], FORMULAS["p0:0"][0]).spans.items(), key=lambda item: item[1])[0]
    assert [
        h["_id"] for h in es_client.search(index=alias, query={"term": {SPANS_FIELD: span_term(span)}})["hits"]["hits"]
    ] == ["p0:0"]
    assert not es_client.search(index=alias, query={"term": {SPANS_FIELD: span}})["hits"]["hits"]
    # the vectors moved to int8, each scaled by its largest component, and the kNN of a rounded query finds them
    stored = {
        hit["_id"]: hit["_source"].get("vector")
        for hit in es_client.search(index=alias, source={"exclude_vectors": False})["hits"]["hits"]
    }
    assert stored == {"p0:0": [64, -32, 127, 16], "p0:1": None, "p1:0": [-127, 0, 32, 95]}
    query = query_vector(np.array(VECTORS["p1:0"]) * 3.0, "cosine").tolist()
    knn = {"field": "vector", "query_vector": query, "k": 1, "num_candidates": 10}
    assert [hit["_id"] for hit in es_client.search(index=alias, knn=knn)["hits"]["hits"]] == ["p1:0"]
