"""The plugin's ``eqsearch_bm25`` rescorer on a real node that has it: the window's BM25 computed from the forward
index gives the same hits with the same scores, to the last bit, as the plain rescore of ``term`` clauses, in both
modes the engine sends (the default's other terms added after its rare-terms first stage; every term in place of the
kNN window's cosine), documents written before the forward index included (their counts come from the postings);
the Python analyzer and hash agree with Elasticsearch's and the plugin's; an index without the field is served
alike; the search service sends it exactly where the plugin and the index allow, with the same pages; and hostile
bodies get a 400 that names what is wrong.

The collection is `conftest.collection`'s (the labelled equations and the development collection's first formulas).
"""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest
from eqsearch.engine.index.forward_index import analysed_terms, forward_index_value
from eqsearch.engine.index.mappings import FORWARD_INDEX_FIELD, STRUCTURE_FIELD
from eqsearch.engine.search.plan import QueryPlan, StructureList
from eqsearch.engine.search.plugin import BM25_RESCORER, PluginUse
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.engine.search.structure_query import _window_bm25, structure_body
from hashing_encoder import HashingEncoder

pytestmark = pytest.mark.es


@pytest.fixture(scope="module")
def bm25_client(plugin_client, require_plugin):
    require_plugin()
    return plugin_client


def _hits(client, alias: str, body: dict) -> list[tuple[str, float]]:
    hits = client.search(index=alias, **body)["hits"]["hits"]
    return [(hit["_id"], hit["_score"]) for hit in hits]


def _unforwarded(client, alias: str) -> set[str]:
    body = {"query": {"bool": {"must_not": [{"exists": {"field": FORWARD_INDEX_FIELD}}]}}, "size": 100}
    return {hit_id for hit_id, _ in _hits(client, alias, body)}


def _first_stage(structure) -> list[str]:
    distinct = sorted(set(structure.tokens))
    return distinct[: max(1, len(distinct) // 3)]


@pytest.mark.parametrize("window", [300, 40], ids=["window-300", "window-40-of-100"])
def test_the_default_with_the_forward_index_gives_the_plain_scores_bit_for_bit(collection, bm25_client, window):
    """The default's structural request: rare terms first, then the other terms' BM25 (here from the forward index)
    and the sub-expression rescore, against the same request with the plain BM25 rescore."""
    alias, queries = collection
    unforwarded = _unforwarded(bm25_client, alias)
    assert len(unforwarded) >= 15
    compared = 0
    seen_unforwarded = 0
    for structure in queries:
        if len(set(structure.tokens)) < 2:
            continue
        kwargs = {"rerank_weight": 0.5, "candidate_sizes": True, "native": True, "first_stage": "rare-terms"}
        plain = structure_body(structure, StructureList(100, window, **kwargs), [], _first_stage(structure))
        native = structure_body(
            structure, StructureList(100, window, forward_index=True, **kwargs), [], _first_stage(structure)
        )
        assert BM25_RESCORER in str(native["rescore"]) and "rescore_query" not in str(native["rescore"])
        assert BM25_RESCORER not in str(plain["rescore"])
        expected = _hits(bm25_client, alias, plain)
        assert _hits(bm25_client, alias, native) == expected
        compared += 1
        seen_unforwarded += bool(unforwarded & {hit_id for hit_id, _ in expected[:window]})
    assert compared >= 25
    assert seen_unforwarded >= 3  # documents without a forward index were in windows, scored from the postings


def test_every_terms_bm25_in_place_of_the_first_score_is_the_plain_rescores(collection, bm25_client):
    """The rescorer's ``replace`` mode: BM25 over every term in place of the first pass's score, whatever that was
    (here the BM25 of a few terms: some candidates then score 0 in both)."""
    alias, queries = collection
    compared = 0
    for structure in queries[::2]:
        if not structure.tokens:
            continue
        first = {"query": {"bool": {"should": [{"term": {STRUCTURE_FIELD: t}} for t in _first_stage(structure)]}}}
        bodies = [
            {**first, "size": 100, "rescore": _window_bm25(structure, None, window=80, replace=True, forward_index=f)}
            for f in (False, True)
        ]
        assert BM25_RESCORER in str(bodies[1]) and BM25_RESCORER not in str(bodies[0])
        assert _hits(bm25_client, alias, bodies[1]) == _hits(bm25_client, alias, bodies[0])
        compared += 1
    assert compared >= 12


def test_the_python_analyzer_matches_elasticsearchs_whitespace_analyzer(bm25_client):
    texts = [
        "V:x N:2 V:x|N:2|sup",
        "a\u00a0b c\u2007d\u2003e\u3000f\tg\u001fh",
        "x" * 600 + " " + "y" * 254 + "\U0001d465z",
        "\U0001d465" * 200,
    ]
    for text in texts:
        tokens = bm25_client.indices.analyze(analyzer="whitespace", text=text)["tokens"]
        assert [token["token"] for token in tokens] == analysed_terms(text)


def _scores_on(client, index: str, documents: list[dict], terms: dict[str, int]) -> tuple[list, list]:
    for i, document in enumerate(documents):
        client.index(index=index, id=str(i), document=document)
    client.indices.refresh(index=index)
    query = {"query": {"match_all": {}}, "size": 20}
    native = {"window_size": 20, BM25_RESCORER: {"terms": list(terms), "boosts": [float(c) for c in terms.values()]}}
    clauses = [{"term": {STRUCTURE_FIELD: {"value": t, "boost": float(c)}}} for t, c in terms.items()]
    plain = {"window_size": 20, "query": {"rescore_query": {"bool": {"should": clauses}}, "score_mode": "total"}}
    return _hits(client, index, {**query, "rescore": native}), _hits(client, index, {**query, "rescore": plain})


def _with_forward_index(client, index: str) -> None:
    """An index of the structural field and its forward index, mapped as the equations index maps them."""
    client.indices.create(
        index=index,
        mappings={
            "properties": {
                STRUCTURE_FIELD: {"type": "text", "analyzer": "whitespace", "index_options": "freqs"},
                FORWARD_INDEX_FIELD: {"type": "binary", "doc_values": True},
            }
        },
    )


HOSTILE_TERMS = ["\U0001d465" * 130, "caf\u00e9", "a\u00a0b", "z" * 300]


def test_hostile_terms_and_damaged_values_score_as_the_postings_say(bm25_client, index_name):
    """Terms outside the BMP, past the tokenizer's cut, with a no-break space: the hashes agree with the plugin's.
    A damaged stored value (another format, cut short, not one blob) makes the plugin read that document's counts
    from the postings: the same scores."""
    _with_forward_index(bm25_client, index_name)
    texts = [" ".join(HOSTILE_TERMS), "caf\u00e9 caf\u00e9 x", "a\u00a0b " + "z" * 255, "x y", "caf\u00e9 y z"]
    documents = [{STRUCTURE_FIELD: t, FORWARD_INDEX_FIELD: forward_index_value(analysed_terms(t))} for t in texts]
    documents[3][FORWARD_INDEX_FIELD] = base64.b64encode(b"\x07garbage").decode()
    whole = base64.b64decode(forward_index_value(analysed_terms(texts[4])))
    documents[4][FORWARD_INDEX_FIELD] = base64.b64encode(whole[:-3]).decode()  # cut short, inside a hash
    terms = {"\U0001d465" * 128: 1, "caf\u00e9": 2, "a\u00a0b": 1, "z" * 255: 3, "y": 1, "z" * 300: 1}
    native, plain = _scores_on(bm25_client, index_name, documents, terms)
    assert native == plain
    assert len({score for _, score in native}) >= 4  # the terms did score


def test_both_layouts_of_the_value_score_as_the_postings_say(bm25_client, index_name):
    """Whole 8-byte hashes (format 1, mapping versions 7-11) and 4-byte ones (format 2, what the engine writes now)
    side by side in one index, as during a migration's copy: each read in its own layout."""
    _with_forward_index(bm25_client, index_name)
    texts = ["V:x N:2 V:x|N:2|sup V:x", "V:x V:y", "N:2 N:2 N:3", "V:y V:x|N:2|sup", "caf\u00e9 V:x"]
    documents = [
        {STRUCTURE_FIELD: t, FORWARD_INDEX_FIELD: forward_index_value(analysed_terms(t), layout=1 + i % 2)}
        for i, t in enumerate(texts)
    ]
    native, plain = _scores_on(bm25_client, index_name, documents, {"V:x": 2, "N:2": 1, "V:x|N:2|sup": 1, "V:y": 1})
    assert native == plain
    assert len({score for _, score in native}) >= 4


def test_an_index_without_the_forward_index_is_scored_from_the_postings(bm25_client, index_name):
    bm25_client.indices.create(
        index=index_name, mappings={"properties": {STRUCTURE_FIELD: {"type": "text", "analyzer": "whitespace"}}}
    )
    documents = [{STRUCTURE_FIELD: text} for text in ("a b c", "a a d", "d e", "f")]
    native, plain = _scores_on(bm25_client, index_name, documents, {"a": 2, "d": 1, "q": 1})
    assert native == plain and native[0][1] > native[-1][1]


def test_the_service_sends_the_forward_index_bm25_where_it_can_with_the_same_pages(collection, bm25_client, converter):
    alias, _ = collection
    prefix = alias.removesuffix("-equations")
    encoder = HashingEncoder(dim=8)
    ranking = get_ranker(DEFAULT_RANKER)
    services = {
        on: SearchService(bm25_client, encoder, converter, index_prefix=prefix, ranking=ranking, candidate_depth=100)
        for on in (True, False)
    }
    services[False].plan_variant = _from_the_postings
    assert services[True].plan(HybridQuery(latex="x^2")).structure.forward_index
    sent = 0
    for latex in ["x^2 + y^2 = z^2", r"\frac{a+b}{c} = \sum_{i=1}^{n} a_i b_i", r"\int_0^1 f(x)\,dx"]:
        query = HybridQuery(latex=latex, highlight=False)
        body = dict(services[True].requests(query))["structure"]
        sent += BM25_RESCORER in str(body.get("rescore"))
        pages = [[(h.eq_id, h.score) for h in service.search(query).hits] for service in services.values()]
        assert pages[0] == pages[1] and pages[0]
    assert sent >= 1


def _from_the_postings(plan: QueryPlan) -> QueryPlan:
    """The plan with the window's BM25 from the posting lists (the client's choice of rare terms with it)."""
    return replace(plan, structure=replace(plan.structure, forward_index=False, first_stage="rare-terms", top=0))


def test_the_use_asks_whether_the_index_maps_the_field(bm25_client, index_name):
    bm25_client.indices.create(index=index_name, mappings={"properties": {STRUCTURE_FIELD: {"type": "text"}}})
    assert PluginUse(bm25_client).maps(index_name, FORWARD_INDEX_FIELD) is False
    assert PluginUse(bm25_client).maps(index_name, STRUCTURE_FIELD) is True


def _error(client, alias: str, rescore: dict) -> tuple[int, str]:
    from elasticsearch import ApiError

    try:
        client.search(index=alias, query={"match_all": {}}, rescore=rescore, size=5)
    except ApiError as error:
        return error.status_code, str(error.body)
    return 200, ""


def _rescorer(**fields) -> dict:
    return {"window_size": 10, BM25_RESCORER: {"terms": ["V:x", "N:2"], "boosts": [1.0, 2.0], **fields}}


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"terms": [], "boosts": []}, "[terms] is empty"),
        ({"terms": [f"t{i}" for i in range(20_000)], "boosts": None}, "more than 16384"),
        ({"terms": ["x" * 2000], "boosts": [1.0]}, "1 to 1024 characters"),
        ({"terms": [""], "boosts": [1.0]}, "1 to 1024 characters"),
        ({"terms": ["a", "a"], "boosts": [1.0, 1.0]}, "given twice"),
        ({"boosts": [1.0]}, "one boost per term"),
        ({"boosts": [1.0, 0.0]}, "boost 1 must be a number"),
        ({"boosts": [1.0, -2.0]}, "boost 1 must be a number"),
        ({"boosts": [1.0, 1e30]}, "boost 1 must be a number"),
        ({"boosts": ["one", "two"]}, "boosts"),
        ({"terms": "V:x"}, "terms"),
        ({"terms": [["V:x"], {"a": 1}]}, "terms"),
        ({"mode": "sideways"}, "[mode] must be [add] or [replace]"),
        ({"nonsense": 1}, "nonsense"),
        ({"field": "eq_id"}, "must be an indexed text field"),
        ({"forward_field": STRUCTURE_FIELD}, "must be binary with doc values"),
        ({"field": ""}, "field name"),
        ({"forward_field": ""}, "field names"),
        (
            {"except_rare": {"max_share": 0.05, "min_matches": 10, "at_least": 8}, "mode": "replace"},
            "needs [mode] [add]",
        ),
        ({"except_rare": {"max_share": 0.0, "min_matches": 10, "at_least": 8}}, "[max_share] must be a share"),
        ({"except_rare": {"max_share": 0.05, "min_matches": -1, "at_least": 8}}, "[min_matches] must be in"),
        ({"except_rare": {"max_share": 0.05, "min_matches": 10, "at_least": 0}}, "[at_least] must be in"),
        ({"except_rare": {"max_share": 0.05}}, "min_matches"),
    ],
    ids=lambda value: str(value)[:40] if isinstance(value, str) else None,
)
def test_a_hostile_rescorer_body_gets_a_400_that_says_what_is_wrong(collection, bm25_client, fields, says):
    alias, _ = collection
    rescore = _rescorer(**fields)
    if rescore[BM25_RESCORER].get("boosts") is None:
        del rescore[BM25_RESCORER]["boosts"]
    status, text = _error(bm25_client, alias, rescore)
    assert status == 400, text
    assert says in text


def test_missing_terms_and_a_window_past_the_limit_are_400s(collection, bm25_client):
    alias, _ = collection
    status, text = _error(bm25_client, alias, {"window_size": 10, BM25_RESCORER: {"boosts": [1.0]}})
    assert status == 400 and "needs [terms]" in text
    status, text = _error(bm25_client, alias, {**_rescorer(), "window_size": 1_000_000})
    assert status == 400 and "window" in text.lower()
