"""What the parts of `eqsearch.webui.services.WebServices` share: the four errors the web pages know, and the
resources each part may use (`ServicesCore`).

`WebServices` translates engine and client failures into `BackendUnavailableError` (503), `NotFoundError` (404),
`InvalidRequestError` (400 in the API, a flashed message in admin) and `NotIndexedError` (503 with its own sentence);
`eqsearch.webui.services` re-exports them.
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
    """The request cannot be carried out as given (a bad path, deleting a live index, ...)."""


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
