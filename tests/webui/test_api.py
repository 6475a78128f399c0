"""The JSON API: LaTeX rendered or a message, checked parameters, searches by POST and GET alike, undeclared methods,
job paths checked before anything runs, a malformed query variable. (The OpenAPI document: test_openapi.py.)"""

from __future__ import annotations

import pytest

from .conftest import BEARER, dead_app


def test_bad_parameters_are_400_with_the_reason():
    client = dead_app().test_client()
    response = client.get("/api/search?q=x&w=3")
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_request"
    assert "'w'" in response.get_json()["error"]["message"]
    assert client.get("/?q=x&from=2020&to=2010").status_code == 400
    assert client.get("/api/nothing-here").get_json()["error"]["code"] == "not_found"


def test_render_gives_mathml_or_a_message():
    client = dead_app().test_client()
    good = client.get("/api/render", query_string={"latex": r"\frac{a}{b}"}).get_json()
    assert good["ok"] and "<mfrac>" in good["mathml"]
    bad = client.post("/api/render", json={"latex": r"\frac{a"}).get_json()
    assert bad["ok"] is False and "offset" in bad["message"]
    hostile = client.get("/api/render", query_string={"latex": r"\text{<script>alert(1)</script>}"}).get_json()
    assert "<script" not in hostile["mathml"] and "&lt;script&gt;" in hostile["mathml"]


def test_search_by_post_with_a_json_body_is_checked_like_the_query_string():
    client = dead_app().test_client()
    unknown = client.post("/api/search", json={"latex": "x^2", "colour": "red"})
    assert unknown.status_code == 400 and "unknown parameter 'colour'" in unknown.get_json()["error"]["message"]
    not_object = client.post("/api/search", json=["x^2"])
    assert not_object.status_code == 400 and "JSON object" in not_object.get_json()["error"]["message"]
    nested = client.post("/api/search", json={"latex": {"a": 1}})
    assert nested.status_code == 400 and "'latex' must be a string" in nested.get_json()["error"]["message"]
    too_long = client.post("/api/search", json={"latex": "x+" * 2500})
    assert too_long.status_code == 400 and "the limit is 4,000" in too_long.get_json()["error"]["message"]
    too_large = client.post("/api/search", json={"latex": "x" * 70_000})
    assert too_large.status_code == 413 and too_large.get_json()["error"]["code"] == "request_entity_too_large"


@pytest.mark.parametrize("method", ["TRACE", "PUT", "DELETE", "PATCH"])
def test_an_undeclared_method_is_a_405_with_allow(method):
    response = dead_app().test_client().open("/api/search", method=method)
    assert response.status_code == 405 and response.get_json()["error"]["code"] == "method_not_allowed"
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS", "POST"}


def test_render_needs_its_parameter():
    client = dead_app().test_client()  # refused before KaTeX: no converter needed
    missing = client.get("/api/render")
    assert missing.status_code == 400 and missing.get_json()["error"]["code"] == "invalid_request"
    assert "?latex=" in missing.get_json()["error"]["message"]
    no_body = client.post("/api/render")
    assert no_body.status_code == 400 and "JSON object" in no_body.get_json()["error"]["message"]
    assert client.get("/api/render", query_string={"latex": " "}).get_json()["status"] == "empty"


def test_an_api_job_path_is_checked_before_anything_runs(tmp_path):
    client = dead_app(INGEST_ROOT=str(tmp_path)).test_client()

    def start(body):
        response = client.post("/api/jobs", json=body, headers=BEARER)
        return response.status_code, response.get_json()["error"]["code"]

    assert start({"path": "relative/path"}) == (400, "invalid_request")
    assert start({"path": " /leading/space"}) == (400, "invalid_request")  # the API takes the path as it is
    assert start({"path": "/a\x00b"}) == (400, "invalid_request")
    assert start({"path": str(tmp_path), "restart": "yes"}) == (400, "invalid_request")
    assert start({"path": "/etc"}) == (403, "path_forbidden")
    assert start({"path": str(tmp_path / "missing")}) == (422, "path_not_found")
    assert start({"path": str(tmp_path / ("x" * 5000))}) == (422, "path_not_found")  # too long for a file name


def test_a_malformed_query_variable_is_a_400_saying_where():
    client = dead_app().test_client()  # refused before any search: no backend needed
    response = client.get("/api/search", query_string={"latex": "?a^2 + ?1b"})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["code"] == "invalid_request" and "'?1b' at character 8" in error["message"]
    page = client.get("/", query_string={"latex": r"\text{?a}"})
    assert page.status_code == 400
    assert b'class="notice error"' in page.data and b"inside text" in page.data
    document = client.get("/api/openapi.json").get_json()
    assert "?a^2 + ?b^2 = ?c^2" in document["paths"]["/api/search"]["get"]["parameters"][0]["description"]
    assert "bindings" in document["components"]["schemas"]["FormulaHighlight"]["properties"]


@pytest.mark.es
def test_post_and_get_searches_answer_alike(client):
    params = {"latex": r"\sum_{i=1}^n x_i^2", "q": "squares", "cat": "math.CA"}
    got = client.get("/api/search", query_string=params).get_json()
    posted = client.post("/api/search", json={**params, "cat": ["math.CA"]}).get_json()
    assert [h["eq_id"] for h in posted["hits"]] == [h["eq_id"] for h in got["hits"]] and got["hits"]
