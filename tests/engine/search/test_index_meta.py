"""What the equations index says about itself, read from a real node's ``_meta``: whether the service's encoders
match the stored vectors (a sentence that says how to fix it when not), whether the rerank's fields exist, the
similarity and analyzer; a missing index reads as empty; a changed ``_meta`` is seen after `META_SECONDS`."""

from __future__ import annotations

import pytest
from eqsearch.engine.index.mappings import RERANK_FIELDS_SINCE
from eqsearch.engine.search import plan
from eqsearch.engine.search.plan import IndexMeta

pytestmark = pytest.mark.es


def _index(es_client, name: str, meta: dict) -> None:
    es_client.indices.create(index=name, mappings={"_meta": meta, "properties": {"eq_id": {"type": "keyword"}}})


def test_the_meta_says_what_the_index_holds_and_how_to_fix_a_mismatch(es_client, index_name):
    meta = {"mapping_version": RERANK_FIELDS_SINCE - 1, "encoder": "gcn@1", "text_encoder": "words@1"}
    _index(es_client, index_name, {**meta, "similarity": "cosine", "analyzer": "english"})
    read = IndexMeta(es_client, index_name)
    assert read.analyzer() == "english" and read.similarity() == "cosine"
    assert read.encoder_mismatch("gcn@1") is None and read.encoder_mismatch(None) is None
    assert "--reencode" in read.encoder_mismatch("gcn@2")
    assert read.text_encoder_mismatch("words@1") is None and "migrate" in read.text_encoder_mismatch("words@2")
    present, warning = read.rerank_fields()
    assert not present and "eqsearch index migrate equations" in warning


def test_a_missing_index_reads_as_empty_and_an_older_one_as_trusted(es_client, index_name):
    assert IndexMeta(es_client, f"{index_name}-nowhere").read() == {}
    _index(es_client, index_name, {"mapping_version": RERANK_FIELDS_SINCE})
    read = IndexMeta(es_client, index_name)
    assert read.encoder_mismatch("anything") is None  # no identity recorded: trusted
    assert read.rerank_fields() == (True, None) and read.analyzer() == "standard"


def test_a_changed_meta_is_seen_after_the_cache_and_the_callers_hear_of_it(es_client, index_name, monkeypatch):
    _index(es_client, index_name, {"encoder": "gcn@1"})
    changes = []
    read = IndexMeta(es_client, index_name, on_change=lambda: changes.append(1))
    assert read.read()["encoder"] == "gcn@1"
    es_client.indices.put_mapping(index=index_name, meta={"encoder": "gcn@2"})
    assert read.read()["encoder"] == "gcn@1" and not changes  # cached
    monkeypatch.setattr(plan, "META_SECONDS", -1.0)
    assert read.read()["encoder"] == "gcn@2" and changes == [1]
