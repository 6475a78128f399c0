"""Versioned indices on a real node: create, list, describe, and the delete guards. (Bulk writing is in test_bulk.py,
migrations in test_migration.py, a migration while an ingest job writes in tests/ingest/jobs/test_writer.py.)"""

from __future__ import annotations

import pytest
from eqsearch.engine.index import IndexAdmin, IndexOperationError, IndexOptions, recommended_layout

pytestmark = pytest.mark.es


def test_create_list_describe_delete(es_client, index_name):
    admin = IndexAdmin(es_client, index_name)
    name = admin.create("equations", IndexOptions())
    assert name == f"{index_name}-equations-v1"
    with pytest.raises(IndexOperationError, match="already points"):
        admin.create("equations", IndexOptions())
    described = admin.describe("equations")
    assert described["index"] == name and described["analyzer"] == "standard" and not described["stale"]
    assert described["vector"]["index_options"]["type"] == "hnsw"
    [info] = admin.list()
    assert info.name == name and info.aliased and info.kind == "equations"
    with pytest.raises(IndexOperationError, match="points at"):
        admin.delete(name)
    with pytest.raises(IndexOperationError, match="not a versioned index"):
        admin.delete("something-else")
    admin.delete(name, force=True)
    assert admin.list() == []


@pytest.mark.parametrize(("data_nodes", "layout"), [(0, (1, 0)), (1, (1, 0)), (2, (2, 1)), (3, (3, 1)), (5, (5, 1))])
def test_recommended_layout_by_cluster_size(data_nodes, layout):
    assert recommended_layout(data_nodes) == layout


def test_default_options_follow_the_cluster_unless_told(es_client, index_name):
    assert es_client.cluster.health()["number_of_data_nodes"] == 1
    options = IndexAdmin(es_client, index_name).default_options()
    assert (options.shards, options.replicas) == (1, 0)
    told = IndexAdmin(es_client, index_name, shards=3, replicas=1).default_options()
    assert (told.shards, told.replicas) == (3, 1)
    with pytest.raises(ValueError, match="shards must be at least 1 and replicas"):
        IndexOptions(shards=0)


def test_a_migration_keeps_the_shards_and_replicas_of_the_index(es_client, index_name):
    admin = IndexAdmin(es_client, index_name)
    admin.create("equations", IndexOptions(shards=2, replicas=1))  # one node: the replicas stay unassigned (yellow)
    before = admin.options_of("equations")
    assert (before.shards, before.replicas) == (2, 1)
    report = admin.migrate("equations")
    settings = es_client.indices.get_settings(index=report.target, flat_settings=True)[report.target]["settings"]
    assert (settings["index.number_of_shards"], settings["index.number_of_replicas"]) == ("2", "1")
    after = admin.options_of("equations")
    assert (after.shards, after.replicas) == (2, 1)


def test_an_index_whose_primary_has_not_started_is_described_with_unknown_counts(es_client, index_name):
    """As after a whole-cluster restart, before the shards recover: the description says the counts are not known
    (None), where it used to fail with a KeyError (an ingest job resuming right after the restart then crashed)."""
    admin = IndexAdmin(es_client, index_name)
    name = f"{index_name}-papers-v1"
    es_client.indices.create(
        index=name,
        settings={"number_of_replicas": 0, "routing": {"allocation": {"require": {"_name": "no-such-node"}}}},
        aliases={admin.alias("papers"): {}},
        wait_for_active_shards="0",
    )
    described = admin.describe("papers")
    assert described["index"] == name and described["docs"] is None and described["size_bytes"] is None
