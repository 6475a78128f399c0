"""The structural list started from kNN on structure sketches: the body it sends, that a real node then ranks the
window exactly as BM25 over all terms does, and that an index without sketches falls back to the rare terms."""

from __future__ import annotations

import dataclasses

import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import SKETCH_FIELD, SKETCH_SINCE, IndexOptions
from eqsearch.engine.model.sketch import SKETCH_VERSION, query_sketch
from eqsearch.engine.model.structure import formula_structure
from eqsearch.engine.search.query import HybridQuery, num_candidates, structure_body
from eqsearch.engine.search.rankers import FormulaRanking, get_ranker
from eqsearch.engine.search.service import SearchService
from hashing_encoder import HashingEncoder

FORMULAS = [f"x^{{{n}}} + y_{{{n}}} = {n}" for n in range(30)] + [r"\frac{a}{b} = c", r"\int_0^1 f(t)\,dt"]


def test_the_sketch_body_is_knn_on_sketches_then_bm25_over_every_term_then_the_subexpressions():
    structure = formula_structure(None, "x^2 + y^2")
    sketch = query_sketch(structure.tokens)
    filters = [{"term": {"paper_id": "p"}}]
    body = structure_body(
        structure, 40, filters, rerank_window=100, rerank_weight=0.5, sketch=sketch, first_stage=["V:x"]
    )
    knn = body["query"]["knn"]
    assert knn["field"] == SKETCH_FIELD and knn["query_vector"] == sketch
    assert knn["k"] == 100 and knn["num_candidates"] == num_candidates(100, 3)
    assert knn["filter"] == {"bool": {"filter": filters}}  # a pre-filter: the window holds only what may be shown
    bm25, subexpressions = body["rescore"]
    everything = structure_body(structure, 40, filters)["query"]["bool"]["must"][0]  # all terms, not the first stage
    assert bm25["query"] == {
        "rescore_query": everything,
        "query_weight": 0.0,  # the cosine only chose the window
        "rescore_query_weight": 1.0,
        "score_mode": "total",
    }
    assert bm25["window_size"] == subexpressions["window_size"] == 100
    assert subexpressions["query"]["score_mode"] == "multiply"
    assert body["size"] == 40
    assert "knn" not in str(structure_body(structure, 40, filters, sketch=sketch)["query"])  # no window, no sketch


def test_a_sketch_first_stage_needs_a_rerank_window():
    with pytest.raises(ValueError, match="sketch first stage"):
        FormulaRanking("x", "x", structure=1.0, sketch_first_stage=True)
    assert get_ranker("structure+embedding+rerank/sketch").sketch_first_stage


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture
def filled(es_client, index_name, converter):
    encoder = HashingEncoder()
    IndexAdmin(es_client, index_name).ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    actions = []
    for i, latex in enumerate(FORMULAS):
        fields = structure_fields(converter.convert(latex).mathml, latex)
        assert SKETCH_FIELD in fields
        source = {"eq_id": f"p{i}:0", "paper_id": f"p{i}", "latex": latex, **fields}
        actions.append({"_index": f"{index_name}-equations", "_id": f"p{i}:0", "_source": source})
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0
    return index_name


@pytest.mark.es
def test_a_window_as_large_as_the_index_ranks_as_bm25_over_all_terms(es_client, filled, converter):
    all_terms = get_ranker("structure+rerank")  # the structural list alone, every term from the start
    sketched = dataclasses.replace(all_terms, name="sketched", rerank_window=100, sketch_first_stage=True)
    for latex, matching in (("x^{7} + y_{7} = 7", len(FORMULAS)), (r"e^{i\pi}", 1)):
        ranked = {}
        for ranking in (all_terms, sketched):
            service = SearchService(es_client, HashingEncoder(), converter, index_prefix=filled, ranking=ranking)
            hits = service.search(HybridQuery(latex=latex, size=40, highlight=False)).hits
            ranked[ranking.name] = [(hit.eq_id, round(hit.score, 4)) for hit in hits]
            structure = formula_structure(converter.convert(latex).mathml)
            assert (service._query_sketch(structure) is not None) == (ranking is sketched)
        # the same BM25 x sub-expression scores in the same order; the window's equations that share no term with
        # the query (all but one for e^{i pi}, though kNN returns all 32) are no match
        assert ranked["sketched"] == ranked[all_terms.name]
        assert len(ranked["sketched"]) == matching
    assert ranked["sketched"][0][1] > 0


@pytest.mark.parametrize("older", [{"mapping_version": SKETCH_SINCE - 1}, {"sketch_version": SKETCH_VERSION + 1}])
@pytest.mark.es
def test_an_index_without_sketches_like_ours_starts_from_the_rare_terms(es_client, filled, converter, older):
    index = IndexAdmin(es_client, filled).current("equations")
    meta = es_client.indices.get_mapping(index=index)[index]["mappings"]["_meta"]
    ranking = get_ranker("structure+embedding+rerank/sketch")
    structure = formula_structure(converter.convert("x^{7} + y_{7} = 7").mathml)
    assert SearchService(es_client, HashingEncoder(), converter, index_prefix=filled, ranking=ranking)._query_sketch(
        structure
    )
    es_client.indices.put_mapping(index=index, meta={**meta, **older})  # an older eqsearch, or other sketches
    service = SearchService(es_client, HashingEncoder(), converter, index_prefix=filled, ranking=ranking)
    assert service._query_sketch(structure) is None
    hits = service.search(HybridQuery(latex="x^{7} + y_{7} = 7", highlight=False)).hits
    assert hits[0].eq_id == "p7:0"
