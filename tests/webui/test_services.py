"""The web app's gateway to the engine (`webui/services.py`): resources made on first use and closed, searches,
equations and papers read through it from the real indexed corpus, engine failures translated into the pages' errors
(nothing indexed yet, a dead cluster, an unknown equation), and formula search degrading to keywords without a
model bundle."""

from __future__ import annotations

import uuid

import pytest

from .conftest import BEARER, CORPUS, make_app


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
