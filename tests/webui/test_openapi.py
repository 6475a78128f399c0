"""The API's OpenAPI document (`webui/openapi.py`): served at `/api/openapi.json`, listing the API's paths, and
describing the search's parameters and body as `webui/query.py` reads them. (The server held to the document by
schemathesis: test_openapi_contract.py; the response bodies: test_openapi_schemas.py.)"""

from __future__ import annotations

from eqsearch.engine.search.query import FUSIONS

from .conftest import dead_app


def test_the_document_describes_the_search_parameters_as_they_are_read():
    from eqsearch.webui.openapi import openapi_document
    from eqsearch.webui.query import BODY_TYPES

    document = openapi_document("http://localhost")
    get = {p["name"]: p["schema"] for p in document["paths"]["/api/search"]["get"]["parameters"]}
    body = document["paths"]["/api/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(get) == set(BODY_TYPES) == set(body["properties"])
    for name, kind in BODY_TYPES.items():
        assert (get[name]["items"] if name == "cat" else get[name])["type"] == kind, name
    assert get["fusion"]["enum"] == list(FUSIONS)
    assert body["additionalProperties"] is False and [b["required"] for b in body["anyOf"]] == [["latex"], ["q"]]


def test_openapi_document_lists_the_api():
    document = dead_app().test_client().get("/api/openapi.json").get_json()
    assert document["openapi"].startswith("3.1")
    for path in ("/api/search", "/api/equations/{eq_id}", "/api/papers/{paper_id}", "/api/render", "/api/jobs"):
        assert path in document["paths"]
