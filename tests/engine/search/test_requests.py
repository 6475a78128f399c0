"""The search's requests on a real node: the ranked lists as one ``_msearch`` of ids, scores, papers and the words'
count; a list that fails names itself; the page fetched by id with the keywords' highlights, its papers joined, its
placeholders named by an equation of their paper."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.errors import SearchError
from eqsearch.engine.search.fusion import Fused, paper_placeholder
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.requests import (
    fetch_page,
    fetch_page_and_papers,
    fetch_page_with_papers,
    fetch_papers,
    fetch_sources,
    name_placeholders,
    ranked_lists,
    representatives,
)

pytestmark = pytest.mark.es


def test_the_ranked_lists_bring_ids_scores_papers_and_the_words_count(es_client, service):
    query = HybridQuery(latex="E = mc^2", keywords="energy")
    found = ranked_lists(es_client, service.equations_alias, service.requests(query), service.papers_alias)
    assert list(found.lists) == ["structure", "embedding", "text", "paper_contexts"]
    assert found.papers[0][0] == "2101.00001" and found.papers[0][1] > 0  # the papers index's: by title and abstract
    knn = found.lists["embedding"]  # (this corpus is written without structural fields: its structure list is empty)
    assert knn[0][0] == "2101.00001:0" and all(score > 0 for _, score in knn)
    assert [score for _, score in knn] == sorted((score for _, score in knn), reverse=True)
    assert found.paper_of["2101.00001:0"] == "2101.00001"  # combined queries read each candidate's paper
    assert found.text_total >= len(found.lists["text"]) > 0 and found.missing_shards == 0
    assert not found.maxsim and not found.warnings


def test_a_failing_list_names_itself(es_client, service):
    bad = {"query": {"range": {"year": {"gte": "not a year"}}}, "docvalue_fields": ["eq_id"]}
    with pytest.raises(SearchError, match="the text search failed"):
        ranked_lists(es_client, service.equations_alias, [("text", bad)])


def test_the_page_is_fetched_by_id_with_highlights_and_sources_with_the_fields_asked(es_client, service):
    page = fetch_page(es_client, service.equations_alias, ["2101.00001:0", "no-such-id"], "energy")
    assert list(page) == ["2101.00001:0"]  # an id gone since the ranking is simply absent
    assert page["2101.00001:0"]["_source"]["latex"] == "E = mc^2" and "vector" not in page["2101.00001:0"]["_source"]
    assert page["2101.00001:0"]["highlight"]
    sources = fetch_sources(es_client, service.equations_alias, {"ids": {"values": ["2101.00001:1"]}}, 5, ["latex"])
    assert sources == [{"latex": "E^2 = (pc)^2 + (mc^2)^2"}]


def test_a_paper_found_by_its_words_alone_is_named_by_an_equation_the_filters_keep(es_client, service):
    named = representatives(es_client, service.equations_alias, ["1905.00002", "2203.00004", "nope"], "spectrum", [])
    assert named == {"1905.00002": "1905.00002:1", "2203.00004": "2203.00004:0"}  # its words' section, else its first
    inline_only = [{"term": {"inline": True}}]
    assert representatives(es_client, service.equations_alias, ["1905.00002"], None, inline_only) == {}
    assert representatives(es_client, service.equations_alias, [], "x", []) == {}


def test_the_pages_papers_come_by_id_with_highlights_of_the_words(es_client, service):
    papers = fetch_papers(es_client, service.papers_alias, ["1905.00002", "1905.00002", "gone"], "oscillator")
    assert list(papers) == ["1905.00002"]
    assert papers["1905.00002"]["_source"]["title"] == "The quantum harmonic oscillator"
    assert "sections" not in papers["1905.00002"]["_source"]
    assert any("<em>oscillator</em>" in f for f in papers["1905.00002"]["highlight"]["title"])
    assert fetch_papers(es_client, "eqsearch-no-such-index-papers", ["1905.00002"], None) == {}


def test_the_page_and_its_papers_come_in_one_request_where_the_papers_are_known(es_client, service):
    documents, papers = fetch_page_and_papers(
        es_client, service.equations_alias, service.papers_alias, ["1905.00002:0", "gone:0"], ["1905.00002"], "spectrum"
    )
    assert list(documents) == ["1905.00002:0"] and list(papers) == ["1905.00002"]
    assert documents["1905.00002:0"]["_source"]["latex"].startswith("H =")
    assert papers["1905.00002"]["_source"]["title"] == "The quantum harmonic oscillator"
    assert fetch_page_and_papers(es_client, service.equations_alias, service.papers_alias, [], [], None) == ({}, {})
    with pytest.raises(SearchError, match="the page search failed"):
        fetch_page_and_papers(es_client, "eqsearch-no-such-index-equations", service.papers_alias, ["x"], ["p"], None)


def test_placeholders_on_the_page_are_named_by_an_equation_of_their_paper(es_client, service):
    page = [
        Fused("2101.00001:0", 1.0),
        Fused(paper_placeholder("1905.00002"), 0.5),
        Fused(paper_placeholder("no"), 0.2),
    ]
    paper_of: dict[str, str] = {}
    named = name_placeholders(es_client, service.equations_alias, page, "spectrum", [], paper_of)
    assert [item.doc_id for item in named] == ["2101.00001:0", "1905.00002:1"]  # a paper without an equation leaves
    assert named[1].score == 0.5 and paper_of == {"1905.00002:1": "1905.00002"}
    documents, papers = fetch_page_with_papers(
        es_client, service.equations_alias, service.papers_alias, ["1905.00002:1"], None, {}
    )
    assert list(documents) == ["1905.00002:1"] and list(papers) == ["1905.00002"]  # its paper read from its source
