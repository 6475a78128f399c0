"""The runner of background jobs, without a node: which records are live, how pages see them, a job started here
before its first record, and one job or migration at a time per process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
from eqsearch.ingest.jobs import AlreadyRunningError, IngestJobConfig, JobRunner


def no_client():
    raise AssertionError("the runner must not need the cluster here")


def gone_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)


@pytest.fixture
def runner():
    return JobRunner(no_client, "x")


@pytest.fixture
def hold():
    """A live thread until the test ends."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    yield thread
    release.set()
    thread.join()


def record(**fields):
    return {"record": "job", "job_id": "j", "state": "running", "sources": ["/a", "/b"], **fields}


def test_a_running_record_is_live_while_its_process_is(runner):
    here = socket.gethostname()
    elsewhere = runner.view(record(host="another-host", pid=12))
    assert elsewhere["live"] and elsewhere["state"] == "running" and not elsewhere["resumable"]
    assert elsewhere["path"] == "/a, /b"
    assert {"progress", "counts", "errors_by_reason", "failures"} <= elsewhere.keys()
    dead = runner.view(record(host=here, pid=gone_pid()))
    assert not dead["live"] and dead["state"] == "interrupted" and dead["resumable"]
    # a record of this very process without a thread here: its job ended without recording it
    assert runner.view(record(host=here, pid=os.getpid()))["state"] == "interrupted"
    assert runner.view(record(host=here, pid=0))["state"] == "interrupted"
    failed = runner.view(record(state="failed", host=here, pid=os.getpid()))
    assert not failed["live"] and failed["resumable"]
    assert not runner.view(record(state="finished", host="another-host"))["resumable"]


def test_a_job_running_here_is_live_and_says_when_a_migration_holds_its_writes(runner, hold):
    runner.jobs["j"] = hold
    migration = {"summary": "the migration of jobs (x-jobs-v1 -> x-jobs-v2)"}
    view = runner.view(record(state="failed", host="h", pid=1), migration)
    assert view["live"] and view["state"] == "running"
    assert view["message"] == f"A migration is in progress ({migration['summary']}); this job's writes wait for it."
    assert runner.view(record(message="waiting for it"), migration)["message"] == "waiting for it"


def test_a_job_started_here_shows_before_its_first_record(runner, hold):
    assert runner.starting("j") is None
    runner.jobs["j"] = hold
    runner._sources["j"] = ["/corpus"]
    assert runner.starting("j") == {
        "job_id": "j",
        "state": "running",
        "sources": ["/corpus"],
        "message": "listing the sources…",
    }
    with pytest.raises(AlreadyRunningError, match="job j is already running"):
        runner.start_job(SimpleNamespace(), IngestJobConfig(sources=("/corpus",), job_id="j"), wait=False, since=None)


def test_one_migration_per_kind_runs_in_the_background(runner):
    release, ran = threading.Event(), []

    def migrate():
        release.wait(30)
        ran.append(True)
        return SimpleNamespace(source="x-papers-v1", target="x-papers-v2", copied=3)

    runner.start_migration("papers", migrate, started=lambda: True)
    with pytest.raises(AlreadyRunningError, match="a migration of papers is already running in this server"):
        runner.start_migration("papers", migrate, started=lambda: True)
    release.set()
    runner.migrations["papers"].join(30)
    assert ran == [True]

    def broken():
        raise RuntimeError("the copy failed")

    runner.start_migration("papers", broken, started=lambda: False)  # logged, never raised here
    runner.migrations["papers"].join(30)
