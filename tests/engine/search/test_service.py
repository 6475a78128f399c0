"""Hybrid search on a real node: exact rankings on a small hand-built corpus, filters, grouping, pagination,
"more like this", papers with citations, and LaTeX that does not parse.

LaTeX goes through the real KaTeX converter. The encoder is `HashingEncoder`, an honest stand-in for the trained
model (same `Encoder` protocol): it hashes MathML token features into 64-d, so identical formulas get identical
vectors and formulas that share structure get close ones. Elasticsearch is never mocked.
"""

from __future__ import annotations

import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.mappings import IndexOptions
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import EquationNotFoundError, SearchService
from hashing_encoder import HashingEncoder

pytestmark = pytest.mark.es


PAPERS = [
    {
        "paper_id": "2101.00001",
        "title": "Mass-energy equivalence in special relativity",
        "abstract": "We revisit the rest energy of a massive body.",
        "categories": ["physics.gen-ph"],
        "year": 2021,
        "citations_out": [],
        "sections": [(1, "Rest energy", ["E = mc^2", "E^2 = (pc)^2 + (mc^2)^2"])],
        "context": "the famous relation between energy and mass",
    },
    {
        "paper_id": "1905.00002",
        "title": "The quantum harmonic oscillator",
        "abstract": "Ladder operators and the spectrum of the oscillator.",
        "categories": ["quant-ph"],
        "year": 2019,
        "citations_out": ["2101.00001"],
        "sections": [
            (1, "Hamiltonian", [r"H = \frac{p^2}{2m} + \frac{1}{2} m \omega^2 x^2"]),
            (2, "Spectrum", [r"E_n = \hbar \omega \left(n + \frac{1}{2}\right)"]),
        ],
        "context": "the energy levels of a particle in a quadratic potential",
    },
    {
        "paper_id": "1703.00003",
        "title": "Gaussian integrals and the normal distribution",
        "abstract": "A short note on the Gaussian integral.",
        "categories": ["math.PR"],
        "year": 2017,
        "citations_out": [],
        "sections": [
            (1, "The integral", [r"\int_{-\infty}^{\infty} e^{-x^2} \, dx = \sqrt{\pi}"]),
            (2, "Density", [r"f(x) = \frac{1}{\sqrt{2\pi}} e^{-x^2/2}"]),
        ],
        "context": "the density of a standard normal random variable",
    },
    {
        "paper_id": "2203.00004",
        "title": "Pythagorean triples",
        "abstract": "Integer solutions of the Pythagorean equation.",
        "categories": ["math.NT"],
        "year": 2022,
        "citations_out": ["2101.00001", "1703.00003"],
        "sections": [(1, "Triples", ["a^2 + b^2 = c^2", "x^2 + y^2 = z^2"])],
        "context": "right triangles with integer sides",
    },
]


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture
def corpus(es_client, index_name, converter) -> str:
    """The four papers indexed under a fresh prefix; returns the prefix."""
    encoder = HashingEncoder()
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    actions = []
    for paper in PAPERS:
        shared = {k: paper[k] for k in ("paper_id", "title", "abstract", "categories", "year", "citations_out")}
        number = 0
        equations = []
        for section, title, latexes in paper["sections"]:
            for latex in latexes:
                mathml = converter.convert(latex).mathml
                assert mathml is not None, latex
                equations.append(
                    {
                        **shared,
                        "eq_id": f"{paper['paper_id']}:{number}",
                        "paper_key": paper["paper_id"],
                        "number": number,
                        "latex": latex,
                        "mathml": mathml,
                        "section": section,
                        "section_title": title,
                        "context": paper["context"],
                        "vector": encoder.encode([mathml])[0].tolist(),
                    }
                )
                number += 1
        actions += [{"_index": f"{index_name}-equations", "_id": eq["eq_id"], "_source": eq} for eq in equations]
        outline = [{"index": s, "title": t} for s, t, _ in paper["sections"]]
        actions.append(
            {
                "_index": f"{index_name}-papers",
                "_id": paper["paper_id"],
                "_source": {**shared, "paper_key": paper["paper_id"], "equation_count": number, "sections": outline},
            }
        )
    report = bulk_index(es_client, actions, refresh="wait_for")
    assert report.failed == 0, report.failures
    return index_name


@pytest.fixture
def service(es_client, corpus, converter) -> SearchService:
    return SearchService(es_client, HashingEncoder(), converter, index_prefix=corpus)


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
    rrf = service.search(HybridQuery(keywords="harmonic oscillator", size=10, fusion="rrf"))
    assert set(ids(rrf)) == {"1905.00002:0", "1905.00002:1"}  # every equation of the page, as the page's words
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


class CountingConverter:
    """The real KaTeX converter, recording what it is asked to convert."""

    def __init__(self, converter) -> None:
        self.converter = converter
        self.calls: list[str] = []

    def convert(self, latex, environment="equation", macros=()):
        self.calls.append(latex)
        return self.converter.convert(latex, environment, macros)


def test_query_formulas_are_converted_and_encoded_once_per_cache_entry(es_client, corpus, converter):
    counting = CountingConverter(converter)
    service = SearchService(es_client, HashingEncoder(), counting, index_prefix=corpus, formula_cache_size=1)
    uncached = SearchService(es_client, HashingEncoder(), converter, index_prefix=corpus, formula_cache_size=0)
    query = HybridQuery(latex="E = mc^2", keywords="relativity energy", size=2)
    first, second = service.search(query), service.search(HybridQuery(**{**query.__dict__, "page": 2}))
    assert counting.calls == ["E = mc^2"]  # the next page reuses the conversion and the vector
    assert ids(first) + ids(second) == ids(uncached.search(HybridQuery(**{**query.__dict__, "size": 4})))
    service.search(HybridQuery(latex="x^2"))  # the cache holds one formula: E = mc^2 goes
    service.search(HybridQuery(latex="E = mc^2"))
    assert counting.calls == ["E = mc^2", "x^2", "E = mc^2"]
    for _ in range(2):
        assert service.search(HybridQuery(latex=r"\frac{a}{")).latex_error
    assert counting.calls.count(r"\frac{a}{") == 2  # failures are not kept


def test_more_like_equation_excludes_itself(service):
    results = service.more_like_equation("2203.00004:0", size=3)
    assert "2203.00004:0" not in ids(results)
    assert ids(results)[0] == "2203.00004:1"
    with pytest.raises(EquationNotFoundError):
        service.more_like_equation("nope:0")


def test_get_paper_with_sections_and_citations(service):
    paper = service.get_paper("2101.00001")
    assert paper is not None
    assert [s["title"] for s in paper["sections"]] == ["Rest energy"]
    assert [eq["latex"] for eq in paper["sections"][0]["equations"]] == ["E = mc^2", "E^2 = (pc)^2 + (mc^2)^2"]
    assert {c["paper_id"] for c in paper["cited_by"]} == {"1905.00002", "2203.00004"}
    citing = service.get_paper("2203.00004")
    assert citing["citations_out"] == [
        {"paper_id": "2101.00001", "indexed": True, "title": "Mass-energy equivalence in special relativity"},
        {"paper_id": "1703.00003", "indexed": True, "title": "Gaussian integrals and the normal distribution"},
    ]
    assert service.get_paper("0000.00000") is None
    equation = service.get_equation("2101.00001:0")
    assert equation["latex"] == "E = mc^2" and "vector" not in equation
    assert service.get_equation("nope") is None


def test_a_query_with_variables_returns_only_the_formulas_its_pattern_matches(service):
    results = service.search(HybridQuery(latex="?a^2 + ?b^2 = ?c^2", size=10))
    assert ids(results) == ["2203.00004:0", "2203.00004:1"]  # E^2 = (pc)^2 + (mc^2)^2 has another shape
    bound = [{name: b.text for name, b in hit.formula_highlight.bindings.items()} for hit in results.hits]
    assert bound == [{"?a": "a", "?b": "b", "?c": "c"}, {"?a": "x", "?b": "y", "?c": "z"}]
    assert all(hit.formula_highlight.kind == "pattern" and hit.formula_highlight.nodes for hit in results.hits)
    assert results.total == 2 and not results.warnings
    inside = service.search(HybridQuery(latex="(?x)^2 + (?y ?z^2)^2", size=10))
    assert ids(inside) == ["2101.00001:1"]  # a sub-expression of E^2 = (pc)^2 + (mc^2)^2
    bound = {name: b.text for name, b in inside.hits[0].formula_highlight.bindings.items()}
    assert bound == {"?x": "pc", "?y": "m", "?z": "c"}
    # a repeated variable binds the same thing each time: E outside, c inside, so no match
    assert ids(service.search(HybridQuery(latex="?a^2 = (?x)^2 + (?y ?a^2)^2", size=10))) == []


def test_a_pattern_that_matches_nothing_says_so_and_keywords_still_answer(service):
    results = service.search(HybridQuery(latex=r"\frac{?a}{?a}", keywords="oscillator", size=10))
    assert {hit.matched for hit in results.hits} == {"text"}
    assert any("matches the pattern" in warning for warning in results.warnings)


def test_a_malformed_variable_is_an_error_that_says_where(service):
    from eqsearch.engine.model.patterns import QueryVariableError

    with pytest.raises(QueryVariableError, match="character 5"):
        service.search(HybridQuery(latex="x + ?1x"))


def test_hits_of_a_formula_without_variables_show_the_largest_shared_sub_expression(service):
    results = service.search(HybridQuery(latex="E = mc^2", keywords="relativity", size=4))
    first = results.hits[0]
    assert first.eq_id == "2101.00001:0" and first.formula_highlight.kind == "shared"
    assert len(first.formula_highlight.nodes) == 5  # E, =, m, c, 2: all of it
    assert not first.formula_highlight.bindings
