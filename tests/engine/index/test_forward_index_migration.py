"""On a real node: an equations index of mapping version 6 (no forward index) is stale, and ``migrate`` fills every
equation's forward index from its stored formula (the terms the structural field holds, counted), as the earlier
bumps filled sizes (5) and long spans (6); the search side's use of it is tested in ``tests/es_plugin/``."""

from __future__ import annotations

from eqsearch.engine.index import FORWARD_INDEX_FIELD, STRUCTURE_FIELD, IndexAdmin, IndexOptions, bulk_index
from eqsearch.engine.index.forward_index import analysed_terms, forward_index_value
from eqsearch.engine.index.mappings import MAPPING_VERSIONS, index_definition

FORMULAS = {
    "p0:0": ("x^2 + x^2", "<math><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><msup><mi>x</mi><mn>2</mn></msup></math>"),
    "p0:1": (r"\frac{1}{", None),  # KaTeX refused it: its terms come from the LaTeX
    "p1:0": ("a+b", "<math><mi>a</mi><mo>+</mo><mi>b</mi></math>"),
}


def test_migrating_a_version_6_index_fills_every_forward_index(es_client, index_name):
    admin = IndexAdmin(es_client, index_name)
    old = index_definition("equations", IndexOptions())
    old["mappings"]["properties"].pop(FORWARD_INDEX_FIELD)
    old["mappings"]["_meta"]["mapping_version"] = 6
    source = f"{index_name}-equations-v1"
    es_client.indices.create(index=source, **old, aliases={admin.alias("equations"): {"is_write_index": True}})
    actions = [
        {"_index": source, "_id": eq_id, "_source": {"eq_id": eq_id, "latex": latex, "mathml": mathml}}
        for eq_id, (latex, mathml) in FORMULAS.items()
    ]
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0
    assert admin.describe("equations")["stale"]
    report = admin.migrate("equations")
    assert (report.copied, report.target_count) == (3, 3)
    described = admin.describe("equations")
    assert not described["stale"] and described["mapping_version"] == MAPPING_VERSIONS["equations"] == 7
    stored = es_client.search(index=admin.alias("equations"), size=10)["hits"]["hits"]
    assert len(stored) == 3
    for hit in stored:
        body = hit["_source"]
        assert body[STRUCTURE_FIELD]  # made anew from the formula, with its forward index
        assert body[FORWARD_INDEX_FIELD] == forward_index_value(analysed_terms(body[STRUCTURE_FIELD]))
    with_field = {"query": {"exists": {"field": FORWARD_INDEX_FIELD}}}
    assert es_client.count(index=admin.alias("equations"), **with_field)["count"] == 3
