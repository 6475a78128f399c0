"""The plugin's ``eqsearch_terms`` query on a real node that has it: the structural list's first stage
whose shard chooses the rare terms gives the same hits with the same scores, to the last bit, as the first stage the
client chose from a ``_termvectors`` request (the default's request, with the ``eqsearch_bm25`` rescorer adding the
other terms with the same rule), whatever the rule keeps (some terms, every term, every term but a few); the Python
rule and the plugin's split the terms alike; without a rule the query is the plain ``bool`` of ``term`` clauses; the
search service sends it exactly where the plugin and the index allow, with the same pages and no ``_termvectors``
request; and hostile bodies get a 400 that names what is wrong.

The collection is `conftest.collection`'s (the labelled equations and the development collection's first formulas).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from elasticsearch import ApiError
from eqsearch.engine.index.mappings import STRUCTURE_FIELD
from eqsearch.engine.search.plan import QueryPlan, StructureList
from eqsearch.engine.search.plugin import TERMS_QUERY, terms_query
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.structure_query import RareRule, TermStatistics, rarest_terms, structure_body
from plugin_pages import same_pages_with_and_without

pytestmark = pytest.mark.es


@pytest.fixture(scope="module")
def terms_client(plugin_client, require_plugin):
    require_plugin()
    return plugin_client


def _hits(client, alias: str, body: dict) -> list[tuple[str, float]]:
    hits = client.search(index=alias, **body)["hits"]["hits"]
    return [(hit["_id"], hit["_score"]) for hit in hits]


def _bodies(client, alias: str, structure, rule: RareRule) -> tuple[dict, dict, list[str] | None]:
    """The default's structural request with the rare terms chosen by the client (from ``_termvectors``, as the
    service does where the index has no forward index) and by the shard (the rule in the request)."""
    frequencies = TermStatistics(client.termvectors, STRUCTURE_FIELD).frequencies(alias, structure.tokens)
    assert frequencies is not None
    chosen = rarest_terms(structure.tokens, frequencies, max_share=rule.max_share, min_matches=rule.min_matches)
    kwargs = {"rerank_weight": 0.5, "candidate_sizes": True, "first_stage_share": rule.max_share}
    kwargs.update(native=True, forward_index=True)
    client_body = structure_body(
        structure, StructureList(100, rule.min_matches, first_stage="rare-terms", **kwargs), [], chosen
    )
    shard_body = structure_body(structure, StructureList(100, rule.min_matches, first_stage="shard", **kwargs), [])
    return client_body, shard_body, chosen


@pytest.mark.parametrize(
    "rule",
    [RareRule(0.05, 30), RareRule(0.2, 60), RareRule(0.01, 300), RareRule(1.0, 40)],
    ids=["5%-window-30", "20%-window-60", "1%-window-300", "every-term"],
)
def test_the_shards_rare_terms_give_the_clients_hits_bit_for_bit(collection, terms_client, rule):
    alias, queries = collection
    compared = kept_all = 0
    for structure in queries:
        if not structure.tokens:
            continue
        client_body, shard_body, chosen = _bodies(terms_client, alias, structure, rule)
        assert TERMS_QUERY in str(shard_body["query"]) and TERMS_QUERY not in str(client_body)
        assert _hits(terms_client, alias, shard_body) == _hits(terms_client, alias, client_body)
        compared += 1
        kept_all += chosen is None
    assert compared >= 40
    if rule.max_share == 1.0:
        assert kept_all == compared  # every term is rare: no rescore term left, the plain request has no BM25 rescore
    else:
        assert compared - kept_all >= 10  # most queries leave terms to the rescore


def _rare_of(client, alias: str, counts: dict[str, int], rule: RareRule) -> set[str]:
    """The terms the plugin's rule keeps, read back: the first stage of those terms alone matches what the
    ``eqsearch_terms`` query with the rule matches (explain names its clauses)."""
    body = {"query": terms_query(counts, rule), "size": 1, "explain": True}
    hit = client.search(index=alias, **body)["hits"]["hits"][0]
    found: set[str] = set()

    def walk(explanation: dict) -> None:
        text = explanation["description"]
        if text.startswith(f"weight({STRUCTURE_FIELD}:"):
            found.add(text.removeprefix(f"weight({STRUCTURE_FIELD}:").split(" in ")[0])
        for detail in explanation.get("details", ()):
            walk(detail)

    walk(hit["_explanation"])
    return found


def test_the_python_rule_and_the_plugins_keep_the_same_terms(collection, terms_client):
    """Explain shows the clauses a hit matched: every matched clause of the shard's query is a term the Python rule
    keeps, and the hit's matched rare terms are the same either way."""
    alias, queries = collection
    rule = RareRule(0.05, 30)
    checked = 0
    for structure in queries[:30]:
        counts = dict(Counter(structure.tokens))
        frequencies = TermStatistics(terms_client.termvectors, STRUCTURE_FIELD).frequencies(alias, structure.tokens)
        chosen = rarest_terms(structure.tokens, frequencies, max_share=rule.max_share, min_matches=rule.min_matches)
        if chosen is None:
            continue
        matched = _rare_of(terms_client, alias, counts, rule)
        assert matched and matched <= set(chosen)
        checked += 1
    assert checked >= 10


def test_without_a_rule_the_query_is_the_plain_bool_of_term_clauses(collection, terms_client):
    alias, queries = collection
    for structure in queries[::5]:
        counts = dict(Counter(structure.tokens))
        if not counts:
            continue
        plain = {
            "bool": {
                "should": [
                    {"term": {STRUCTURE_FIELD: {"value": term, "boost": float(count)}}}
                    for term, count in counts.items()
                ]
            }
        }
        for size in (10, 200):
            assert _hits(terms_client, alias, {"query": terms_query(counts), "size": size}) == _hits(
                terms_client, alias, {"query": plain, "size": size}
            )


def test_the_service_lets_the_shard_choose_where_it_can_with_the_same_pages(collection, terms_client, converter):
    alias, _ = collection

    def check(body: dict) -> None:
        assert TERMS_QUERY in str(body["query"]) and "except_rare" in str(body["rescore"])

    def client_chooses(plan: QueryPlan) -> QueryPlan:
        return replace(plan, structure=replace(plan.structure, first_stage="rare-terms", top=0))

    services = same_pages_with_and_without(terms_client, alias, converter, client_chooses, check)
    assert services[True].plan(HybridQuery(latex="x^2")).structure.first_stage == "shard"
    assert services[True].term_statistics.requests == 0  # no _termvectors request: the shard chose
    assert services[False].term_statistics.requests >= 1


def _error(client, alias: str, query: dict) -> tuple[int, str]:
    try:
        client.search(index=alias, query=query, size=5)
    except ApiError as error:
        return error.status_code, str(error.body)
    return 200, ""


def _query(**fields) -> dict:
    body = {
        "terms": ["V:x", "N:2"],
        "boosts": [1.0, 2.0],
        "rare": {"max_share": 0.05, "min_matches": 10, "at_least": 8},
    }
    return {TERMS_QUERY: {**body, **fields}}


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"terms": [], "boosts": []}, "[terms] is empty"),
        ({"terms": [f"t{i}" for i in range(20_000)], "boosts": None}, "more than 16384"),
        ({"terms": ["x" * 2000], "boosts": [1.0]}, "1 to 1024 characters"),
        ({"terms": ["a", "a"], "boosts": [1.0, 1.0]}, "given twice"),
        ({"boosts": [1.0]}, "one boost per term"),
        ({"boosts": [1.0, float("nan")]}, "boost"),
        ({"boosts": [1.0, -2.0]}, "boost 1 must be a number"),
        ({"terms": "V:x"}, "terms"),
        ({"field": "eq_id"}, "must be an indexed text field"),
        ({"field": ""}, "field name"),
        ({"rare": {"max_share": 2.0, "min_matches": 10, "at_least": 8}}, "[max_share] must be a share"),
        ({"rare": {"max_share": 0.05, "min_matches": 10, "at_least": 0}}, "[at_least] must be in"),
        ({"rare": {"max_share": 0.05, "min_matches": 10}}, "at_least"),
        ({"rare": "often"}, "rare"),
        ({"nonsense": 1}, "nonsense"),
    ],
    ids=lambda value: str(value)[:40] if isinstance(value, str) else None,
)
def test_a_hostile_query_body_gets_a_400_that_says_what_is_wrong(collection, terms_client, fields, says):
    alias, _ = collection
    query = _query(**fields)
    if query[TERMS_QUERY].get("boosts") is None:
        del query[TERMS_QUERY]["boosts"]
    status, text = _error(terms_client, alias, query)
    assert status == 400, text
    assert says in text


def test_missing_terms_are_a_400_and_an_unmapped_field_matches_nothing(collection, terms_client):
    alias, _ = collection
    status, text = _error(terms_client, alias, {TERMS_QUERY: {"boosts": [1.0]}})
    assert status == 400 and "needs [terms]" in text
    assert _hits(terms_client, alias, {"query": _query(field="no_such_field"), "size": 5}) == []
