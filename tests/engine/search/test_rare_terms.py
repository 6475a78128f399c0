"""The structural first stage: which terms it keeps, the document frequencies read from a real node (cached, and
never failing a search), and a search that starts from the rare terms ranking its window exactly as one over all
terms does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import STRUCTURE_FIELD, IndexOptions
from eqsearch.engine.model.structure import formula_structure
from eqsearch.engine.search.plan import StructureList
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, FormulaRanking, get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.engine.search.structure_query import TermFrequencies, TermStatistics, rarest_terms, structure_body
from hashing_encoder import HashingEncoder


def test_the_first_stage_keeps_the_terms_under_the_share_then_enough_to_fill_the_window():
    terms = ["a", "b", "c", "d", "a", "e"]
    frequencies = TermFrequencies({"a": 0.5, "b": 0.01, "c": 0.04, "d": 0.2, "e": 0.0}, documents=1000)
    assert rarest_terms(terms, frequencies, max_share=0.05, min_matches=40, at_least=2) == ["b", "c"]
    # fewer than at_least pass: the rarest at_least, rarest first; "e" is in no document and never kept
    assert rarest_terms(terms, frequencies, max_share=0.02, min_matches=0, at_least=3) == ["b", "c", "d"]
    # b and c may match no more than 40 documents: d (200) joins them to fill a window of 200
    assert rarest_terms(terms, frequencies, max_share=0.05, min_matches=200, at_least=2) == ["b", "c", "d"]
    # nothing left out: None, the query keeps all its terms
    assert rarest_terms(terms, frequencies, max_share=0.9, min_matches=0, at_least=2) is None
    assert rarest_terms(terms, frequencies, max_share=0.05, min_matches=10_000, at_least=2) is None


def test_a_first_stage_body_restores_the_full_bm25_before_the_subexpression_rescore():
    structure = formula_structure(None, r"x^2 + y^2 = z^2")
    first = sorted(set(structure.tokens))[:3]
    staged = StructureList(40, rerank_window=300, rerank_weight=0.5, first_stage="rare-terms", first_stage_share=0.05)
    body = structure_body(structure, staged, [], first)
    matched = body["query"]["bool"]["must"][0]["bool"]["should"]
    assert sorted(
        next(iter(clause["term"][STRUCTURE_FIELD].values()))
        if isinstance(clause["term"][STRUCTURE_FIELD], dict)
        else clause["term"][STRUCTURE_FIELD]
        for clause in matched
    ) == sorted(first)
    rest, spans = body["rescore"]
    assert rest["window_size"] == spans["window_size"] == 300
    # the other terms' BM25 added to the first stage's: the full BM25 of the window, as a sum over the terms
    assert rest["query"]["score_mode"] == "total" and rest["query"]["query_weight"] == 1.0
    restored = rest["query"]["rescore_query"]["bool"]["should"]
    full = structure_body(structure, StructureList(40), [])["query"]["bool"]["must"][0]["bool"]["should"]
    assert sorted(map(str, matched + restored)) == sorted(map(str, full))
    assert spans["query"]["score_mode"] == "multiply"
    # every term in the first stage: nothing left to add
    everything = structure_body(structure, staged, [], structure.tokens)
    assert everything["rescore"]["query"]["score_mode"] == "multiply"
    # no window, no first stage: the full terms from the start
    plain = structure_body(structure, StructureList(40, first_stage="rare-terms", first_stage_share=0.05), [], first)
    assert plain["query"] == structure_body(structure, StructureList(40), [])["query"] and "rescore" not in plain


def test_a_first_stage_needs_a_rerank_window():
    with pytest.raises(ValueError, match="first stage"):
        FormulaRanking("x", "x", structure=1.0, first_stage_share=0.05)
    assert get_ranker(DEFAULT_RANKER).first_stage_share > 0


FORMULAS = [f"x^{{{n}}} + y_{{{n}}} = {n}" for n in range(30)] + [r"\frac{a}{b} = c", r"\int_0^1 f(t)\,dt"]


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture
def filled(es_client, index_name, converter):
    encoder = HashingEncoder()
    IndexAdmin(es_client, index_name).ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    actions = [
        {
            "_index": f"{index_name}-equations",
            "_id": f"p{i}:0",
            "_source": {
                "eq_id": f"p{i}:0",
                "paper_id": f"p{i}",
                "latex": latex,
                **structure_fields(converter.convert(latex).mathml, latex),
            },
        }
        for i, latex in enumerate(FORMULAS)
    ]
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0
    return index_name


@pytest.mark.es
def test_document_frequencies_come_from_the_index_once_and_a_failure_costs_only_the_first_stage(es_client, filled):
    stats = TermStatistics(es_client.termvectors, STRUCTURE_FIELD)
    alias = f"{filled}-equations"
    frequencies = stats.frequencies(alias, ["V:x", "V:a", "never-indexed"])
    assert frequencies is not None and frequencies.documents == 32
    fractions = frequencies.shares
    assert fractions["V:x"] == pytest.approx(30 / 32)
    assert fractions["V:a"] == pytest.approx(1 / 32)
    assert fractions["never-indexed"] == 0.0
    assert stats.requests == 1
    assert stats.frequencies(alias, ["V:a", "V:x"]).shares == {"V:a": fractions["V:a"], "V:x": fractions["V:x"]}
    assert stats.requests == 1  # all cached
    assert stats.frequencies(f"{filled}-no-such-index", ["V:x"]) is None


@pytest.mark.es
def test_starting_from_the_rare_terms_ranks_the_window_as_all_terms_do(es_client, filled, converter):
    staged = get_ranker(DEFAULT_RANKER)
    full = get_ranker("structure+embedding+rerank/all-terms")
    assert staged.first_stage_share and not full.first_stage_share
    query = HybridQuery(latex="x^{7} + y_{7} = 7", highlight=False)
    results = {}
    for ranking in (staged, full):
        service = SearchService(es_client, HashingEncoder(), converter, index_prefix=filled, ranking=ranking)
        formula = SimpleNamespace(structure=formula_structure(converter.convert(query.latex).mathml))
        if ranking is staged:  # a small index: the rare terms alone would not fill the window, so all are used
            assert service._rare_terms(formula, 300) is None
            assert service._rare_terms(formula, 3) is not None
        results[ranking.name] = [(hit.eq_id, round(hit.score, 5)) for hit in service.search(query).hits]
    assert results[staged.name] == results[full.name]
    assert results[staged.name][0][0] == "p7:0"


@pytest.mark.es
def test_the_window_gets_the_full_bm25_as_the_first_stage_plus_the_other_terms(es_client, filled, converter):
    structure = formula_structure(converter.convert("x^{7} + y_{7} = 7").mathml)
    stats = TermStatistics(es_client.termvectors, STRUCTURE_FIELD)
    frequencies = stats.frequencies(f"{filled}-equations", structure.tokens)
    first = rarest_terms(structure.tokens, frequencies, max_share=0.05, min_matches=1, at_least=1)
    assert first is not None and len(first) < len(set(structure.tokens))

    def scores(first_stage: list[str] | None) -> dict[str, float]:
        plan = StructureList(40, rerank_window=300, first_stage="rare-terms", first_stage_share=0.05)
        body = structure_body(structure, plan, [], first_stage)
        found = es_client.search(index=f"{filled}-equations", **body)["hits"]["hits"]
        return {hit["_id"]: hit["_score"] for hit in found}

    staged, full = scores(first), scores(None)
    assert "p7:0" in staged and len(staged) < len(full)  # only the equations holding a rare term
    assert staged == pytest.approx({eq_id: full[eq_id] for eq_id in staged}, rel=1e-6)
