"""Versioned indices on a real node: create, list, describe, and the delete guards. (Bulk writing is in test_bulk.py,
migrations in test_migration.py, a migration while an ingest job writes in tests/ingest/jobs/test_writer.py.)"""

from __future__ import annotations

import pytest
from eqsearch.engine.index import IndexAdmin, IndexOperationError, IndexOptions

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
