"""Ingest jobs started, listed and resumed from the web: the admin pages' and the API's half that runs ingest.

A part of `eqsearch.webui.services.WebServices` (which views call), kept in a module of its own. Jobs run in threads
of the web process (`eqsearch.ingest.jobs.JobRunner`); a path to ingest must be absolute (400 otherwise), lie under
``EQSEARCH_INGEST_ROOT`` when that is set (403) and exist (422). Job ids derive from the path, so the same path again
resumes its job; starting a running job or resuming one that is neither failed nor interrupted is a conflict (409).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.webui.service_base import (
    BackendUnavailableError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PathForbiddenError,
    PathMissingError,
    ServicesCore,
)

#: Equations per bulk flush of a job started from the web: small, so that progress moves visibly.
JOB_BATCH_EQUATIONS = 50


class JobOperations(ServicesCore):
    """The ingest-job half of the admin pages and the API (see the module docstring)."""

    if TYPE_CHECKING:  # provided by `IndexOperations`, beside this class in `WebServices`

        def migration(self) -> dict[str, Any] | None: ...

    def jobs(self, size: int = 50) -> list[dict[str, Any]]:
        """Recent ingest jobs, newest first, each with ``live`` and ``resumable`` added."""
        from eqsearch.ingest.jobs import job_records

        with self._elasticsearch("listing jobs"):
            records = job_records(self.client, self.prefix, size)
        migration = self.migration() if records else None
        return [self.runner.view(record, migration) for record in records]

    def job(self, job_id: str) -> dict[str, Any]:
        """One job's record.

        Raises:
            NotFoundError: no job has that id.
        """
        from eqsearch.ingest.jobs import job_record

        with self._elasticsearch("reading a job"):
            record = job_record(self.client, self.prefix, job_id)
        if record is None:
            starting = self.runner.starting(job_id)
            if starting is not None:  # started here, still listing its sources: it writes its document then
                return self.runner.view(starting)
            raise NotFoundError(f"no ingest job has the id {job_id!r}")
        return self.runner.view(record, self.migration())

    def _check_path(self, raw: str) -> str:
        from pathlib import Path

        text = raw.strip()
        if not text:
            raise InvalidRequestError("give the path of a file or folder to ingest")
        if "\x00" in text:  # no file name holds one, and the file system calls below refuse it with a ValueError
            raise InvalidRequestError("the path holds a NUL character; no file name does")
        try:
            path = Path(text).expanduser()
        except RuntimeError:  # ~name of no user
            path = Path(text)
        if not path.is_absolute():
            raise InvalidRequestError(f"{text!r} is not an absolute path; give the full path on the server")
        try:
            path = path.resolve()
            root = self.config.ingest_root
            if root is not None and not path.is_relative_to(root.resolve()):
                raise PathForbiddenError(f"{path} is outside the ingest folder {root}; ingest only reads under it")
            exists = path.exists()
        except OSError as error:  # a name too long for the file system, a loop of links: nothing there to read
            raise PathMissingError(f"{text[:200]!r} cannot be looked up on the server ({error.strerror})") from None
        if not exists:
            raise PathMissingError(f"{path} does not exist on the server")
        return str(path)

    def start_job(
        self, raw_path: str, *, restart: bool = False, inline: bool = True, wait: bool = False
    ) -> dict[str, Any]:
        """Start an ingest job of `raw_path` in a thread. Job ids derive from the path: the same path again resumes
        its job (papers already checkpointed are skipped) unless `restart` is set.

        Args:
            raw_path: an absolute path on the server (under ``EQSEARCH_INGEST_ROOT`` when that is set): LaTeX
                sources, arXiv tarballs, a papers JSONL.
            restart: forget the job's checkpoints and read everything again (documents are overwritten, never
                duplicated).
            inline: index the inline formulas too (off: the display equations only).
            wait: run to the end before returning (tests, scripts).

        Returns:
            The job's record.

        Raises:
            InvalidRequestError: the path is not absolute, or no model bundle can be loaded.
            PathForbiddenError: the path is outside the ingest folder.
            PathMissingError: the path does not exist.
            ConflictError: that job is already running.
        """
        return self._launch((self._check_path(raw_path),), inline=inline, wait=wait, restart=restart)

    def resume_job(self, job_id: str, *, wait: bool = False) -> dict[str, Any]:
        """Run a failed or interrupted job again from its checkpoints.

        Raises:
            NotFoundError: no job has that id.
            ConflictError: the job is running or finished.
        """
        record = self.job(job_id)
        if not record["resumable"]:
            raise ConflictError(f"job {job_id} is {record['state']}; only a failed or interrupted job resumes")
        inline = (record.get("options") or {}).get("inline") is not False  # as the job was started
        return self._launch(tuple(record.get("sources") or ()), inline=inline, wait=wait, job_id=job_id)

    def _launch(
        self, sources: tuple[str, ...], *, inline: bool, wait: bool, restart: bool = False, job_id: str | None = None
    ) -> dict[str, Any]:
        """Start the job of ``sources`` (resuming ``job_id`` when given) with this deployment's settings."""
        from eqsearch.ingest.config import ExtractConfig
        from eqsearch.ingest.jobs import AlreadyRunningError, IngestJobConfig

        config = IngestJobConfig(
            sources=sources,
            index_prefix=self.prefix,
            shards=self.config.es.shards,
            replicas=self.config.es.replicas,
            job_id=job_id,
            batch_equations=JOB_BATCH_EQUATIONS,
            restart=restart,
            extract=ExtractConfig(inline=inline),
        )
        try:
            encoder = self.encoder
        except EqsearchError as error:
            raise InvalidRequestError(f"ingest needs the formula encoder: {error.message}", hint=error.hint) from error
        job_id = config.effective_job_id
        try:  # without `wait`, returns once the job has written its document, so that its page shows real figures
            self.runner.start_job(encoder, config, wait=wait, since=self._job_updated_at(job_id))
        except AlreadyRunningError as error:
            raise ConflictError(error.message) from error
        return self.job(job_id)

    def _job_updated_at(self, job_id: str) -> str | None:
        try:
            return self.job(job_id).get("updated_at")
        except (NotFoundError, BackendUnavailableError):
            return None
