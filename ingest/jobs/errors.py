"""The error of ingest jobs, in a module of its own so that the job's parts raise it without importing each other."""

from __future__ import annotations

from eqsearch.engine.errors import EqsearchError


class IngestJobError(EqsearchError):
    """An ingest job cannot start or cannot go on."""

    exit_code = 10
