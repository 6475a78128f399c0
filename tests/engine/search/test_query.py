"""The request bodies a `HybridQuery` becomes, checked without a node: filters, kNN and BM25 parts, candidate
depth, the page fetch, and the query's own validation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from eqsearch.engine.index.mappings import VECTOR_FIELD
from eqsearch.engine.model.bundle import default_bundle_path
from eqsearch.engine.search.query import (
    MAX_PAGE_SIZE,
    MAX_RESULT_WINDOW,
    RANKING_FIELDS,
    SOURCE_EXCLUDES,
    TEXT_COUNT_LIMIT,
    TEXT_FIELDS,
    HybridQuery,
    candidate_window,
    knn_body,
    needs_papers,
    num_candidates,
    page_body,
    query_filters,
    ranking_only,
    ranking_searches,
    text_body,
)

VECTOR = np.array([0.5, -0.25, 0.0], dtype=np.float32)
ALL_FILTERS = HybridQuery(
    latex="x^2", keywords="energy", categories=("math.PR", "quant-ph"), year_from=2017, year_to=2021, paper_id="p1"
)


def searches(query: HybridQuery, vector: np.ndarray | None = VECTOR, window: int = 50) -> dict[str, dict]:
    return dict(ranking_searches(query, vector, window=window, num_candidates_factor=6))


def test_filters_become_filter_clauses():
    assert query_filters(HybridQuery()) == []
    assert query_filters(ALL_FILTERS) == [
        {"terms": {"categories": ["math.PR", "quant-ph"]}},
        {"range": {"year": {"gte": 2017, "lte": 2021}}},
        {"term": {"paper_id": "p1"}},
    ]
    assert query_filters(HybridQuery(year_to=2000)) == [{"range": {"year": {"lte": 2000}}}]
    assert query_filters(HybridQuery(year_from=2000)) == [{"range": {"year": {"gte": 2000}}}]


def test_the_inline_filter_keeps_or_drops_the_inline_formulas():
    assert query_filters(HybridQuery(inline="include")) == []  # the default: displays and inline formulas
    assert query_filters(HybridQuery(inline="only")) == [{"term": {"inline": True}}]
    # must_not rather than inline: false, so that a document without the field (never: migrations set it) is a display
    assert query_filters(HybridQuery(inline="exclude")) == [{"bool": {"must_not": [{"term": {"inline": True}}]}}]
    with pytest.raises(ValueError, match="inline must be one of include, exclude, only"):
        HybridQuery(inline="some")  # type: ignore[arg-type]


def test_filters_are_knn_pre_filters_and_bm25_filters():
    bodies = searches(ALL_FILTERS)
    filters = query_filters(ALL_FILTERS)
    knn = bodies["embedding"]["query"]["knn"]
    assert knn["filter"] == {"bool": {"filter": filters}}  # inside knn: a pre-filter, not a post-filter
    assert "post_filter" not in bodies["embedding"]
    text = bodies["text"]["query"]["bool"]
    assert text["filter"] == filters
    # the evidence fusion asks the words of the equation itself; the paper's words come by paper
    own = {"multi_match": {"query": "energy", "fields": ["section_title^1.5", "context"], "type": "best_fields"}}
    assert text["must"] == [own]
    whole = {"multi_match": {"query": "energy", "fields": list(TEXT_FIELDS), "type": "best_fields"}}
    assert bodies["papers"]["query"]["bool"] == {"must": [whole], "filter": filters}
    rrf = searches(replace(ALL_FILTERS, fusion="rrf"))["text"]["query"]["bool"]
    assert rrf == {"must": [whole], "filter": filters}


def test_knn_body_without_filters_has_no_filter():
    body = knn_body(VECTOR, 10, [], num_candidates_factor=6)
    assert body == {
        "query": {"knn": {"field": VECTOR_FIELD, "query_vector": [0.5, -0.25, 0.0], "k": 10, "num_candidates": 100}},
        "size": 10,
        "_source": {"excludes": SOURCE_EXCLUDES},
        "track_total_hits": False,
    }
    assert all(type(x) is float for x in body["query"]["knn"]["query_vector"])  # JSON-ready, not numpy floats


def test_knn_body_excludes_ids_as_a_pre_filter():
    body = knn_body(VECTOR, 5, [], num_candidates_factor=6, exclude=["p1:0"])
    assert body["query"]["knn"]["filter"] == {"bool": {"filter": [], "must_not": [{"ids": {"values": ["p1:0"]}}]}}


def test_num_candidates_is_a_multiple_of_k_within_bounds():
    assert num_candidates(10, 6) == 100  # at least 100
    assert num_candidates(50, 6) == 300
    assert num_candidates(1000, 6) == 6000
    assert num_candidates(5000, 6) == 10_000  # at most 10,000
    assert knn_body(VECTOR, 50, [], num_candidates_factor=3)["query"]["knn"]["num_candidates"] == 150


def test_text_body_highlights_and_counts_up_to_the_limit():
    body = text_body("harmonic oscillator", 20, [])
    assert body["size"] == 20 and body["track_total_hits"] == TEXT_COUNT_LIMIT
    assert body["query"]["bool"]["filter"] == []
    assert set(body["highlight"]["fields"]) == {"title", "abstract", "section_title", "context"}
    assert body["highlight"]["require_field_match"] is True


def test_ranking_searches_read_doc_values_only():
    for body in searches(ALL_FILTERS).values():
        assert body["stored_fields"] == "_none_" and body["docvalue_fields"] == list(RANKING_FIELDS)
        assert "_source" not in body and "highlight" not in body
    original = text_body("energy", 5, [])
    light = ranking_only(original)
    assert "highlight" in original and "_source" in original  # the body it came from is left alone
    assert light["query"] == original["query"] and light["size"] == 5


def test_formula_only_keyword_only_and_weights_choose_the_lists():
    assert set(searches(HybridQuery(latex="x^2"))) == {"embedding"}
    words = {"text", "papers"}  # the words' equations, and their papers for the evidence fusion
    assert set(searches(HybridQuery(keywords="energy"), vector=None)) == words
    assert set(searches(HybridQuery(latex="x^2", keywords="energy"))) == {"embedding", *words}
    # a formula that did not convert (no vector) leaves the keywords alone
    assert set(searches(HybridQuery(latex=r"\frac{", keywords="energy"), vector=None)) == words
    assert set(searches(HybridQuery(latex="x^2", keywords="energy", formula_weight=1.0))) == {"embedding"}
    assert set(searches(HybridQuery(latex="x^2", keywords="energy", formula_weight=0.0))) == words
    assert searches(HybridQuery(keywords="   "), vector=None) == {}  # blank keywords: no list at all
    assert searches(HybridQuery(), vector=None) == {}


def test_every_list_is_as_deep_as_the_window():
    bodies = searches(HybridQuery(latex="x^2", keywords="energy"), window=70)
    assert bodies["embedding"]["size"] == 70 and bodies["embedding"]["query"]["knn"]["k"] == 70
    assert bodies["embedding"]["query"]["knn"]["num_candidates"] == 420
    assert bodies["text"]["size"] == 70


@pytest.mark.parametrize(
    ("query", "past"),
    [
        (HybridQuery(page=1, size=10), False),  # the depth, whatever the page, its size or the grouping
        (HybridQuery(page=10, size=10), False),
        (HybridQuery(page=11, size=10), True),  # starts past the ranking: an empty page and a warning
        (HybridQuery(page=1, size=100), False),
        (HybridQuery(page=2, size=50), False),
        (HybridQuery(page=3, size=50), True),
        (HybridQuery(page=3, size=10, group_by_paper=True), False),
    ],
)
def test_candidate_window_is_the_depth_whatever_the_page(query: HybridQuery, past: bool):
    assert candidate_window(query, candidate_depth=100) == (100, past)
    assert candidate_window(query, candidate_depth=5000)[0] == MAX_RESULT_WINDOW


def test_words_alone_rank_display_equations_and_papers_come_once():
    bodies = searches(HybridQuery(keywords="energy"), vector=None, window=40)
    inline_out = {"bool": {"must_not": [{"term": {"inline": True}}]}}
    assert set(bodies) == {"text", "papers"}
    assert inline_out in bodies["text"]["query"]["bool"]["filter"]
    assert bodies["papers"]["collapse"] == {"field": "paper_id"} and bodies["papers"]["size"] == 40
    asked = searches(HybridQuery(keywords="energy", inline="only"), vector=None, window=40)
    assert inline_out not in asked["text"]["query"]["bool"]["filter"]
    with_formula = searches(HybridQuery(latex="x^2", keywords="energy"), window=40)
    assert inline_out not in with_formula["text"]["query"]["bool"]["filter"]  # a formula may match an inline one
    assert "papers" not in searches(HybridQuery(keywords="energy", fusion="rrf"), window=40)


def test_page_body_fetches_by_id_with_highlights_of_the_keywords():
    plain = page_body(["p1:0", "p2:3"], None)
    assert plain == {
        "query": {"terms": {"eq_id": ["p1:0", "p2:3"]}},
        "size": 2,
        "_source": {"excludes": SOURCE_EXCLUDES},
        "track_total_hits": False,
    }
    highlighted = page_body(["p1:0"], "energy")
    text = text_body("energy", 1, [])
    assert highlighted["highlight"] == {**text["highlight"], "highlight_query": text["query"]["bool"]["must"][0]}
    assert highlighted["query"] == {"terms": {"eq_id": ["p1:0"]}} and highlighted["size"] == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"formula_weight": 1.5}, "formula_weight"),
        ({"formula_weight": -0.1}, "formula_weight"),
        ({"fusion": "max"}, "fusion"),
        ({"page": 0}, "page"),
        ({"size": 0}, "size"),
        ({"size": MAX_PAGE_SIZE + 1}, "size"),
        ({"year_from": 2020, "year_to": 2010}, "after year_to"),
        ({"categories": "math.PR"}, "not one string"),
    ],
)
def test_query_validation(fields: dict, message: str):
    with pytest.raises(ValueError, match=message):
        HybridQuery(**fields)


def test_formula_and_keywords_are_present_only_when_not_blank():
    assert HybridQuery(latex=" x ").has_formula and not HybridQuery(latex="  ").has_formula
    assert HybridQuery(keywords="a").has_keywords and not HybridQuery(keywords="").has_keywords
    assert HybridQuery(size=MAX_PAGE_SIZE).size == MAX_PAGE_SIZE


def test_the_structural_search_is_bm25_over_the_formulas_terms_with_the_filters():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search.query import structure_body

    structure = formula_structure(None, "x^2")
    filters = [{"term": {"paper_id": "p"}}]
    body = structure_body(structure, 40, filters)
    terms = {"bool": {"should": [{"term": {"structure": token}} for token in structure.tokens]}}
    assert body["query"] == {"bool": {"must": [terms], "filter": filters}}
    repeated = structure_body(formula_structure(None, "x + x"), 40, [])["query"]["bool"]["must"][0]["bool"]["should"]
    assert {"term": {"structure": {"value": "V:x", "boost": 2.0}}} in repeated  # once, weighing twice
    assert body["size"] == 40 and "rescore" not in body


def test_the_rerank_multiplies_bm25_by_one_plus_the_largest_shared_subexpressions():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search.query import structure_body

    structure = formula_structure(None, "x^2")  # size 2: spans of size 2 (x^2) and 1 (2)
    body = structure_body(structure, 40, [], rerank_window=300, rerank_weight=0.5)
    rescore = body["rescore"]
    assert rescore["window_size"] == 300 and rescore["query"]["score_mode"] == "multiply"
    should = rescore["query"]["rescore_query"]["bool"]["should"]
    assert should[0] == {"match_all": {"boost": 1.0}}  # every candidate keeps at least its BM25 score
    exact, general = should[1]["dis_max"]["queries"], should[2]["dis_max"]["queries"]
    boosts = sorted(q["constant_score"]["boost"] for q in exact)
    assert boosts == [0.5]  # weight x span size / query size: 0.5 x 2/2 (one-symbol spans are not looked for)
    assert all(q["constant_score"]["filter"]["term"]["structure_spans"].startswith("g") for q in general)
    assert "rescore" not in structure_body(structure, 40, [], rerank_window=300, rerank_weight=0.0)


def test_a_long_query_sends_the_rerank_its_largest_sub_expressions_only():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search.structure_query import MAX_RERANK_SPANS, structure_body

    long = "+".join(rf"\frac{{x_{{{i}}}^{{2}}}}{{y_{{{i}}}+1}}" for i in range(300))  # 600 baseline symbols
    structure = formula_structure(None, long)
    renamed = [size for span, size in structure.spans.items() if span.startswith("r") and size >= 2]
    assert len(renamed) > MAX_RERANK_SPANS  # thousands of runs: past what a query may hold
    body = structure_body(structure, 40, [], rerank_window=300, rerank_weight=0.5)
    sent = body["rescore"]["query"]["rescore_query"]["bool"]["should"][1]["dis_max"]["queries"]
    assert len(sent) == MAX_RERANK_SPANS
    kept = sorted((q["constant_score"]["boost"] * structure.size / 0.5 for q in sent), reverse=True)
    assert [round(size) for size in kept] == sorted(renamed, reverse=True)[:MAX_RERANK_SPANS]  # the largest


def test_the_ranker_decides_which_formula_lists_are_searched():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search import get_ranker

    structure = formula_structure(None, "x^2")
    vector = np.ones(4, dtype=np.float32)
    query = HybridQuery(latex="x^2")

    def searches(ranker: str) -> dict[str, dict]:
        found = ranking_searches(
            query, vector, window=50, num_candidates_factor=6, structure=structure, ranking=get_ranker(ranker)
        )
        return dict(found)

    def names(ranker: str) -> list[str]:
        return list(searches(ranker))

    assert names("embedding") == ["embedding"]
    assert names("structure") == ["structure"]
    assert names("structure+embedding+rerank") == ["structure", "embedding"]
    reranked = dict(
        ranking_searches(
            query,
            vector,
            window=50,
            num_candidates_factor=6,
            structure=structure,
            ranking=get_ranker("structure+rerank"),
        )
    )
    assert reranked["structure"]["rescore"]["window_size"] == 300  # the rerank looks deeper than the page
    assert ranking_searches(query, None, window=50, num_candidates_factor=6) == []  # nothing to search with


def test_rankers_are_registered_and_checked():
    from eqsearch.engine.search import DEFAULT_RANKER, RANKERS, FormulaRanking, get_ranker

    assert DEFAULT_RANKER in RANKERS and get_ranker("embedding").channels == ("embedding",)
    with pytest.raises(ValueError, match="unknown ranker 'bm25'; one of: embedding"):
        get_ranker("bm25")
    with pytest.raises(ValueError, match="give the structure or the embedding a weight"):
        FormulaRanking("none", "nothing")
    with pytest.raises(ValueError, match="the rerank rescores the structural list"):
        FormulaRanking("odd", "rerank without structure", embedding=1.0, rerank_window=100, rerank_weight=1.0)
    with pytest.raises(ValueError, match="part weights are 0 or more, not all 0"):
        FormulaRanking("odd", "no part", embedding=1.0, embedding_parts=(("graph", 0.0), ("structure", 0.0)))


def test_each_ranker_weighs_the_composites_parts_in_its_query_vector():
    """The shipped encoder is a composite: the default's kNN asks for the network's part alone (the structure
    already speaks in its structural list), the embedding ranker's for the structure-bag part 0.7 and the network
    0.3; an encoder that is no composite takes the vector as it is."""
    from eqsearch.engine.model.encoder import load_encoder
    from eqsearch.engine.search import DEFAULT_RANKER, get_ranker
    from eqsearch.engine.search.query_formula import QueryFormulas, weigh_parts

    encoder = load_encoder()
    mathml = "<math><mrow><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><mn>1</mn></mrow></math>"
    stored = encoder.encode([mathml])[0]
    graph, structure = stored[:64], stored[64:]  # each sqrt(0.5) times its part's unit vector

    def query_vector(ranker: str, coder: object = encoder) -> np.ndarray:
        formulas = QueryFormulas(None, coder, get_ranker(ranker), node_encoder=None, normalise=lambda: True, size=0)
        return formulas.encode(mathml)

    default = query_vector(DEFAULT_RANKER)
    assert not default[64:].any()
    np.testing.assert_allclose(default[:64], graph / np.linalg.norm(graph), atol=1e-6)
    alone = query_vector("embedding")
    expected = np.concatenate([0.3 / 0.5 * graph, 0.7 / 0.5 * structure])
    np.testing.assert_allclose(alone, expected / np.linalg.norm(expected), atol=1e-6)
    network = load_encoder(default_bundle_path())
    assert np.allclose(query_vector("embedding", network), query_vector(DEFAULT_RANKER, network))
    # what 'equations like this' sends: a stored vector weighed as the embedding ranker weighs a query
    parts = get_ranker("embedding").embedding_parts
    np.testing.assert_allclose(weigh_parts(encoder, stored, parts), np.concatenate([0.6 * graph, 1.4 * structure]))
    assert np.array_equal(weigh_parts(encoder, stored[:64], parts), stored[:64])  # another width: as it is
    assert np.array_equal(weigh_parts(network, stored[:64], parts), stored[:64])  # no composite: as it is


def test_formula_lists_fetch_papers_only_where_the_fusion_reads_them():
    """A formula-only search that does not group by paper reads no candidate's paper: its formula lists fetch
    ``eq_id`` alone; words weighed beside the formula, or a page grouped by paper, read them."""
    formula_only = HybridQuery(latex="x^2", formula_weight=1.0)
    cases = {
        formula_only: ["eq_id"],
        replace(formula_only, keywords="energy"): ["eq_id"],  # the words weigh nothing: not searched
        replace(formula_only, group_by_paper=True): list(RANKING_FIELDS),
        replace(formula_only, keywords="energy", formula_weight=0.5): list(RANKING_FIELDS),
    }
    for query, fields in cases.items():
        found = searches(query)
        assert found["embedding"]["docvalue_fields"] == fields
        assert needs_papers(query) is (fields == list(RANKING_FIELDS))
        assert all(
            body["docvalue_fields"] == list(RANKING_FIELDS) for name, body in found.items() if name != "embedding"
        )
