"""`eqsearch index migrate --if-stale`: what `make run` does before ingesting, against a real node."""

from __future__ import annotations

import pytest
from eqsearch.engine.index import MAPPING_VERSIONS, IndexAdmin, IndexOptions
from eqsearch.main import main


@pytest.mark.es
def test_if_stale_migrates_only_an_index_of_an_older_mapping(es_client, index_name, monkeypatch, capsys):
    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    args = ["index", "migrate", "equations", "--if-stale", "--quiet"]
    assert main(args) == 0  # no index yet: nothing to do
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions())
    assert main(args) == 0 and admin.current("equations").endswith("-v1")  # current: nothing to do
    # an index made by an older eqsearch: its mapping records an older version
    current = admin.current("equations")
    meta = es_client.indices.get_mapping(index=current)[current]["mappings"]["_meta"]
    es_client.indices.put_mapping(index=current, meta={**meta, "mapping_version": 1})
    assert admin.describe("equations")["stale"]
    assert main(args) == 0
    assert "made by an older mapping: migrating it" in capsys.readouterr().err
    assert admin.current("equations").endswith("-v2")
    assert admin.describe("equations")["mapping_version"] == MAPPING_VERSIONS["equations"]
