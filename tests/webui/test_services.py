"""The web app's gateway to the engine (`webui/services.py`): resources made on first use and closed, searches,
equations and papers read through it from the real indexed corpus, engine failures translated into the pages' errors
(nothing indexed yet, a dead cluster, an unknown equation), and formula search degrading to keywords without a
model bundle."""

from __future__ import annotations

import uuid

import pytest
from eqsearch.engine.search.query import HybridQuery
from eqsearch.webui.services import (
    MAX_RENDER_CHARS,
    BackendUnavailableError,
    InvalidRequestError,
    WebServices,
)

from .conftest import BEARER, CORPUS, DEAD, dead_app, make_app


@pytest.mark.es
def test_without_a_model_bundle_formulas_degrade_to_keywords(es_config, indexed_app, tmp_path):
    # The same indices as the other tests, served by an app whose model bundle is missing.
    prefix = indexed_app.extensions["eqsearch.services"].prefix
    app = make_app(es_config, prefix, MODEL_BUNDLE=str(tmp_path / "no-bundle"), ENCODER=None)
    try:
        client = app.test_client()
        body = client.get("/api/search", query_string={"latex": "E = mc^2", "q": "Cauchy"}).get_json()
        assert body["warnings"][0].startswith("Formula search is unavailable")
        assert {h["paper_id"] for h in body["hits"]} == {"2002.00002"}
        assert {h["matched"] for h in body["hits"]} == {"text"}
        refused = client.post("/api/jobs", json={"path": str(CORPUS / "latex")}, headers=BEARER)
        assert refused.status_code == 400 and "encoder" in refused.get_json()["error"]["message"]
    finally:
        app.extensions["eqsearch.services"].close()


@pytest.mark.es
def test_an_empty_deployment_says_nothing_is_indexed(es_config):
    app = make_app(es_config, f"eqsearch-test-web-{uuid.uuid4().hex[:8]}")
    page = app.test_client().get("/?q=wave")
    assert page.status_code == 503 and b"Nothing is indexed yet" in page.data
    app.extensions["eqsearch.services"].close()


def test_resources_are_made_on_first_use_and_a_dead_cluster_is_a_backend_error():
    app = dead_app()
    services = app.extensions["eqsearch.services"]
    assert isinstance(services, WebServices) and services.prefix == DEAD.index_prefix
    assert services._client is None and services._converter is None  # nothing opened by building the app
    with pytest.raises(BackendUnavailableError, match="not reachable"):
        _ = services.client
    for read in (lambda: services.equation("2002.00002:2"), lambda: services.search(HybridQuery(keywords="x"))):
        with pytest.raises(BackendUnavailableError):
            read()
    services.close()  # nothing to close: no error


def test_previews_convert_latex_and_refuse_only_what_is_too_long():
    services = dead_app().extensions["eqsearch.services"]
    try:
        good = services.to_mathml(r"\frac{a}{b}")
        assert good.status == "ok" and "<mfrac>" in good.mathml
        bad = services.to_mathml(r"\frac{a")
        assert (
            bad.status == "failed" and bad.mathml is None and "offset" in bad.message
        )  # a failed result, not an exception
        with pytest.raises(InvalidRequestError, match="previews take up to 4,000"):
            services.to_mathml("x" * (MAX_RENDER_CHARS + 1))
        services.close()
        assert services.to_mathml("x^2").status == "ok"  # the workers start again on demand
    finally:
        services.close()


@pytest.mark.es
def test_searches_equations_and_papers_are_read_through_the_services(indexed_app):
    services = indexed_app.extensions["eqsearch.services"]
    results = services.search(HybridQuery(latex="E = mc^2"))
    assert results.hits[0].eq_id == "2002.00002:2" and not results.warnings
    equation = services.equation("2002.00002:2")
    assert equation is not None and "mc^2" in equation["latex"] and "embedding" not in equation
    assert services.equation("2002.00002:99") is None
    paper = services.paper("2003.00003")
    assert paper is not None and paper["paper_id"] == "2003.00003" and paper["sections"]
    assert services.paper("0000.00000") is None
    similar = services.similar("2002.00002:2", size=3)
    assert 0 < len(similar.hits) <= 3 and "2002.00002:2" not in {hit.eq_id for hit in similar.hits}
    assert services.similar("2002.00002:99").hits == []  # unknown: no neighbours, no error
    with pytest.raises(InvalidRequestError, match="'\\?1b' at character 8"):
        services.search(HybridQuery(latex="?a^2 + ?1b"))  # a malformed query variable is the request's fault
