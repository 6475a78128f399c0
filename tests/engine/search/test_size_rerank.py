"""The structural rerank weighed by the larger formula, on spans with renamed variables: the body it sends, the
factor a real node computes for a candidate of the query's size, for the same formula in other letters and for a
longer one holding the query, an index made before (spans with the letters kept, no sizes: a warning, and the
query's size instead), and a query too long for one request."""

from __future__ import annotations

import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import SIZE_FIELD, SPANS_FIELD, IndexOptions, alias_name, index_definition
from eqsearch.engine.model.layout import parse_layout
from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, formula_structure, structure_of_layout
from eqsearch.engine.search.plan import StructureList
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.engine.search.service import SearchError, SearchService
from eqsearch.engine.search.structure_query import structure_body
from hashing_encoder import HashingEncoder

QUERY = "a^2 + b^2 = c^2"  # 8 symbols; one baseline of 5, so the whole query is one shared sub-expression
LONGER = "a^2 + b^2 = c^2 + d^2 + e^2"  # 14 symbols, holding the whole query
OTHERS = ["x^2 + y^2 = z^2", r"\frac{a}{b} = c", "e^{i \\pi} + 1 = 0", "a + b = c"]


def test_the_sizes_rescore_scales_the_subexpression_match_by_functions_of_the_candidate_size():
    structure = formula_structure(None, QUERY)
    plain = structure_body(structure, StructureList(40, rerank_window=300, rerank_weight=0.5), [])
    sized = structure_body(structure, StructureList(40, rerank_window=300, rerank_weight=0.5, candidate_sizes=True), [])
    keep, *matches = plain["rescore"]["query"]["rescore_query"]["bool"]["should"]
    kept, scaled = sized["rescore"]["query"]["rescore_query"]["bool"]["should"]
    assert kept == keep and scaled["function_score"]["query"] == {"bool": {"should": matches}}
    up_to_query, beyond = scaled["function_score"]["functions"]
    assert up_to_query == {"filter": {"range": {SIZE_FIELD: {"lte": 8}}}, "weight": 1.0}
    assert beyond["field_value_factor"]["modifier"] == "reciprocal"  # 1 / (size / 8)
    assert sized["query"] == plain["query"] and sized["rescore"]["query"]["score_mode"] == "multiply"


def test_an_equation_document_records_its_size():
    assert structure_fields(None, QUERY)[SIZE_FIELD] == formula_structure(None, QUERY).size == 8


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


def _fill(es_client, index: str, converter, *, old: bool = False) -> None:
    actions = []
    for i, latex in enumerate([QUERY, LONGER, *OTHERS]):
        fields = structure_fields(converter.convert(latex).mathml, latex)
        if old:  # as an older eqsearch wrote them: spans with the letters kept, no size
            layout = parse_layout(converter.convert(latex).mathml)
            fields[SPANS_FIELD] = sorted(structure_of_layout(layout, span_kinds=("e", "g")).spans)
            fields.pop(SIZE_FIELD)
        source = {"eq_id": f"p{i}:0", "paper_id": f"p{i}", "latex": latex, **fields}
        actions.append({"_index": index, "_id": f"p{i}:0", "_source": source})
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0


@pytest.mark.es
def test_a_longer_formula_holding_the_query_gets_the_share_of_its_own_size(es_client, index_name, converter):
    encoder = HashingEncoder()
    IndexAdmin(es_client, index_name).ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    alias = alias_name(index_name, "equations")
    _fill(es_client, alias, converter)
    unsized = {"eq_id": "old:0", "paper_id": "old", "latex": LONGER, **structure_fields(None, LONGER)}
    del unsized[SIZE_FIELD]  # a document written before sizes, in an index that has the field
    es_client.index(index=alias, id="old:0", document=unsized, refresh="wait_for")
    structure = structure_of_layout(parse_layout(converter.convert(QUERY).mathml), span_kinds=QUERY_SPAN_KINDS)
    longer = formula_structure(converter.convert(LONGER).mathml).size
    assert (structure.size, longer) == (8, 14)

    def scores(weight: float) -> dict[str, float]:
        plan = StructureList(10, rerank_window=300, rerank_weight=weight, candidate_sizes=True)
        body = structure_body(structure, plan, [])
        hits = es_client.search(index=alias, **body)["hits"]["hits"]
        return {hit["_id"]: hit["_score"] for hit in hits}

    bm25, reranked = scores(0.0), scores(0.5)
    # exact and generalised sub-expressions both cover the whole query: 1 + 0.5 x (8 + 8) / max(8, c)
    assert reranked["p0:0"] / bm25["p0:0"] == pytest.approx(1 + 0.5 * 16 / 8, rel=1e-5)
    assert reranked["p1:0"] / bm25["p1:0"] == pytest.approx(1 + 0.5 * 16 / 14, rel=1e-5)
    assert reranked["old:0"] / bm25["old:0"] == pytest.approx(1 + 0.5 * 16 / 8, rel=1e-5)  # the query's size
    # x^2 + y^2 = z^2 is the query in other letters: the whole formula is shared once the variables are renamed
    assert reranked["p2:0"] / bm25["p2:0"] == pytest.approx(1 + 0.5 * 16 / 8, rel=1e-5)


@pytest.mark.es
def test_an_index_without_sizes_ranks_by_the_query_size_and_says_so(es_client, index_name, converter):
    encoder = HashingEncoder()
    options = IndexOptions(dims=encoder.dim, similarity=encoder.similarity)
    old = index_definition("equations", options)
    old["mappings"]["properties"].pop(SIZE_FIELD)
    old["mappings"]["_meta"]["mapping_version"] = 4
    alias = alias_name(index_name, "equations")
    es_client.indices.create(index=f"{alias}-v1", aliases={alias: {}}, **old)
    _fill(es_client, alias, converter, old=True)
    query = HybridQuery(latex=QUERY, highlight=False)

    def search(ranker: str):
        ranking = get_ranker(ranker)
        return SearchService(es_client, encoder, converter, index_prefix=index_name, ranking=ranking).search(query)

    fallback, previous = search(DEFAULT_RANKER), search("structure+embedding+rerank/query-size")
    assert [h.eq_id for h in fallback.hits] == [h.eq_id for h in previous.hits]
    assert [h.score for h in fallback.hits] == pytest.approx([h.score for h in previous.hits])
    assert fallback.hits[0].eq_id == "p0:0"  # the query itself, its spans matched by their letters
    for results in (fallback, previous):
        assert any("eqsearch index migrate equations" in w and "version 4" in w for w in results.warnings)


@pytest.mark.es
def test_a_very_long_formula_is_searched_by_its_largest_parts_or_refused_with_a_reason(
    es_client, index_name, converter
):
    encoder = HashingEncoder()
    IndexAdmin(es_client, index_name).ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    alias = alias_name(index_name, "equations")
    _fill(es_client, alias, converter)

    def sums(n: int) -> str:
        return "+".join(rf"\frac{{x_{{{i}}}^{{2}}}}{{y_{{{i}}}+1}}" for i in range(n))

    long = sums(700)  # 1,400 baseline symbols: ~20,000 spans, more clauses than a request may hold
    document = {"eq_id": "long:0", "paper_id": "long", "latex": long, **structure_fields(None, long)}
    es_client.index(index=alias, id="long:0", document=document, refresh="wait_for")
    service = SearchService(es_client, encoder, converter, index_prefix=index_name)
    found = service.search(HybridQuery(latex=long, highlight=False))
    assert found.hits[0].eq_id == "long:0"  # its candidates were reranked by its largest sub-expressions
    assert "the limit is 20,000" in (found.latex_error or "")  # past KaTeX's length: read from the LaTeX, and said
    # 12,000 symbols: the structural terms alone are more clauses than the node takes; the error says so
    with pytest.raises(SearchError, match="too long to search") as refused:
        service.search(HybridQuery(latex=sums(6000), highlight=False))
    assert "search a part of the formula" in str(refused.value)
