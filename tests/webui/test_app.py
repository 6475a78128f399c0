from __future__ import annotations

from dataclasses import replace

import pytest
from eqsearch.engine.config import EsConfig
from eqsearch.webui import create_app


@pytest.mark.es
def test_healthz_reports_the_real_cluster(es_config):
    client = create_app({"ES_CONFIG": es_config, "TESTING": True}).test_client()
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json()["status"] == "ok"
    assert response.get_json()["elasticsearch"].startswith("9.")


def test_healthz_says_when_elasticsearch_is_down():
    dead = replace(EsConfig(), url="http://127.0.0.1:1")
    client = create_app({"ES_CONFIG": dead, "TESTING": True}).test_client()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "not reachable" in response.get_json()["elasticsearch"]
