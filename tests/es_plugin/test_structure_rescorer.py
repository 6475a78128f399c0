"""The plugin's ``eqsearch_structure`` rescorer on a real node that has it: the same hits with the same scores (to the
last bit, so the same ranking and the same ties) as the plain ``function_score`` rescore, on the shipped labelled
equations (families of one formula in several notations) and, where the shared folder holds it, the first formulas of
the ARQMath-1 development collection and its topics, for every variant the engine sends (sizes of the larger formula
or of the query, spans of an older index, a first stage); and hostile bodies answered with a 400 that names what is
wrong.

Skipped when the node lacks the plugin (``conftest.py``: failed with CI=true, unless the managed node was started
before ``eqsearch es start`` or ``make setup`` installed it; it loads its plugins when it starts).
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import SIZE_FIELD, SPANS_FIELD, IndexOptions, alias_name
from eqsearch.engine.model.layout import parse_layout
from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, structure_of_layout
from eqsearch.engine.search.plugin import STRUCTURE_RESCORER
from eqsearch.engine.search.query import structure_body
from eqsearch.evaluation.labelled_set import DEFAULT_LABELLED_SET

pytestmark = pytest.mark.es

DEV = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / "arqmath1-dev"
#: formulas of the development collection indexed (its first ones: the pools of the first topics, near duplicates)
COLLECTION_SIZE = 600
HASHED_DIMS = 8
#: unsized documents (written before sizes existed): a candidate without a size counts as the query's
UNSIZED = 20


def _dev_rows(path: Path, limit: int | None = None) -> list[tuple[str, str]]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as handle:
        rows = [(row[0], row[1]) for row in itertools.islice(csv.reader(handle, delimiter="\t"), 1, None)]
    return rows[:limit] if limit else rows


def _labelled_rows() -> list[tuple[str, str]]:
    lines = [line for line in DEFAULT_LABELLED_SET.read_text(encoding="utf-8").splitlines() if line and line[0] != "#"]
    return [(f"labelled-{number}", line.split("\t")[1]) for number, line in enumerate(lines[1:])]


@pytest.fixture(scope="module")
def plugin_client(es_client, require_plugin):
    require_plugin()
    return es_client


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture(scope="module")
def collection(plugin_client, converter):
    """An equations index of the labelled equations and the development collection's first formulas; yields
    (alias, queries)."""
    import uuid

    prefix = f"eqsearch-test-{uuid.uuid4().hex[:12]}"
    IndexAdmin(plugin_client, prefix).ensure(IndexOptions(dims=HASHED_DIMS, similarity="cosine"))
    alias = alias_name(prefix, "equations")
    rows = _labelled_rows() + _dev_rows(DEV / "collection.tsv", COLLECTION_SIZE)
    converted = converter.convert_many([(latex, "equation") for _, latex in rows])
    mathml = {vid: result.mathml for (vid, _), result in zip(rows, converted, strict=True)}
    actions = []
    for number, (vid, latex) in enumerate(rows):
        if not mathml[vid]:
            continue
        fields = structure_fields(mathml[vid], latex)
        if number < UNSIZED:
            fields.pop(SIZE_FIELD)
        source = {"eq_id": vid, "paper_id": vid, "latex": latex, **fields}
        actions.append({"_index": alias, "_id": vid, "_source": source})
    assert bulk_index(plugin_client, actions, refresh="wait_for").failed == 0
    topics = [latex for _, latex in _dev_rows(DEV / "topics.tsv")]
    queries = []
    for latex in [*topics, *(latex for _, latex in rows[::7])]:
        result = converter.convert(latex)
        if result.mathml:
            queries.append(structure_of_layout(parse_layout(result.mathml), span_kinds=QUERY_SPAN_KINDS))
    yield alias, queries
    for index in plugin_client.indices.get(index=f"{prefix}*", expand_wildcards="all", ignore_unavailable=True):
        plugin_client.indices.delete(index=index, ignore_unavailable=True)


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
            "span_kinds": span_kinds,
            "first_stage": first_stage,
        }
        plain = structure_body(structure, 100, [], **kwargs)
        native = structure_body(structure, 100, [], plugin=True, **kwargs)
        assert "function_score" in str(plain["rescore"]) or "dis_max" in str(plain["rescore"])
        assert STRUCTURE_RESCORER in str(native["rescore"]) and "dis_max" not in str(native["rescore"])
        unranked = structure_body(structure, 100, [], first_stage=first_stage, rerank_window=300)
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
