"""The search service with and without eqsearch's Elasticsearch plugin, on the configured real node and on a node of
its own started without the plugin (`bare_client`): it asks the cluster once whether every node has the plugin,
sends the plugin's rescorer when so and the plain requests when not, with the same page either way; a node that
refuses the rescorer turns the plugin off and the search still answers."""

from __future__ import annotations

import uuid

import pytest
from eqsearch.engine.es.client import connect
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.es.local_node import LocalNode
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import IndexOptions, alias_name
from eqsearch.engine.search.plugin import STRUCTURE_RESCORER, detect_plugin
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService
from hashing_encoder import HashingEncoder
from local_nodes import free_port, node_config

pytestmark = pytest.mark.es

FORMULAS = [
    "a^2 + b^2 = c^2",
    "x^2 + y^2 = z^2",
    "a^2 + b^2 = c^2 + d^2 + e^2",
    r"\frac{a}{b} = c",
    r"e^{i \pi} + 1 = 0",
    "a + b = c",
    r"\sum_{k=0}^{n} \binom{n}{k} = 2^n",
    r"\int_0^1 x^2 dx = \frac{1}{3}",
    r"(a + b)^2 = a^2 + 2ab + b^2",
    r"a^2 - b^2 = (a - b)(a + b)",
]
QUERIES = ["a^2 + b^2 = c^2", r"(x + y)^2 = x^2 + 2xy + y^2", r"\frac{x}{y} = z", r"\sum_{i=0}^{m} \binom{m}{i}"]


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture
def filled(es_client, index_name, converter) -> str:
    return _fill(es_client, index_name, converter)


@pytest.fixture(scope="module")
def bare_client():
    """A node of its own, started without eqsearch's plugin (its own distribution, the plugin turned off): what a
    hosted cluster, or a node of another build, looks like to the engine."""
    node = LocalNode(node_config("no-plugin", free_port(), plugin=False))
    try:
        node.start()
        client, _ = connect(EsConfig(url=node.url))
        yield client
    finally:
        node.stop()


def _fill(client, index_name: str, converter) -> str:
    encoder = HashingEncoder()
    IndexAdmin(client, index_name).ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    alias = alias_name(index_name, "equations")
    actions = []
    for i, latex in enumerate(FORMULAS):
        mathml = converter.convert(latex).mathml
        source = {"eq_id": f"p{i}:0", "paper_id": f"p{i}", "latex": latex, "mathml": mathml}
        source.update(structure_fields(mathml, latex))
        source["vector"] = [float(x) for x in encoder.encode([mathml])[0]]
        actions.append({"_index": alias, "_id": f"p{i}:0", "_source": source})
    assert bulk_index(client, actions, refresh="wait_for").failed == 0
    return index_name


def _page(service: SearchService, latex: str) -> list[tuple[str, float]]:
    results = service.search(HybridQuery(latex=latex, highlight=False))
    return [(hit.eq_id, hit.score) for hit in results.hits]


def test_the_service_uses_the_plugin_exactly_when_every_node_has_it_with_the_same_pages(es_client, filled, converter):
    encoder = HashingEncoder()
    detected = SearchService(es_client, encoder, converter, index_prefix=filled)
    plain = SearchService(es_client, encoder, converter, index_prefix=filled, plugin=False)
    on_cluster = detect_plugin(es_client).available
    assert detected.plugin.active is on_cluster and plain.plugin.active is False
    for latex in QUERIES:
        assert _page(detected, latex) == _page(plain, latex)
    sent = detected.requests(HybridQuery(latex=QUERIES[0]))
    structure_rescore = str(dict(sent)["structure"].get("rescore"))
    assert (STRUCTURE_RESCORER in structure_rescore) is on_cluster
    assert ("function_score" in structure_rescore) is not on_cluster
    plain_sent = plain.requests(HybridQuery(latex=QUERIES[0]))
    assert STRUCTURE_RESCORER not in str(plain_sent)


def test_a_node_without_the_plugin_gets_the_plain_requests_with_a_one_line_note(bare_client, converter):
    support = detect_plugin(bare_client)
    assert not support.available and "no eqsearch plugin" in support.note and "\n" not in support.note
    prefix = _fill(bare_client, f"eqsearch-test-{uuid.uuid4().hex[:12]}", converter)
    encoder = HashingEncoder()
    detected = SearchService(bare_client, encoder, converter, index_prefix=prefix)
    plain = SearchService(bare_client, encoder, converter, index_prefix=prefix, plugin=False)
    assert detected.plugin.active is False
    sent = str(detected.requests(HybridQuery(latex=QUERIES[0])))
    assert STRUCTURE_RESCORER not in sent and "eqsearch_" not in sent and "function_score" in sent
    for latex in QUERIES:
        assert _page(detected, latex) == _page(plain, latex) and _page(plain, latex)


def test_a_cluster_that_refuses_the_rescorer_gets_the_plain_requests_and_a_warning(bare_client, converter):
    """A service told the plugin is there (or that saw it on nodes since replaced) meets a node without it: the node
    refuses the request, the service turns the plugin off, answers with the plain requests and says so."""
    prefix = _fill(bare_client, f"eqsearch-test-{uuid.uuid4().hex[:12]}", converter)
    encoder = HashingEncoder()
    forced = SearchService(bare_client, encoder, converter, index_prefix=prefix, plugin=True)
    plain = SearchService(bare_client, encoder, converter, index_prefix=prefix, plugin=False)
    results = forced.search(HybridQuery(latex=QUERIES[0], highlight=False))
    assert forced.plugin.active is False
    assert any("refused the eqsearch plugin" in warning for warning in results.warnings)
    assert [(h.eq_id, h.score) for h in results.hits] == _page(plain, QUERIES[0])
    assert _page(forced, QUERIES[1]) == _page(plain, QUERIES[1])  # and stays off
