"""The structural list started from kNN on structure-bag vectors (`FormulaRanking.structure_knn`): the request it
sends, its union with the rare terms, and on a real node the window ranked by the exact BM25 and rerank, and the
fallback to the rare terms where the index has no vectors of the same bundle."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

import numpy as np
import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import (
    STRUCTURE_FIELD,
    STRUCTURE_VECTOR_FIELD,
    IndexOptions,
    structure_vector_mapping,
)
from eqsearch.engine.model.patterns import read_query_variables
from eqsearch.engine.model.structure import FormulaStructure, formula_structure
from eqsearch.engine.model.structure_bag import stored_structure, structure_terms
from eqsearch.engine.search.query import HybridQuery, ranking_searches, structure_body
from eqsearch.engine.search.rankers import DEFAULT_RANKER, FormulaRanking, get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.engine.search.structure_query import KNN_UNION_BOOST
from hashing_encoder import HashingEncoder

KNN_RANKING = dataclasses.replace(get_ranker(DEFAULT_RANKER), structure_knn=100)


class TermHashEncoder:
    """A deterministic structure encoder for tests: the formula's terms hashed into 16 signed slots, unit length
    (the same interface as `StructureBagEncoder`: ``identity``, ``dim``, ``encode_structures``)."""

    dim = 16

    def __init__(self, identity: str = "structure-hash:test") -> None:
        self.identity = identity

    def encode_structures(self, structures: Sequence[FormulaStructure]) -> np.ndarray:
        out = np.zeros((len(structures), self.dim), dtype=np.float32)
        for row, structure in enumerate(structures):
            for term, count in structure_terms(structure).items():
                digest = hashlib.blake2b(term.encode(), digest_size=2).digest()
                out[row, digest[0] % self.dim] += (1.0 if digest[1] & 1 else -1.0) * count
            norm = float(np.linalg.norm(out[row]))
            out[row] /= norm if norm else 1.0
        return out


def test_a_knn_first_stage_body_gives_the_window_its_full_bm25_then_the_rerank():
    structure = formula_structure(None, r"x^2 + y^2 = z^2")
    vector = np.linspace(-1, 1, 16, dtype=np.float32)
    body = structure_body(
        structure,
        40,
        [{"term": {"inline": False}}],
        rerank_window=300,
        rerank_weight=0.5,
        first_stage=None,
        structure_vector=vector,
        knn_window=500,
        knn_candidates=1000,
    )
    knn = body["query"]["knn"]
    assert knn["field"] == STRUCTURE_VECTOR_FIELD and knn["k"] == 500 and knn["num_candidates"] == 1000
    assert knn["query_vector"] == pytest.approx(vector.tolist())
    assert knn["filter"] == {"bool": {"filter": [{"term": {"inline": False}}]}}  # a pre-filter, as the embedding's
    bm25, spans = body["rescore"]
    # the cosine only chose the window: the window's score is its BM25 over every term
    assert bm25["window_size"] == 500 and bm25["query"]["query_weight"] == 0.0
    assert bm25["query"]["rescore_query"] == structure_body(structure, 40, [])["query"]["bool"]["must"][0]
    assert spans["window_size"] == 300 and spans["query"]["score_mode"] == "multiply"
    # a list deeper than the kNN window: the window reaches as deep as the list
    deep = structure_body(structure, 800, [], rerank_window=800, structure_vector=vector, knn_window=500)
    assert deep["query"]["knn"]["k"] == 800 and deep["rescore"]["window_size"] == 800


def test_the_union_with_the_rare_terms_puts_the_whole_knn_window_first():
    structure = formula_structure(None, r"x^2 + y^2 = z^2")
    rare = sorted(set(structure.tokens))[:3]
    body = structure_body(
        structure, 40, [], rerank_window=300, rerank_weight=0.5, first_stage=rare, structure_vector=[0.5] * 16,
        knn_window=200,
    )  # fmt: skip
    knn, terms = body["query"]["bool"]["should"]
    assert knn["knn"]["boost"] == KNN_UNION_BOOST and knn["knn"]["k"] == 200
    staged = structure_body(structure, 40, [], rerank_window=300, first_stage=rare)["query"]["bool"]["must"][0]
    assert terms == staged  # the rare terms' match, as the default's first stage sends it
    assert body["rescore"][0]["window_size"] == 200 + 300  # the kNN window and as many of the rare terms' matches


def test_without_a_knn_first_stage_the_request_is_unchanged():
    structure = formula_structure(None, r"\frac{a}{b} = c")
    query = HybridQuery(latex=r"\frac{a}{b} = c")
    default = get_ranker(DEFAULT_RANKER)
    assert default.structure_knn == 0
    common = {"window": 100, "num_candidates_factor": 6, "structure": structure, "ranking": default}
    assert ranking_searches(query, None, **common, structure_vector=np.ones(16, dtype=np.float32)) == (
        ranking_searches(query, None, **common)
    )
    with pytest.raises(ValueError, match="kNN first stage"):
        FormulaRanking("x", "x", structure=1.0, structure_knn=100)


def test_a_stored_document_gives_the_terms_its_formula_gave():
    structure = formula_structure(None, r"\sum_{i=1}^n i^2 = \frac{n(n+1)(2n+1)}{6}")
    fields = structure_fields(None, r"\sum_{i=1}^n i^2 = \frac{n(n+1)(2n+1)}{6}")
    stored = stored_structure(fields[STRUCTURE_FIELD], fields["structure_spans"])
    assert structure_terms(stored) == structure_terms(structure)


FORMULAS = [f"x^{{{n}}} + y_{{{n}}} = {n}" for n in range(30)] + [r"\frac{a}{b} = c", r"\int_0^1 f(t)\,dt"]


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture
def filled(es_client, index_name, converter):
    """The formulas with their structural fields and, in a field of their own, their `TermHashEncoder` vectors; the
    index's ``_meta`` names that encoder."""
    encoder, bag = HashingEncoder(), TermHashEncoder()
    IndexAdmin(es_client, index_name).ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    alias = f"{index_name}-equations"
    meta = next(iter(es_client.indices.get_mapping(index=alias).values()))["mappings"]["_meta"]
    es_client.indices.put_mapping(
        index=alias,
        properties={STRUCTURE_VECTOR_FIELD: structure_vector_mapping(bag.dim)},
        meta={**meta, "structure_encoder": bag.identity},
    )
    actions = []
    for i, latex in enumerate(FORMULAS):
        mathml = converter.convert(latex).mathml
        vector = bag.encode_structures([formula_structure(mathml, latex)])[0]
        source = {"eq_id": f"p{i}:0", "paper_id": f"p{i}", "latex": latex, **structure_fields(mathml, latex)}
        actions.append(
            {"_index": alias, "_id": f"p{i}:0", "_source": {**source, STRUCTURE_VECTOR_FIELD: vector.tolist()}}
        )
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0
    return index_name


def _ranked(service: SearchService, latex: str) -> list[tuple[str, float]]:
    return [(hit.eq_id, round(hit.score, 5)) for hit in service.search(HybridQuery(latex=latex, highlight=False)).hits]


@pytest.mark.es
def test_a_window_holding_the_whole_index_ranks_as_the_rare_terms_do(es_client, filled, converter):
    knn = SearchService(
        es_client, HashingEncoder(), converter, index_prefix=filled, ranking=KNN_RANKING,
        structure_encoder=TermHashEncoder(),
    )  # fmt: skip
    default = SearchService(es_client, HashingEncoder(), converter, index_prefix=filled)
    latex = "x^{7} + y_{7} = 7"
    formula = knn.formulas.get(read_query_variables(latex))
    searches = dict(knn._searches(HybridQuery(latex=latex), formula, 100, []))
    assert "knn" in searches["structure"]["query"]  # the kNN first stage was sent
    ranked = _ranked(knn, latex)
    assert ranked == _ranked(default, latex) and ranked[0][0] == "p7:0"


@pytest.mark.es
def test_an_index_of_another_structure_encoder_falls_back_to_the_rare_terms(es_client, filled, converter):
    other = SearchService(
        es_client, HashingEncoder(), converter, index_prefix=filled, ranking=KNN_RANKING,
        structure_encoder=TermHashEncoder("structure-hash:another"),
    )  # fmt: skip
    default = SearchService(es_client, HashingEncoder(), converter, index_prefix=filled)
    latex = r"\frac{a}{b} = c"
    query = HybridQuery(latex=latex)
    formula = other.formulas.get(read_query_variables(latex))
    assert formula.structure_vector is not None  # the query has one, but the index's vectors are another's
    sent = dict(other._searches(query, formula, 100, []))["structure"]
    expected = dict(default._searches(query, default.formulas.get(read_query_variables(latex)), 100, []))["structure"]
    assert sent == expected
    assert _ranked(other, latex) == _ranked(default, latex)


@pytest.mark.es
def test_the_union_window_gets_the_full_bm25_of_every_term(es_client, filled, converter):
    structure = formula_structure(converter.convert("x^{7} + y_{7} = 7").mathml)
    rare = sorted(set(structure.tokens))[:2]
    far = formula_structure(converter.convert(r"\int_0^1 f(t)\,dt").mathml)
    vector = TermHashEncoder().encode_structures([far])[0]
    index = f"{filled}-equations"

    def scores(body: dict) -> dict[str, float]:
        return {hit["_id"]: hit["_score"] for hit in es_client.search(index=index, **body)["hits"]["hits"]}

    union = structure_body(
        structure, 3, [], rerank_window=5, rerank_weight=0.0, first_stage=rare, structure_vector=vector, knn_window=3
    )
    full = scores(structure_body(structure, 40, []))
    found = scores(union)
    knn_only = scores(
        structure_body(structure, 3, [], rerank_window=5, rerank_weight=0.0, structure_vector=vector, knn_window=3)
    )
    assert "p7:0" in found and "p7:0" not in knn_only  # found by the rare terms alone
    assert found == pytest.approx({eq_id: full.get(eq_id, 0.0) for eq_id in found}, rel=1e-6)
