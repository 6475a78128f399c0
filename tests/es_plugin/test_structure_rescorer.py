"""The plugin's ``eqsearch_structure`` rescorer on a real node that has it: the same hits with the same scores (to the
last bit, so the same ranking and the same ties) as the plain ``function_score`` rescore, on the shipped labelled
equations (families of one formula in several notations) and the first formulas of the ARQMath-1 development
collection and its topics (the excerpt in tests/data), for every variant the engine sends (sizes of the larger formula
or of the query, spans of an older index, a first stage); and hostile bodies answered with a 400 that names what is
wrong.

The collection is `conftest.collection`'s. Skipped when the node lacks the plugin (``conftest.py``: failed with
CI=true, unless the managed node was started before ``eqsearch es start`` or ``make setup`` installed it; it loads
its plugins when it starts).
"""

from __future__ import annotations

import pytest
from eqsearch.engine.index.mappings import SPANS_FIELD
from eqsearch.engine.search.plan import StructureList
from eqsearch.engine.search.plugin import STRUCTURE_RESCORER
from eqsearch.engine.search.structure_query import structure_body

pytestmark = pytest.mark.es


def _hits(client, alias: str, body: dict) -> list[tuple[str, float]]:
    hits = client.search(index=alias, **body)["hits"]["hits"]
    return [(hit["_id"], hit["_score"]) for hit in hits]


@pytest.mark.parametrize(
    ("candidate_sizes", "span_kinds", "staged"),
    [(True, ("r", "g"), False), (False, ("r", "g"), False), (True, ("e", "g"), False), (True, ("r", "g"), True)],
    ids=["larger-size", "query-size", "letters-kept", "first-stage"],
)
def test_the_rescorer_gives_the_plain_rescores_scores_bit_for_bit(
    collection, plugin_client, candidate_sizes, span_kinds, staged
):
    alias, queries = collection
    compared = 0
    reranked = 0
    for structure in queries:
        if not structure.tokens:
            continue
        first_stage = sorted(set(structure.tokens))[: max(1, len(set(structure.tokens)) // 3)] if staged else None
        kwargs = {
            "rerank_window": 300,
            "rerank_weight": 0.5,
            "candidate_sizes": candidate_sizes,
            "span_kinds": tuple(span_kinds),
            "first_stage": "rare-terms",
            "first_stage_share": 0.05,
        }
        plain = structure_body(structure, StructureList(100, **kwargs), [], first_stage)
        native = structure_body(structure, StructureList(100, native=True, **kwargs), [], first_stage)
        assert "function_score" in str(plain["rescore"]) or "dis_max" in str(plain["rescore"])
        assert STRUCTURE_RESCORER in str(native["rescore"]) and "dis_max" not in str(native["rescore"])
        unranked_plan = StructureList(100, 300, first_stage="rare-terms", first_stage_share=0.05)
        unranked = structure_body(structure, unranked_plan, [], first_stage)
        bm25 = _hits(plugin_client, alias, unranked)
        expected = _hits(plugin_client, alias, plain)
        assert _hits(plugin_client, alias, native) == expected
        compared += 1
        reranked += expected != bm25
    assert compared >= 25
    assert reranked >= compared // 2  # the rerank did change most rankings: the comparison compared something


def _error(client, alias: str, rescore: dict) -> tuple[int, str]:
    from elasticsearch import ApiError

    body = {"query": {"match_all": {}}, "rescore": rescore, "size": 5}
    try:
        client.search(index=alias, **body)
    except ApiError as error:
        return error.status_code, str(error.body)
    return 200, ""


def _rescorer(**fields) -> dict:
    good = {"spans": ["rabc", "gdef"], "sizes": [2, 3], "query_size": 4, "weight": 0.5, "candidate_sizes": True}
    return {"window_size": 10, STRUCTURE_RESCORER: {**good, **fields}}


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"spans": [], "sizes": []}, "[spans] is empty"),
        ({"spans": ["r" + str(i) for i in range(20_000)], "sizes": [2] * 20_000}, "more than 16384"),
        ({"spans": ["r" * 300], "sizes": [2]}, "1 to 256 characters"),
        ({"spans": [""], "sizes": [2]}, "1 to 256 characters"),
        ({"sizes": [2]}, "one size per span"),
        ({"sizes": [2, 0]}, "size 1 must lie in"),
        ({"sizes": [2, -5]}, "size 1 must lie in"),
        ({"query_size": 0}, "[query_size] must lie in"),
        ({"weight": -1}, "[weight] must be a number"),
        ({"weight": 1e300}, "[weight] must be a number"),
        ({"weight": "heavy"}, "weight"),
        ({"spans": "rabc"}, "spans"),
        ({"spans": [["r"], {"a": 1}]}, "spans"),
        ({"sizes": ["two", "three"]}, "sizes"),
        ({"nonsense": 1}, "nonsense"),
        ({"spans_field": "vector"}, "must be an indexed keyword"),
        ({"size_field": "latex"}, "whole number with doc values"),
        ({"spans_field": ""}, "field names"),
    ],
    ids=lambda value: str(value)[:40] if isinstance(value, str) else None,
)
def test_a_hostile_rescorer_body_gets_a_400_that_says_what_is_wrong(collection, plugin_client, fields, says):
    alias, _ = collection
    status, text = _error(plugin_client, alias, _rescorer(**fields))
    assert status == 400, text
    assert says in text


def test_missing_required_fields_and_a_window_past_the_limit_are_400s(collection, plugin_client):
    alias, _ = collection
    rescore = _rescorer()
    del rescore[STRUCTURE_RESCORER]["query_size"]
    status, text = _error(plugin_client, alias, rescore)
    assert status == 400 and "needs [spans], [sizes], [query_size] and [weight]" in text
    status, text = _error(plugin_client, alias, {**_rescorer(), "window_size": 1_000_000})
    assert status == 400 and "window" in text.lower()


def test_the_rescorer_on_an_index_without_the_fields_changes_nothing(plugin_client, index_name):
    plugin_client.indices.create(index=index_name, mappings={"properties": {"t": {"type": "text"}}})
    for i in range(3):
        plugin_client.index(index=index_name, id=str(i), document={"t": "x " * (i + 1)}, refresh="wait_for")
    body = {"query": {"match": {"t": "x"}}, "size": 3}
    plain = _hits(plugin_client, index_name, body)
    assert _hits(plugin_client, index_name, {**body, "rescore": _rescorer()}) == plain
    assert SPANS_FIELD not in plugin_client.indices.get_mapping(index=index_name)[index_name]["mappings"]["properties"]
