"""The ``eqsearch_terms`` query scored term at a time (``top``, plugin 1.6) on a real node that has it: the same hits
with the same scores, to the last bit, as Lucene's document-at-a-time query it replaces, for the first stage alone
and for the default's whole structural request (its BM25 and sub-expression rescores after it), on an index of one
segment and on one of several segments with deleted documents, with and without a search's filters; ties in
Lucene's order; explain answers for its hits; the service sends it exactly where every node has 1.6, with the same
pages; hostile values of ``top`` or ``filter`` get a 400.

The collection is `conftest.collection`'s (the labelled equations and the development collection's first formulas).
"""

from __future__ import annotations

import copy
import itertools
import uuid
from dataclasses import replace

import pytest
from elasticsearch import ApiError
from elasticsearch.helpers import scan
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import with_structure
from eqsearch.engine.index.mappings import SIZE_FIELD
from eqsearch.engine.search.plan import QueryPlan, StructureList
from eqsearch.engine.search.plugin import TERMS_QUERY, terms_query
from eqsearch.engine.search.structure_query import RareRule, structure_body
from plugin_pages import same_pages_with_and_without

pytestmark = pytest.mark.es


@pytest.fixture(scope="module")
def top_client(plugin_client, require_plugin):
    require_plugin()
    return plugin_client


@pytest.fixture(scope="module")
def segmented(collection, top_client):
    """A copy of the collection written in four refreshed batches (four segments or more, never merged) with every
    ninth equation deleted afterwards: the term-at-a-time query must add up each segment and skip deleted ones."""
    alias, _ = collection
    concrete = next(iter(top_client.indices.get_alias(name=alias)))
    mappings = top_client.indices.get(index=concrete)[concrete]["mappings"]
    target = f"eqsearch-test-{uuid.uuid4().hex[:12]}-segments"
    top_client.indices.create(
        index=target,
        mappings=mappings,
        settings={"number_of_shards": 1, "number_of_replicas": 0, "merge.policy.max_merged_segment": "1kb"},
    )
    docs = sorted(scan(top_client, index=alias, query={"query": {"match_all": {}}}), key=lambda d: d["_id"])
    for part in range(4):
        # the derived fields are not in the sources: made anew, as a migration does
        actions = [{"_index": target, "_id": d["_id"], "_source": with_structure(d["_source"])} for d in docs[part::4]]
        assert bulk_index(top_client, actions, refresh="wait_for").failed == 0
    deletes = [{"_op_type": "delete", "_index": target, "_id": doc["_id"]} for doc in docs[::9]]
    assert bulk_index(top_client, deletes, refresh="wait_for").failed == 0
    segments = top_client.indices.segments(index=target)["indices"][target]["shards"]["0"][0]["num_search_segments"]
    assert segments >= 2
    yield target
    top_client.indices.delete(index=target, ignore_unavailable=True)


def _hits(client, index: str, body: dict) -> list[tuple[str, float]]:
    hits = client.search(index=index, **body)["hits"]["hits"]
    return [(hit["_id"], hit["_score"]) for hit in hits]


def _shard(depth: int, rule: RareRule, top: int = 0, **rerank) -> StructureList:
    """The structural list whose shard chooses the rare terms by ``rule`` (its window the rule's), scored term at a
    time with ``top`` (0: by Lucene)."""
    share, window = rule.max_share, rule.min_matches
    return StructureList(depth, window, first_stage="shard", first_stage_share=share, native=True, forward_index=True,
                         top=top, **rerank)  # fmt: skip


def _with_top(body: dict, top: int) -> dict:
    body = copy.deepcopy(body)
    body["query"]["bool"]["must"][0][TERMS_QUERY]["top"] = top
    return body


@pytest.mark.parametrize(
    "rule",
    [RareRule(0.05, 30), RareRule(0.01, 300), RareRule(1.0, 40)],
    ids=["5%-window-30", "1%-window-300", "every-term"],
)
@pytest.mark.parametrize("where", ["collection", "segments"])
def test_term_at_a_time_gives_lucenes_hits_bit_for_bit(collection, segmented, top_client, rule, where):
    alias, queries = collection
    index = alias if where == "collection" else segmented
    rerank = {"rerank_weight": 0.5, "candidate_sizes": True}
    compared = 0
    for structure in queries:
        if not structure.tokens:
            continue
        whole = structure_body(structure, _shard(100, rule, **rerank), [])
        assert "top" not in str(whole["query"])
        taat = structure_body(structure, _shard(100, rule, max(100, rule.min_matches), **rerank), [])
        assert taat["query"]["bool"]["must"][0][TERMS_QUERY]["top"] == max(100, rule.min_matches)
        assert _hits(top_client, index, taat) == _hits(top_client, index, whole)  # the request as the service sends it
        first = {"query": whole["query"], "size": rule.min_matches}
        assert _hits(top_client, index, _with_top(first, rule.min_matches)) == _hits(top_client, index, first)
        compared += 1
    assert compared >= 40


FILTERS = {
    "prefix": [{"prefix": {"eq_id": "labelled-"}}],
    "size range": [{"range": {SIZE_FIELD: {"gte": 5, "lte": 30}}}],
    "both, one excluding": [
        {"bool": {"must_not": [{"prefix": {"eq_id": "labelled-1"}}]}},
        {"exists": {"field": SIZE_FIELD}},
    ],
}


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize("where", ["collection", "segments"])
def test_a_filtered_search_gets_lucenes_hits_bit_for_bit(collection, segmented, top_client, name, where):
    """The search's filters travel inside the query too: its top hits are the best of the documents they let
    through (an index's iterator, a doc-values check, a negation), not the best of all, some of them filtered out."""
    alias, queries = collection
    index = alias if where == "collection" else segmented
    rule = RareRule(0.05, 30)
    rerank = {"rerank_weight": 0.5, "candidate_sizes": True}
    compared = nonempty = 0
    for structure in queries[::2]:
        if not structure.tokens:
            continue
        whole = structure_body(structure, _shard(40, rule, **rerank), FILTERS[name])
        taat = structure_body(structure, _shard(40, rule, 40, **rerank), FILTERS[name])
        assert "filter" in taat["query"]["bool"]["must"][0][TERMS_QUERY]
        expected = _hits(top_client, index, whole)
        assert _hits(top_client, index, taat) == expected
        compared += 1
        nonempty += bool(expected)
    assert compared >= 20 and nonempty >= 10


def test_top_keeps_the_best_hits_in_lucenes_order_of_ties(collection, top_client):
    """Asked for fewer hits than the search reads, the query has only those: the first of Lucene's ranking, ties
    broken by the lower document first, as Lucene's collector breaks them."""
    alias, queries = collection
    rule = RareRule(1.0, 50)
    checked = ties = 0
    for structure in queries[:40]:
        if not structure.tokens:
            continue
        first = {"query": structure_body(structure, _shard(50, rule), [])["query"], "size": 50}
        full = _hits(top_client, alias, first)
        for top in (1, 7, 20):
            assert _hits(top_client, alias, _with_top(first, top)) == full[:top]
        ties += any(a[1] == b[1] for a, b in itertools.pairwise(full[:21]))
        checked += 1
    assert checked >= 20 and ties >= 5  # the collection's near duplicates tie often: the order of ties is tested


def test_explain_answers_for_a_term_at_a_time_hit(collection, top_client):
    alias, queries = collection
    structure = next(s for s in queries if s.tokens)
    body = _with_top({"query": structure_body(structure, _shard(5, RareRule(1.0, 5)), [])["query"]}, 5)
    hit = top_client.search(index=alias, size=1, explain=True, **body)["hits"]["hits"][0]
    assert hit["_explanation"]["value"] == pytest.approx(hit["_score"])
    assert "term at a time" in str(hit["_explanation"])


def test_the_service_sends_term_at_a_time_where_every_node_has_it_with_the_same_pages(
    collection, top_client, converter
):
    alias, _ = collection

    def check(body: dict) -> None:
        assert body["query"]["bool"]["must"][0][TERMS_QUERY]["top"] == 300

    def by_lucene(plan: QueryPlan) -> QueryPlan:
        return replace(plan, structure=replace(plan.structure, top=0))

    same_pages_with_and_without(top_client, alias, converter, by_lucene, check)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"top": -1}, "[top] must be 1 to 10000"),
        ({"top": 10_001}, "[top] must be 1 to 10000"),
        ({"top": "many"}, "top"),
        ({"top": [3]}, "top"),
        ({"filter": {"term": {"eq_id": "x"}}}, "[filter] needs [top]"),
        ({"top": 5, "filter": {"no_such_query": {}}}, "no_such_query"),
        ({"top": 5, "filter": "eq_id"}, "filter"),
    ],
    ids=str,
)
def test_a_hostile_top_or_filter_gets_a_400_that_says_what_is_wrong(collection, top_client, fields, says):
    alias, _ = collection
    query = terms_query({"V:x": 1, "N:2": 2}, RareRule(0.05, 10))
    query[TERMS_QUERY].update(fields)
    with pytest.raises(ApiError) as error:
        top_client.search(index=alias, query=query, size=5)
    assert error.value.status_code == 400 and says in str(error.value.body)
