"""The admin pages and API: refused without credentials, off without a token."""

from __future__ import annotations

from eqsearch.webui import create_app

from .conftest import DEAD, dead_app


def test_admin_refuses_without_credentials():
    client = dead_app().test_client()
    for method, path in [("GET", "/api/jobs"), ("POST", "/api/jobs"), ("POST", "/api/jobs/x/resume")]:
        response = client.open(path, method=method, json={"path": "/tmp"})
        assert response.status_code == 401, path
        assert response.get_json()["error"]["code"] == "unauthorized"
    wrong = client.get("/api/jobs", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401
    page = client.get("/admin/")
    assert page.status_code == 302 and "/admin/login" in page.headers["Location"]
    assert client.post("/admin/indices", data={"kind": "papers"}).status_code == 302  # to the login, nothing done


def test_admin_is_off_without_a_token():
    client = create_app({"ES_CONFIG": DEAD, "TESTING": True}).test_client()
    assert client.get("/admin/login").status_code == 403
    assert client.get("/api/jobs", headers={"Authorization": "Bearer anything"}).status_code == 403
