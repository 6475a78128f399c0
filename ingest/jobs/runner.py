"""The background threads in which a long-running process (the web app) runs ingest jobs and index migrations.

A web request may not run for minutes (gunicorn stops a worker whose request runs past its timeout), so the web app
starts a job or a migration in a daemon thread of its process and returns; the job's record in the jobs index (or
the migration's lock) tells every worker process how far it got. The runner keeps the threads it started, so that
it can refuse to start one twice, tell a job that is live here from one whose process is gone (`JobRunner.view`),
and show a job it started before the job has written its first record.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from elasticsearch import ApiError, Elasticsearch
from eqsearch.engine.es import pid_alive
from eqsearch.engine.index import MigrationReport, alias_name
from eqsearch.engine.model import Encoder
from eqsearch.ingest.jobs.errors import IngestJobError
from eqsearch.ingest.jobs.job import IngestJob, IngestJobConfig
from eqsearch.ingest.jobs.store import STATE_RUNNING

log = logging.getLogger(__name__)

#: Job states in which a job's process should be running it.
ACTIVE_STATES = (STATE_RUNNING,)
#: How long `JobRunner.start_job` waits for a new job's first record (so that its page opens with real figures).
JOB_START_SECONDS = 5.0
#: How long `JobRunner.start_migration` waits for the migration to take its lock (so that its page shows it).
MIGRATION_START_SECONDS = 3.0


class AlreadyRunningError(IngestJobError):
    """The job or migration asked for already runs in a thread of this process."""


class JobRunner:
    """Ingest jobs and migrations of one process, each in a daemon thread.

    Args:
        client: returns the deployment's client, connected on first use (called in the job's thread, so a cluster
            that is down fails the job there and is logged).
        prefix: the deployment's index prefix.
    """

    def __init__(self, client: Callable[[], Elasticsearch], prefix: str) -> None:
        self._client = client
        self.prefix = prefix
        self._lock = threading.Lock()
        #: job id -> the thread running it in this process
        self.jobs: dict[str, threading.Thread] = {}
        #: index kind -> the thread migrating it in this process
        self.migrations: dict[str, threading.Thread] = {}
        self._sources: dict[str, list[str]] = {}  # job id -> sources, for jobs started here

    # -- ingest jobs ---------------------------------------------------------------------------------------------
    def start_job(self, encoder: Encoder, config: IngestJobConfig, *, wait: bool, since: str | None) -> None:
        """Run ``config``'s job in a thread; return once it has written its record, or when it ends with ``wait``.

        Args:
            encoder: the formula encoder the job uses.
            config: the job.
            wait: run to the end before returning (tests, scripts).
            since: the ``updated_at`` of the job's record before this start (None when it has none): a record
                written after it is this run's.

        Raises:
            AlreadyRunningError: the job runs in a thread of this process already.
        """
        job_id = config.effective_job_id
        with self._lock:
            thread = self.jobs.get(job_id)
            if thread is not None and thread.is_alive():
                raise AlreadyRunningError(f"job {job_id} is already running")

            def run() -> None:
                try:
                    IngestJob(self._client(), encoder, config).run()
                except Exception as error:  # recorded in the job document by IngestJob; the process carries on
                    log.warning("ingest job %s failed: %s", job_id, error)

            thread = threading.Thread(target=run, name=f"ingest-{job_id}", daemon=True)
            self.jobs[job_id] = thread
            self._sources[job_id] = list(config.sources)
            thread.start()
        if wait:
            thread.join()
        else:
            deadline = time.monotonic() + JOB_START_SECONDS
            while thread.is_alive() and time.monotonic() < deadline and not self._job_written(job_id, since):
                time.sleep(0.1)

    def _job_written(self, job_id: str, since: str | None) -> bool:
        try:
            record = self._client().get(
                index=alias_name(self.prefix, "jobs"), id=job_id, source_includes=["updated_at"]
            )
        except ApiError:  # no jobs index yet (404), or its shard is still starting (503)
            return False
        return since is None or record["_source"].get("updated_at", "") > since

    def starting(self, job_id: str) -> dict[str, Any] | None:
        """The stand-in record of a job started here that is still listing its sources (it writes its document once
        it knows how many), or None."""
        sources = self._sources.get(job_id)
        thread = self.jobs.get(job_id)
        if sources is None or thread is None or not thread.is_alive():
            return None
        return {"job_id": job_id, "state": "running", "sources": sources, "message": "listing the sources…"}

    def is_live(self, record: dict[str, Any]) -> bool:
        """Whether the job of ``record`` runs: in a thread here, or (its record says running) in a process that is
        alive on this machine or on another one (whose record is trusted)."""
        thread = self.jobs.get(record.get("job_id", ""))
        if thread is not None and thread.is_alive():
            return True
        if record.get("state") not in ACTIVE_STATES:
            return False
        if record.get("host") != socket.gethostname():
            return True  # another machine runs it: trust its record
        pid = int(record.get("pid") or 0)
        if pid == os.getpid() or pid <= 0:
            return False  # this process would have its thread
        return pid_alive(pid)

    def view(self, record: dict[str, Any], migration: dict[str, Any] | None = None) -> dict[str, Any]:
        """A job's record as pages show it: with ``live``, ``resumable`` and ``path`` added, and the state of a job
        whose process is gone said as ``interrupted``.

        Args:
            record: the job's record (or `starting`'s stand-in).
            migration: the migration in progress, if any (``summary``: one sentence about it).
        """
        view = dict(record)
        view["live"] = self.is_live(record)
        if view["live"]:
            view["state"] = "running"  # a resumed job whose document still says failed, for a moment
            if migration is not None and not view.get("message"):
                # A job waiting for a migration of the jobs index cannot write that it waits: say it here.
                view["message"] = f"A migration is in progress ({migration['summary']}); this job's writes wait for it."
        elif view.get("state") in ACTIVE_STATES:
            view["state"] = "interrupted"  # its process is gone: resumable from its checkpoints
        view["resumable"] = view.get("state") in ("failed", "interrupted")
        view["path"] = ", ".join(record.get("sources") or [])
        view.setdefault("progress", {})
        view.setdefault("counts", {})
        view.setdefault("errors_by_reason", {})
        view.setdefault("failures", [])
        return view

    # -- migrations ----------------------------------------------------------------------------------------------
    def start_migration(
        self, kind: str, migrate: Callable[[], MigrationReport], *, started: Callable[[], bool]
    ) -> None:
        """Run ``migrate`` in a thread; return once ``started`` says its lock is taken (or after a few seconds).

        Args:
            kind: the index kind it migrates (one migration per kind in this process).
            migrate: the migration (its failure is recorded in the jobs index by the engine, and logged here).
            started: whether the migration can be seen in progress.

        Raises:
            AlreadyRunningError: a migration of ``kind`` runs in a thread of this process already.
        """

        def run() -> None:
            try:
                report = migrate()
                log.info("migrated %s: %s -> %s (%d documents)", kind, report.source, report.target, report.copied)
            except Exception as error:  # recorded in the jobs index by the engine; the process carries on
                log.warning("migration of %s failed: %s", kind, error)

        with self._lock:
            thread = self.migrations.get(kind)
            if thread is not None and thread.is_alive():
                raise AlreadyRunningError(f"a migration of {kind} is already running in this server")
            thread = threading.Thread(target=run, name=f"migrate-{kind}", daemon=True)
            self.migrations[kind] = thread
            thread.start()
        deadline = time.monotonic() + MIGRATION_START_SECONDS
        while thread.is_alive() and time.monotonic() < deadline and not started():
            time.sleep(0.05)
