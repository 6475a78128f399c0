"""The response bodies of the OpenAPI document (`webui/openapi_schemas.py`): every reference resolves, a hit lists
every field it is written with, and the bodies the real API answers with (errors and previews without a backend;
searches, grouped searches, equations, papers and jobs over the real indexed corpus) are valid against their
component, while a body missing a field is not. (The whole document held to the server: test_openapi_contract.py.)"""

from __future__ import annotations

import json

import jsonschema_rs
import pytest
from eqsearch.webui.openapi_schemas import component_schemas, schema_ref

from .conftest import BEARER, dead_app

COMPONENTS = component_schemas()


def validator(name: str) -> jsonschema_rs.Validator:
    """A validator of component ``name`` with every other component its references may reach."""
    return jsonschema_rs.validator_for({"components": {"schemas": COMPONENTS}, **schema_ref(name)})


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        here = [node["$ref"]] if "$ref" in node else []
        return here + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_every_reference_names_a_component_and_a_hit_lists_every_field():
    assert schema_ref("Job") == {"$ref": "#/components/schemas/Job"}
    refs = set(_refs(COMPONENTS))
    assert refs and {ref.rsplit("/", 1)[1] for ref in refs} <= set(COMPONENTS)
    assert all(schema["type"] == "object" for schema in COMPONENTS.values())
    hit = COMPONENTS["EquationHit"]
    assert hit["required"] == list(hit["properties"])  # the API writes every field, null where there is nothing
    json.dumps(COMPONENTS)  # the document is served as JSON: nothing else in it


def test_errors_and_previews_match_their_components_without_a_backend():
    client = dead_app().test_client()
    error = client.get("/api/nothing-here").get_json()
    assert validator("Error").is_valid(error)
    assert not validator("Error").is_valid({"error": {"code": "not_found"}})  # no message: refused
    for latex in (r"\frac{a}{b}", r"\frac{a", ""):
        rendered = client.get("/api/render", query_string={"latex": latex}).get_json()
        validator("Rendered").validate(rendered)


@pytest.mark.es
def test_the_apis_bodies_over_the_indexed_corpus_match_their_components(client):
    results = client.get("/api/search", query_string={"latex": "E = mc^2", "q": "energy"}).get_json()
    validator("SearchResults").validate(results)
    grouped = client.get("/api/search", query_string={"q": "gradient", "group": "1"}).get_json()
    assert grouped["groups"]
    validator("SearchResults").validate(grouped)
    validator("Equation").validate(client.get("/api/equations/2002.00002:2").get_json())
    validator("Paper").validate(client.get("/api/papers/2003.00003").get_json())
    jobs = client.get("/api/jobs", headers=BEARER).get_json()
    validator("JobList").validate(jobs)
    validator("Job").validate(client.get(f"/api/jobs/{jobs['jobs'][0]['job_id']}", headers=BEARER).get_json())
    broken = {**results["hits"][0]}
    del broken["eq_id"]
    assert not validator("EquationHit").is_valid(broken)
