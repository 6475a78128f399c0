"""The admin pages' and the API's operations on a deployment of its own, against the real node: a migration that
keeps every document, ingest jobs started with a bearer token, resumed from their checkpoints, and the same path
resuming its job (`webui/index_operations.py`, `webui/job_operations.py`)."""

from __future__ import annotations

import uuid

import pytest
from markupsafe import escape

from .conftest import ADMIN_TOKEN, CORPUS, csrf_of, drop_prefix, login, make_app


@pytest.fixture
def fresh_app(es_config, es_client):
    """An app with its own indices (the admin tests change them)."""
    prefix = f"eqsearch-test-web-{uuid.uuid4().hex[:8]}"
    app = make_app(es_config, prefix)
    yield app
    app.extensions["eqsearch.services"].close()
    drop_prefix(es_client, prefix)


@pytest.mark.es
def test_migration_from_the_admin_pages_keeps_every_document(fresh_app):
    services = fresh_app.extensions["eqsearch.services"]
    services.start_job(str(CORPUS / "papers.jsonl"), wait=True)
    client = fresh_app.test_client()
    login(client)
    before = {i.name: i.docs for i in services.indices() if i.kind == "equations" and i.alias}
    assert client.get("/admin/kinds/equations/migrate").status_code == 200
    refused = client.post("/admin/kinds/equations/migrate", data={"confirm": "yes"})
    assert refused.status_code == 403  # no CSRF token
    done = client.post("/admin/kinds/equations/migrate", data={"confirm": "yes", "csrf_token": csrf_of(client)})
    assert done.status_code == 302  # at once: the copy runs in the background (a web request may not outlast it)
    services.runner.migrations["equations"].join(timeout=120)
    after = {i.name: i.docs for i in services.indices() if i.kind == "equations" and i.alias}
    page = client.get("/admin/").get_data(as_text=True)
    # 12 displays and 2003.00003's one inline formula of three symbols or more
    assert 'id="last-migrations"' in page and f"13 documents copied; {services.alias('equations')} now reads" in page
    # the plugin's one line, as 'eqsearch es check' prints it (the node here may or may not carry the plugin)
    from eqsearch.engine.search.plugin import detect_plugin

    assert 'id="plugin-note"' in page and escape(detect_plugin(services.client).note) in page
    unknown = client.post(
        "/admin/kinds/nope/migrate", data={"confirm": "yes", "csrf_token": csrf_of(client)}, follow_redirects=True
    )
    assert "Unknown index kind &#39;nope&#39;" in unknown.get_data(as_text=True)
    assert list(after.values()) == list(before.values()) and after.keys() != before.keys()
    old = next(iter(before))
    assert client.get("/api/search?latex=E=mc^2").get_json()["hits"][0]["eq_id"] == "2002.00002:2"  # vectors copied
    # The old index is no longer live: it can be deleted, with its name typed.
    kept = client.post(f"/admin/indices/{old}/delete", data={"confirm_name": "nope", "csrf_token": csrf_of(client)})
    assert kept.status_code == 302 and old in [i.name for i in services.indices()]
    client.post(f"/admin/indices/{old}/delete", data={"confirm_name": old, "csrf_token": csrf_of(client)})
    assert old not in [i.name for i in services.indices()]
    # A live index is never deleted.
    live = next(iter(after))
    client.post(f"/admin/indices/{live}/delete", data={"confirm_name": live, "csrf_token": csrf_of(client)})
    assert live in [i.name for i in services.indices()]


@pytest.mark.es
def test_jobs_through_the_api_with_a_bearer_token(fresh_app, tmp_path):
    client = fresh_app.test_client()
    bearer = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    relative = client.post("/api/jobs", json={"path": "relative/path"}, headers=bearer)
    assert relative.status_code == 400 and "absolute" in relative.get_json()["error"]["message"]
    missing = client.post("/api/jobs", json={"path": str(tmp_path / "missing")}, headers=bearer)
    assert missing.status_code == 422 and "does not exist" in missing.get_json()["error"]["message"]
    assert missing.get_json()["error"]["code"] == "path_not_found"
    started = client.post("/api/jobs", json={"path": str(CORPUS / "latex")}, headers=bearer)
    assert started.status_code == 202
    job_id = started.get_json()["job_id"]
    fresh_app.extensions["eqsearch.services"].runner.jobs[job_id].join(timeout=120)
    job = client.get(f"/api/jobs/{job_id}", headers=bearer).get_json()
    assert job["state"] == "finished" and job["counts"]["equations_indexed"] == 5
    finished = client.post(f"/api/jobs/{job_id}/resume", headers=bearer)  # only a failed or interrupted job resumes
    assert finished.status_code == 409 and finished.get_json()["error"]["code"] == "conflict"
    citations = client.get("/api/papers/latex/heat").get_json()["citations_out"]
    assert citations == [{"paper_id": "math/0001001", "indexed": False, "title": None}]
    inline = job["counts"]["inline_indexed"]
    assert job["options"]["inline"] is True and inline > 0
    # the same sources again, display equations only: the job takes the inline documents away
    again = client.post(
        "/api/jobs", json={"path": str(CORPUS / "latex"), "restart": True, "inline": False}, headers=bearer
    )
    fresh_app.extensions["eqsearch.services"].runner.jobs[job_id].join(timeout=120)
    job = client.get(f"/api/jobs/{again.get_json()['job_id']}", headers=bearer).get_json()
    assert job["state"] == "finished" and job["options"]["inline"] is False
    assert job["counts"]["inline"] == 0 and job["counts"]["equations_stale_deleted"] == inline
    hits = client.get("/api/search", query_string={"q": "heat", "inline": "only"}).get_json()["hits"]
    assert hits == []


@pytest.mark.es
def test_a_failed_job_resumes_from_its_checkpoints(fresh_app, es_client):
    services = fresh_app.extensions["eqsearch.services"]
    job = services.start_job(str(CORPUS / "latex"), wait=True)
    jobs = services.alias("jobs")
    es_client.indices.refresh(index=jobs)
    # Leave the job as a crash after the first paper would: one checkpoint gone, the record failed (real documents).
    checkpoints = es_client.search(index=jobs, query={"term": {"record": "checkpoint"}}, size=10)["hits"]["hits"]
    assert len(checkpoints) == 2
    es_client.delete(index=jobs, id=checkpoints[0]["_id"])
    es_client.update(index=jobs, id=job["job_id"], doc={"state": "failed", "message": "killed"}, refresh=True)
    client = fresh_app.test_client()
    login(client)
    page = client.get(f"/admin/jobs/{job['job_id']}")
    assert b"Resume" in page.data and b"killed" in page.data
    response = client.post(f"/admin/jobs/{job['job_id']}/resume", data={"csrf_token": csrf_of(client)})
    assert response.status_code == 302
    services.runner.jobs[job["job_id"]].join(timeout=60)
    resumed = services.job(job["job_id"])
    assert resumed["state"] == "finished" and resumed["progress"] == {"papers_done": 2, "papers_total": 2}
    assert resumed["counts"]["papers"] == 2 and resumed["counts"]["equations_indexed"] == 5  # none counted twice
    inline = resumed["counts"]["inline_indexed"]
    assert es_client.count(index=services.alias("equations"))["count"] == 5 + inline  # none indexed twice
    assert es_client.count(index=services.alias("equations"), query={"term": {"inline": True}})["count"] == inline


@pytest.mark.es
def test_the_same_path_resumes_and_restart_reads_again(fresh_app):
    services = fresh_app.extensions["eqsearch.services"]
    first = services.start_job(str(CORPUS / "latex"), wait=True)
    again = services.start_job(str(CORPUS / "latex"), wait=True)
    assert again["job_id"] == first["job_id"] and again["counts"]["papers"] == 2  # nothing counted twice
    fresh = services.start_job(str(CORPUS / "latex"), restart=True, wait=True)
    assert fresh["state"] == "finished" and fresh["counts"]["equations_indexed"] == 5
