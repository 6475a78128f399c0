"""Hybrid search on a real node: exact rankings on a small hand-built corpus, filters, grouping, pagination,
"more like this", papers with citations, and LaTeX that does not parse.

LaTeX goes through the real KaTeX converter. The encoder is `HashingEncoder`, an honest stand-in for the trained
model (same `Encoder` protocol): it hashes MathML token features into 64-d, so identical formulas get identical
vectors and formulas that share structure get close ones. Elasticsearch is never mocked.
"""

from __future__ import annotations

import pytest
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import EquationNotFoundError, SearchService
from hashing_encoder import HashingEncoder

pytestmark = pytest.mark.es


def ids(results) -> list[str]:
    return [hit.eq_id for hit in results.hits]


def test_formula_only_ranks_the_identical_formula_first_then_its_look_alike(service):
    results = service.search(HybridQuery(latex="a^2+b^2=c^2", size=3))
    assert ids(results) == ["2203.00004:0", "2203.00004:1", "2101.00001:1"]
    assert all(hit.matched == "formula" for hit in results.hits)
    assert results.latex_error is None
    assert results.analyzer == "standard"  # the minimal distribution has no english analyzer


def test_keywords_only_rank_by_bm25_with_highlights(service):
    results = service.search(HybridQuery(keywords="harmonic oscillator", size=10))
    # the words name the paper (its title), not one equation's context: the paper comes with its best equation
    assert {hit.paper_id for hit in results.hits} == {"1905.00002"}
    # the other fusions weigh the same words evidence: the paper's title and abstract live once, in the papers index,
    # so a paper named by them alone comes with one equation (its first), never each of its equations
    rrf = service.search(HybridQuery(keywords="harmonic oscillator", size=10, fusion="rrf"))
    assert ids(rrf) == ["1905.00002:0"] and ids(results) == ["1905.00002:0"]
    assert all(hit.matched == "text" for hit in results.hits)
    assert any("<em>oscillator</em>" in fragment for fragment in results.hits[0].highlights.get("title", []))
    assert results.hits[0].title == "The quantum harmonic oscillator"


def test_hybrid_rrf_exact_ranking_and_matched_both(service):
    results = service.search(HybridQuery(latex="E = mc^2", keywords="relativity energy", fusion="rrf", size=4))
    assert results.hits[0].eq_id == "2101.00001:0"
    assert results.hits[0].matched == "both"
    # RRF: E=mc^2 is 1st in both lists; the paper's other equation is 2nd by formula (1.592 vs the oscillator's
    # 1.584) and tied 1st by text, so 2nd; the oscillator's equations follow (they mention "energy")
    assert ids(results) == ["2101.00001:0", "2101.00001:1", "1905.00002:0", "1905.00002:1"]
    linear = service.search(HybridQuery(latex="E = mc^2", keywords="relativity energy", fusion="linear", size=4))
    # linear: the text scores of 2101 (4.5) dwarf 1905's (0.6) once normalised, so the paper's second equation
    # overtakes the formula-only runner-up
    assert ids(linear) == ["2101.00001:0", "2101.00001:1", "1905.00002:0", "2203.00004:0"]
    assert linear.hits[0].score == pytest.approx(1.0)
    assert linear.hits[3].matched == "formula"


def test_evidence_fusion_keeps_the_exact_formula_first_and_lifts_its_page(service):
    results = service.search(HybridQuery(latex="E = mc^2", keywords="relativity energy", size=8))
    assert results.hits[0].eq_id == "2101.00001:0" and results.hits[0].matched == "both"
    # the words describe 2101's page: its other equation overtakes the oscillator's, which the formula ranks 2nd
    assert ids(results)[:2] == ["2101.00001:0", "2101.00001:1"]
    formula_only = ids(service.search(HybridQuery(latex="E = mc^2", size=8)))
    assert set(ids(results)) >= set(formula_only)  # the words re-weigh the formula's candidates, drop none
    # a word that names another page moves that page's formula candidates up
    other = ids(service.search(HybridQuery(latex="E = mc^2", keywords="oscillator", size=8)))
    assert other.index("1905.00002:1") < formula_only.index("1905.00002:1")
    assert other.index("2101.00001:0") < other.index("2101.00001:1")  # within a page, the formula decides


@pytest.mark.parametrize(
    "query",
    [
        {"latex": "x^2"},
        {"keywords": "energy integer"},
        {"latex": "x^2", "keywords": "energy integer"},
        {"latex": "x^2", "keywords": "energy integer", "fusion": "rrf"},
    ],
)
def test_paging_is_one_ranking_whatever_the_page_or_its_size(service, query):
    whole = service.search(HybridQuery(size=8, **query))
    pages = [service.search(HybridQuery(size=3, page=page, **query)) for page in (1, 2, 3)]
    assert [hit.eq_id for page in pages for hit in page.hits] == ids(whole)
    assert {page.total for page in pages} == {whole.total}
    grouped = [service.search(HybridQuery(size=1, page=page, group_by_paper=True, **query)) for page in (1, 2)]
    both = service.search(HybridQuery(size=2, group_by_paper=True, **query))
    assert [group.paper_id for page in grouped for group in page.groups] == [g.paper_id for g in both.groups]


def test_a_page_past_the_ranked_depth_is_empty_and_says_so(es_client, corpus, converter):
    shallow = SearchService(es_client, HashingEncoder(), converter, index_prefix=corpus, candidate_depth=4)
    first = shallow.search(HybridQuery(latex="x^2", size=4))
    assert len(first.hits) == 4 and not first.warnings
    past = shallow.search(HybridQuery(latex="x^2", size=4, page=2))
    assert past.hits == [] and past.total == first.total
    assert any("ranks its best 4 equations" in warning for warning in past.warnings)


def test_linear_fusion_with_full_formula_weight_is_the_formula_ranking(service):
    formula_only = service.search(HybridQuery(latex="E = mc^2", size=7))
    query = HybridQuery(latex="E = mc^2", keywords="gaussian", formula_weight=1.0, fusion="linear", size=7)
    weighted = service.search(query)
    assert ids(weighted) == ids(formula_only)
    text_only = service.search(HybridQuery(latex="E = mc^2", keywords="gaussian", formula_weight=0.0, size=7))
    assert {hit.paper_id for hit in text_only.hits} == {"1703.00003"}


def test_filters_are_pre_filters(service):
    recent = service.search(HybridQuery(latex="a^2+b^2=c^2", year_from=2020, size=10))
    assert {hit.paper_id for hit in recent.hits} == {"2101.00001", "2203.00004"}
    assert len(recent.hits) == 4  # pre-filtered: all four equations of 2020+ come back, not fewer
    category = service.search(HybridQuery(latex="a^2+b^2=c^2", categories=("math.PR",), size=10))
    assert ids(category) == ["1703.00003:1", "1703.00003:0"]
    one_paper = service.search(HybridQuery(keywords="energy", paper_id="1905.00002", size=10))
    assert {hit.paper_id for hit in one_paper.hits} == {"1905.00002"}


def test_group_by_paper_and_pagination(service):
    flat = service.search(HybridQuery(latex="x^2", keywords="energy integer", size=8))
    grouped = service.search(HybridQuery(latex="x^2", keywords="energy integer", size=2, group_by_paper=True))
    papers_in_order = list(dict.fromkeys(hit.paper_id for hit in flat.hits))
    assert [group.paper_id for group in grouped.groups] == papers_in_order[:2]
    assert grouped.total == 4
    for group in grouped.groups:
        assert all(hit.paper_id == group.paper_id for hit in group.equations)
        assert group.score == group.equations[0].score
    page2 = service.search(HybridQuery(latex="x^2", keywords="energy integer", size=3, page=2))
    assert ids(page2) == ids(flat)[3:6]


def test_latex_error_still_returns_keyword_results(service):
    results = service.search(HybridQuery(latex=r"\frac{a}{", keywords="gaussian integral", size=5))
    assert results.latex_error
    assert {hit.paper_id for hit in results.hits} == {"1703.00003"}
    alone = service.search(HybridQuery(latex=r"\frac{a}{", size=5))
    assert alone.latex_error and alone.hits == [] and alone.total == 0


def test_more_like_equation_excludes_itself(service):
    results = service.more_like_equation("2203.00004:0", size=3)
    assert "2203.00004:0" not in ids(results)
    assert ids(results)[0] == "2203.00004:1"
    with pytest.raises(EquationNotFoundError):
        service.more_like_equation("nope:0")
