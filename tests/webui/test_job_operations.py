"""Ingest jobs from the admin pages and the API (`webui/job_operations.py`), on a deployment of its own against the
real node: jobs started with a bearer token (paths checked first), resumed from their checkpoints, and the same path
resuming its job while a restart reads it again; called directly, paths refused before anything runs (empty, NUL,
relative, missing, outside the ingest folder), unknown jobs not found, a finished job not resumed. (Indices and
migrations: test_index_operations.py.)"""

from __future__ import annotations

import pytest
from eqsearch.webui.services import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PathForbiddenError,
    PathMissingError,
)

from .conftest import ADMIN_TOKEN, CORPUS, csrf_of, login, make_app


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


@pytest.mark.es
def test_paths_are_checked_and_unknown_jobs_are_not_found(fresh_app, tmp_path):
    services = fresh_app.extensions["eqsearch.services"]
    for raw, refused in (("  ", "give the path"), ("a\x00b", "NUL character"), ("relative/x", "not an absolute path")):
        with pytest.raises(InvalidRequestError, match=refused):
            services.start_job(raw)
    with pytest.raises(PathMissingError, match="does not exist on the server"):
        services.start_job(str(tmp_path / "missing"))
    fenced = make_app(services.config.es, services.prefix, INGEST_ROOT=str(tmp_path / "root"))
    try:
        with pytest.raises(PathForbiddenError, match="outside the ingest folder"):
            fenced.extensions["eqsearch.services"].start_job(str(CORPUS / "latex"))
    finally:
        fenced.extensions["eqsearch.services"].close()
    with pytest.raises(NotFoundError, match="no ingest job has the id 'nope'"):
        services.job("nope")
    with pytest.raises(NotFoundError):
        services.resume_job("nope")
    finished = services.start_job(str(CORPUS / "latex"), wait=True)
    assert [job["job_id"] for job in services.jobs()] == [finished["job_id"]]
    with pytest.raises(ConflictError, match="only a failed or interrupted job resumes"):
        services.resume_job(finished["job_id"])
