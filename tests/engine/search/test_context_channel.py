"""The context channel end to end on a real node with the real text encoder: documents carry context vectors, a
keyword query finds the equation whose surrounding words paraphrase it where BM25 finds nothing, a migration gives
the vectors to documents written without them, and an index of another text encoder turns the channel off."""

from __future__ import annotations

from typing import Any

import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import context_text, with_context_vectors
from eqsearch.engine.index.mappings import CONTEXT_VECTOR_FIELD, IndexOptions
from eqsearch.engine.model.text import load_text_encoder
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.engine.search.service import SearchService
from hashing_encoder import HashingEncoder
from search_plans import requests_for

CONTEXT_RANKER = "structure+embedding+rerank+context"

EQUATIONS = [
    (
        "p1:0",
        r"f(x) = \frac{1}{\sqrt{2\pi}} e^{-x^2/2}",
        "Densities",
        "the density of a standard normal random variable",
    ),
    ("p2:0", r"u_t = \kappa u_{xx}", "Conduction", "temperature in a rod evolves by heat conduction"),
    ("p3:0", r"a^2 + b^2 = c^2", "Triples", "right triangles with integer sides"),
    ("p4:0", r"x_{n+1} = x_n - f(x_n)/f'(x_n)", "Roots", ""),  # no words around it: no context vector
]


def _documents(mathml_of) -> list[dict[str, Any]]:
    return [
        {
            "eq_id": eq_id,
            "paper_id": eq_id.split(":")[0],
            "paper_key": eq_id.split(":")[0],
            "number": 0,
            "latex": latex,
            "mathml": mathml_of(latex),
            "section_title": section,
            "context": context,
        }
        for eq_id, latex, section, context in EQUATIONS
    ]


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


def test_documents_get_a_context_vector_of_their_section_and_context_only_when_they_have_words():
    encoder = load_text_encoder()
    documents = with_context_vectors(_documents(lambda latex: None), encoder)
    assert context_text(documents[0]) == "Densities the density of a standard normal random variable"
    assert [CONTEXT_VECTOR_FIELD in d for d in documents] == [True, True, True, True]  # p4 has its section title
    blank = with_context_vectors(
        [{"eq_id": "x", "section_title": "", "context": " ", CONTEXT_VECTOR_FIELD: [1.0]}], encoder
    )
    assert blank == [{"eq_id": "x", "section_title": "", "context": " "}]  # never another model's old vector
    assert documents[0][CONTEXT_VECTOR_FIELD] == pytest.approx(encoder.encode([context_text(documents[0])])[0].tolist())


def test_the_context_list_is_asked_for_only_with_keywords_and_a_context_weight():
    ranking = get_ranker(CONTEXT_RANKER)
    vector = load_text_encoder().encode(["bell curve"])[0]
    found = requests_for(HybridQuery(keywords="bell curve"), ranking, context_vector=vector, depth=50)
    assert list(found) == ["text", "paper_contexts", "context", "papers"]
    default = get_ranker(DEFAULT_RANKER)
    assert default.context == 0  # the default stays keyword BM25 only (docs/decisions/context-channel.md)
    assert found["context"]["query"]["knn"]["field"] == CONTEXT_VECTOR_FIELD


@pytest.mark.es
def test_a_paraphrase_finds_the_equation_by_its_context_where_bm25_finds_nothing(es_client, index_name, converter):
    text_encoder = load_text_encoder()
    encoder = HashingEncoder()
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(
        IndexOptions(
            dims=encoder.dim,
            similarity=encoder.similarity,
            context_dims=text_encoder.dim,
            text_encoder=text_encoder.identity,
        )
    )
    documents = with_context_vectors(_documents(lambda latex: converter.convert(latex).mathml), text_encoder)
    actions = [{"_index": f"{index_name}-equations", "_id": d["eq_id"], "_source": d} for d in documents]
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0

    plain = SearchService(es_client, encoder, converter, index_prefix=index_name)
    assert plain.search(HybridQuery(keywords="bell curve probability")).hits == []  # no word in common

    service = SearchService(es_client, encoder, converter, index_prefix=index_name, ranking=get_ranker(CONTEXT_RANKER))
    results = service.search(HybridQuery(keywords="bell curve probability", size=2))
    assert results.hits[0].eq_id == "p1:0"
    assert results.hits[0].channels == ("context",)
    heat = service.search(HybridQuery(keywords="thermal diffusion", size=1))
    assert heat.hits[0].eq_id == "p2:0"
    # hybrid: the formula side and the keyword side's context list agree on the Gaussian
    hybrid = service.search(HybridQuery(latex=r"e^{-x^2/2}", keywords="bell curve", size=1))
    assert hybrid.hits[0].eq_id == "p1:0" and "context" in hybrid.hits[0].channels


@pytest.mark.es
def test_a_migration_asked_to_fills_the_context_vectors_and_later_ones_keep_them(es_client, index_name):
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(dims=4, similarity="cosine"))
    actions = [
        {"_index": f"{index_name}-equations", "_id": d["eq_id"], "_source": d} for d in _documents(lambda latex: None)
    ]
    assert bulk_index(es_client, actions, refresh="wait_for").failed == 0
    assert (
        es_client.count(index=f"{index_name}-equations", query={"exists": {"field": CONTEXT_VECTOR_FIELD}})["count"]
        == 0
    )

    def filled() -> int:
        es_client.indices.refresh(index=f"{index_name}-equations")
        query = {"exists": {"field": CONTEXT_VECTOR_FIELD}}
        return es_client.count(index=f"{index_name}-equations", query=query)["count"]

    assert admin.migrate("equations").copied == len(EQUATIONS)
    assert filled() == 0  # an option: a plain migration adds none
    report = admin.migrate("equations", text_encoder=load_text_encoder())
    assert report.copied == len(EQUATIONS)
    assert filled() == len(EQUATIONS)
    mapping = es_client.indices.get_mapping(index=f"{index_name}-equations")
    meta = next(iter(mapping.values()))["mappings"]["_meta"]
    assert meta["text_encoder"] == load_text_encoder().identity
    admin.migrate("equations")  # the index holds them: a later migration keeps them
    assert filled() == len(EQUATIONS)


@pytest.mark.es
def test_an_index_of_another_text_encoder_turns_the_channel_off_with_a_warning(es_client, index_name, converter):
    encoder = HashingEncoder()
    IndexAdmin(es_client, index_name).ensure(
        IndexOptions(dims=encoder.dim, similarity=encoder.similarity, text_encoder="another-model:d256")
    )
    service = SearchService(es_client, encoder, converter, index_prefix=index_name, ranking=get_ranker(CONTEXT_RANKER))
    results = service.search(HybridQuery(keywords="bell curve"))
    assert any("context channel is off" in warning for warning in results.warnings)
