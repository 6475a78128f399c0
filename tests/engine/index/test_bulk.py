"""Bulk writing: failure records read from bulk items, and on a real node: per-document failures, and the
bulk-loading settings restored even when the load fails."""

from __future__ import annotations

import pytest
from eqsearch.engine.index import (
    BulkFailure,
    IndexAdmin,
    IndexOptions,
    bulk_failure,
    bulk_index,
    bulk_loading_settings,
    current_load_settings,
    is_write_block,
)


def test_a_failed_item_becomes_a_failure_record():
    item = {
        "update": {
            "_index": "x-equations-v1",
            "_id": "p:0",
            "status": 400,
            "error": {"type": "mapper_parsing_exception", "reason": "failed to parse", "caused_by": {"reason": "bad"}},
        }
    }
    assert bulk_failure(item) == BulkFailure("p:0", "x-equations-v1", 400, "mapper_parsing_exception",
                                             "failed to parse: bad", "update")  # fmt: skip
    blocked = bulk_failure({"index": {"_id": "p:1", "status": 403, "error": {"type": "cluster_block_exception"}}})
    assert is_write_block(blocked) and not is_write_block(bulk_failure(item))
    assert bulk_failure({"delete": {"_id": "p:2", "error": "gone"}}) == BulkFailure(
        "p:2", "", 0, "error", "gone", "delete"
    )


@pytest.mark.es
def test_bulk_failures_come_back_per_document(es_client, index_name, equation_docs):
    admin = IndexAdmin(es_client, index_name)
    alias = f"{index_name}-equations"
    admin.create("equations", IndexOptions())
    actions = list(equation_docs(alias, 5))
    actions[1]["_source"]["vector"] = [1.0] * 3  # wrong width
    actions[3]["_source"]["number"] = "three"  # not an integer
    report = bulk_index(es_client, actions, refresh="wait_for")
    assert report.ok == 3
    assert [(f.doc_id, f.status) for f in report.failures] == [("p0:1", 400), ("p0:3", 400)]
    assert all(f.error_type and f.reason for f in report.failures)
    assert es_client.count(index=alias)["count"] == 3


@pytest.mark.es
def test_bulk_loading_settings_are_restored_even_on_failure(es_client, index_name):
    admin = IndexAdmin(es_client, index_name)
    name = admin.create("papers", IndexOptions())
    with pytest.raises(RuntimeError), bulk_loading_settings(es_client, name):
        assert es_client.indices.get_settings(index=name)[name]["settings"]["index"]["refresh_interval"] == "-1"
        raise RuntimeError("boom")
    assert current_load_settings(es_client, name) == {"refresh_interval": None, "number_of_replicas": 0}
