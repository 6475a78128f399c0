"""The request bodies a `HybridQuery` becomes, checked without a node: filters, kNN and BM25 parts, candidate
depth, the page fetch, and the query's own validation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from eqsearch.engine.index.mappings import VECTOR_FIELD
from eqsearch.engine.search.query import (
    MAX_PAGE_SIZE,
    MAX_RESULT_WINDOW,
    PAPER_LIST_FIELDS,
    PAPER_PAGE_FIELDS,
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
    paper_filters,
    papers_page_body,
    query_filters,
    ranking_only,
    representatives_body,
    text_body,
)
from search_plans import requests_for

VECTOR = np.array([0.5, -0.25, 0.0], dtype=np.float32)
ALL_FILTERS = HybridQuery(
    latex="x^2", keywords="energy", categories=("math.PR", "quant-ph"), year_from=2017, year_to=2021, paper_id="p1"
)


def searches(query: HybridQuery, vector: np.ndarray | None = VECTOR, window: int = 50) -> dict[str, dict]:
    return requests_for(query, vector=vector, depth=window)


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
    # the equations' lists ask the words of the equation itself; the paper's words are the papers index's
    own = {"multi_match": {"query": "energy", "fields": ["section_title^1.5", "context"], "type": "best_fields"}}
    assert text["must"] == [own] and list(TEXT_FIELDS) == own["multi_match"]["fields"]
    title = {"multi_match": {"query": "energy", "fields": ["title^2", "abstract"], "type": "best_fields"}}
    # the papers index has no inline flag: its filters are the paper's (categories, years, one paper)
    assert bodies["papers"]["query"]["bool"] == {"must": [title], "filter": paper_filters(ALL_FILTERS)}
    assert paper_filters(HybridQuery(inline="exclude")) == [] and query_filters(HybridQuery(inline="exclude"))
    rrf = searches(replace(ALL_FILTERS, fusion="rrf"))
    assert rrf["text"]["query"]["bool"] == {"must": [own], "filter": filters} and "papers" in rrf


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
    assert set(body["highlight"]["fields"]) == {"section_title", "context"}
    assert body["highlight"]["require_field_match"] is True


def test_the_ranked_lists_read_doc_values_only():
    for name, body in searches(ALL_FILTERS).items():
        fields = list(PAPER_LIST_FIELDS if name == "papers" else RANKING_FIELDS)
        assert body["stored_fields"] == "_none_" and body["docvalue_fields"] == fields
        assert "_source" not in body and "highlight" not in body
    original = text_body("energy", 5, [])
    light = ranking_only(original)
    assert "highlight" in original and "_source" in original  # the body it came from is left alone
    assert light["query"] == original["query"] and light["size"] == 5


def test_formula_only_keyword_only_and_weights_choose_the_lists():
    assert set(searches(HybridQuery(latex="x^2"))) == {"embedding"}
    words = {"text", "paper_contexts", "papers"}  # the words' equations, and their papers
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
    assert set(bodies) == {"text", "paper_contexts", "papers"}
    assert inline_out in bodies["paper_contexts"]["query"]["bool"]["filter"]
    assert bodies["paper_contexts"]["collapse"] == {"field": "paper_id"} and bodies["paper_contexts"]["size"] == 40
    assert inline_out in bodies["text"]["query"]["bool"]["filter"]
    assert bodies["papers"]["size"] == 40 and bodies["papers"]["query"]["bool"]["filter"] == []
    asked = searches(HybridQuery(keywords="energy", inline="only"), vector=None, window=40)
    assert inline_out not in asked["text"]["query"]["bool"]["filter"]
    with_formula = searches(HybridQuery(latex="x^2", keywords="energy"), window=40)
    assert inline_out not in with_formula["text"]["query"]["bool"]["filter"]  # a formula may match an inline one


def test_a_paper_found_by_its_words_shows_with_its_best_worded_or_first_equation_that_the_filters_keep():
    inline_out = {"bool": {"must_not": [{"term": {"inline": True}}]}}
    body = representatives_body(["p1", "p2"], "energy", [inline_out])
    assert body["query"]["bool"]["filter"] == [inline_out, {"terms": {"paper_id": ["p1", "p2"]}}]
    assert body["query"]["bool"]["should"] == text_body("energy", 1, [])["query"]["bool"]["must"]
    assert body["collapse"] == {"field": "paper_id"} and body["size"] == 2
    assert body["sort"] == [{"_score": "desc"}, {"number": "asc"}]
    assert body["docvalue_fields"] == list(RANKING_FIELDS) and body["stored_fields"] == "_none_"
    assert "should" not in representatives_body(["p1"], None, [])["query"]["bool"]


def test_the_page_joins_its_papers_fields_and_highlights_the_words_in_them():
    plain = papers_page_body(["p1", "p2"], None)
    assert plain["query"] == {"ids": {"values": ["p1", "p2"]}} and plain["size"] == 2 and "highlight" not in plain
    assert plain["_source"] == {"includes": list(PAPER_PAGE_FIELDS)}
    highlighted = papers_page_body(["p1"], "energy")
    assert set(highlighted["highlight"]["fields"]) == {"title", "abstract"}
    assert highlighted["highlight"]["highlight_query"]["multi_match"]["fields"] == ["title^2", "abstract"]


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


def test_the_ranker_decides_which_formula_lists_are_searched():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search import get_ranker

    structure = formula_structure(None, "x^2")
    vector = np.ones(4, dtype=np.float32)
    query = HybridQuery(latex="x^2")

    def names(ranker: str) -> list[str]:
        return list(requests_for(query, get_ranker(ranker), structure=structure, vector=vector, depth=50))

    assert names("embedding") == ["embedding"]
    assert names("structure") == ["structure"]
    assert names("structure+embedding+rerank") == ["structure", "embedding"]
    reranked = requests_for(query, "structure+rerank", structure=structure, vector=vector, depth=50)
    assert reranked["structure"]["rescore"]["window_size"] == 300  # the rerank looks deeper than the page
    assert requests_for(query, vector=None) == {}  # nothing to search with


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
            body["docvalue_fields"] == list(PAPER_LIST_FIELDS if name == "papers" else RANKING_FIELDS)
            for name, body in found.items()
            if name != "embedding"
        )
