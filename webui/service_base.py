"""What the parts of `eqsearch.webui.services.WebServices` share: the four errors the web pages know, and the
resources each part may use (`ServicesCore`).

`WebServices` translates engine and client failures into `BackendUnavailableError` (503), `NotFoundError` (404),
`InvalidRequestError` (400 in the API, a flashed message in admin) and `NotIndexedError` (503 with its own sentence);
`eqsearch.webui.services` re-exports them. An `InvalidRequestError` carries the HTTP status and code the API answers
with: its subclasses tell a request the server's state refuses (`ConflictError`, 409) and an ingest path the server
will not or cannot read (`PathForbiddenError`, 403; `PathMissingError`, 422) from a malformed one (400), so that an
API client can tell "fix the request" from "the server's state says no" (`/api/openapi.json` lists them).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from eqsearch.engine.errors import EqsearchError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch
    from eqsearch.engine.index import IndexAdmin
    from eqsearch.engine.model.encoder import Encoder
    from eqsearch.ingest.jobs import JobRunner
    from eqsearch.webui.config import WebConfig


class BackendUnavailableError(EqsearchError):
    """Elasticsearch (or another backend the page needs) does not answer; pages show 503."""

    exit_code = 5


class NotIndexedError(EqsearchError):
    """The deployment has no index to search yet."""


class NotFoundError(EqsearchError):
    """The equation, paper, index or job asked for does not exist."""


class InvalidRequestError(EqsearchError):
    """The request cannot be carried out as given (a bad path, deleting a live index, ...).

    ``http_status`` and ``error_code`` are what the API answers (``{"error": {"code": error_code, ...}}``); admin
    pages flash the message whatever the subclass.
    """

    http_status = 400
    error_code = "invalid_request"


class ConflictError(InvalidRequestError):
    """A well-formed request the current state refuses: the job is already running, or is not resumable (409)."""

    http_status = 409
    error_code = "conflict"


class PathForbiddenError(InvalidRequestError):
    """An ingest path outside ``EQSEARCH_INGEST_ROOT``, which ingest never reads (403)."""

    http_status = 403
    error_code = "path_forbidden"


class PathMissingError(InvalidRequestError):
    """A well-formed absolute ingest path that does not exist on the server (422)."""

    http_status = 422
    error_code = "path_not_found"


class ServicesCore:
    """The resources `WebServices` provides to its parts (`IndexOperations`, `JobOperations`), declared for type
    checkers only: the parts are never used alone."""

    if TYPE_CHECKING:
        config: WebConfig
        prefix: str
        client: Elasticsearch
        index_admin: IndexAdmin
        runner: JobRunner
        encoder: Encoder

        def _elasticsearch(self, what: str) -> contextlib.AbstractContextManager[None]: ...

        def alias(self, kind: str) -> str: ...
