"""How the search's errors read: one ranked list's failure in an ``_msearch`` names the list and gives the shards' own
reasons (or says the formula is too long, with what to do), and a refused or missing index through `call` on a real
node becomes a `SearchError` a user can act on."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.errors import SearchError, call, list_failed


def test_a_failed_list_names_itself_and_gives_the_shards_reasons():
    error = {
        "type": "search_phase_execution_exception",
        "reason": "all shards failed",
        "root_cause": [{"type": "query_shard_exception", "reason": "failed to create query: bad term"}],
    }
    failed = list_failed("structure", error)
    assert isinstance(failed, SearchError)
    assert failed.message == "the structure search failed: failed to create query: bad term"
    assert list_failed("text", "timeout").message == "the text search failed: timeout"
    assert list_failed("text", {"reason": "oops"}).message == "the text search failed: oops"


def test_a_query_of_too_many_clauses_says_the_formula_is_too_long_and_what_to_do():
    deep = {"type": "x", "caused_by": {"type": "y", "caused_by": [{"type": "too_many_nested_clauses"}]}}
    failed = list_failed("structure", deep)
    assert "the formula is too long to search" in failed.message and "heap" in failed.hint


@pytest.mark.es
def test_a_missing_index_and_a_refused_query_become_search_errors(es_client, index_name):
    with pytest.raises(SearchError, match="the index is missing") as missing:
        call(es_client.search, index=f"{index_name}-nowhere", query={"match_all": {}})
    assert "eqsearch index create" in missing.value.hint
    es_client.indices.create(index=index_name, mappings={"properties": {"n": {"type": "integer"}}})
    with pytest.raises(SearchError, match="Elasticsearch refused the search"):
        call(es_client.search, index=index_name, query={"range": {"n": {"gte": "not a number"}}})
