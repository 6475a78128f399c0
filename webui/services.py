"""Everything the web app asks of the engine and of ingest, in one place.

Views call `WebServices` and nothing else: search (`engine.search.service.SearchService`), LaTeX previews
(`engine.latex.converter.KatexConverter`), indices and migrations (`index_operations.py`) and ingest jobs
(`job_operations.py`), both run in threads of the web process by `ingest.jobs.JobRunner`. Resources are created on
first use (the Elasticsearch client, the KaTeX workers, the ONNX encoder) and closed by `close`, which `init_app`
registers for process exit.

Engine errors are translated here into the four the pages know (`service_base.py`): `BackendUnavailableError`
(503), `NotFoundError` (404), `InvalidRequestError` (400 in the API, a flashed message in admin) and
`NotIndexedError` (503 with its own sentence).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.results import SearchResults
from eqsearch.webui.config import WebConfig
from eqsearch.webui.index_operations import IndexOperations, IndexRow
from eqsearch.webui.job_operations import JOB_BATCH_EQUATIONS, JobOperations
from eqsearch.webui.service_base import (
    BackendUnavailableError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    NotIndexedError,
    PathForbiddenError,
    PathMissingError,
)

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch
    from eqsearch.engine.index import IndexAdmin
    from eqsearch.engine.latex.converter import ConversionResult, KatexConverter
    from eqsearch.engine.model.encoder import Encoder
    from eqsearch.engine.search.service import SearchService
    from eqsearch.ingest.jobs import JobRunner

__all__ = [
    "JOB_BATCH_EQUATIONS",
    "MAX_RENDER_CHARS",
    "BackendUnavailableError",
    "ConflictError",
    "IndexRow",
    "InvalidRequestError",
    "NotFoundError",
    "NotIndexedError",
    "PathForbiddenError",
    "PathMissingError",
    "WebServices",
    "init_app",
]

log = logging.getLogger(__name__)

MAX_RENDER_CHARS = 4000


class WebServices(IndexOperations, JobOperations):
    """The app's gateway to Elasticsearch, KaTeX, the encoder and ingest (see the module docstring).

    Args:
        config: the app's settings.
        encoder: an encoder to use instead of loading ``config.model_bundle`` (tests, or an app embedding eqsearch).
    """

    def __init__(self, config: WebConfig, encoder: Encoder | None = None) -> None:
        self.config = config
        self.prefix = config.es.index_prefix
        self._client: Elasticsearch | None = None
        self._converter: KatexConverter | None = None
        self._encoder: Encoder | None = encoder
        self._search: SearchService | None = None
        self._lock = threading.RLock()
        self._runner: JobRunner | None = None

    # -- resources ------------------------------------------------------------------------------------------

    @property
    def client(self) -> Elasticsearch:
        """A checked Elasticsearch client, connected on first use.

        Raises:
            BackendUnavailableError: the cluster does not answer, refuses the credentials or has the wrong major.
        """
        if self._client is None:
            from eqsearch.engine.es.client import connect

            with self._lock:
                if self._client is None:
                    try:
                        self._client, _ = connect(self.config.es)
                    except EqsearchError as error:
                        raise BackendUnavailableError(error.message, hint=error.hint) from error
        return self._client

    @property
    def converter(self) -> KatexConverter:
        """The KaTeX converter (workers start on the first conversion)."""
        if self._converter is None:
            from eqsearch.engine.latex.converter import KatexConfig, KatexConverter

            with self._lock:
                if self._converter is None:
                    self._converter = KatexConverter(KatexConfig(workers=self.config.katex_workers))
        return self._converter

    @property
    def encoder(self) -> Encoder:
        """The formula encoder of the model bundle (loaded and checked on first use).

        Raises:
            eqsearch.engine.model.bundle.BundleError: the bundle is missing or does not match this eqsearch.
        """
        if self._encoder is None:
            from eqsearch.engine.model.encoder import load_encoder

            with self._lock:
                if self._encoder is None:
                    self._encoder = load_encoder(self.config.model_bundle, provider=self.config.onnx_provider)
        return self._encoder

    @property
    def index_admin(self) -> IndexAdmin:
        """The deployment's indices (on the checked client)."""
        from eqsearch.engine.index import IndexAdmin

        es = self.config.es
        return IndexAdmin(self.client, self.prefix, shards=es.shards, replicas=es.replicas)

    @property
    def runner(self) -> JobRunner:
        """The threads of this process that run ingest jobs and migrations."""
        if self._runner is None:
            from eqsearch.ingest.jobs import JobRunner

            with self._lock:
                if self._runner is None:
                    self._runner = JobRunner(lambda: self.client, self.prefix)
        return self._runner

    def _search_service(self, encoder: Any) -> SearchService:
        from eqsearch.engine.search.service import SearchService

        if self._search is None or self._search.client is not self.client or self._search.encoder is not encoder:
            self._search = SearchService(self.client, encoder, self.converter, index_prefix=self.prefix)
        return self._search

    def close(self) -> None:
        """Stop the KaTeX workers and close the Elasticsearch client (both restart on demand)."""
        if self._converter is not None:
            self._converter.close()
        if self._client is not None:
            self._client.close()
            self._client = None

    @contextlib.contextmanager
    def _elasticsearch(self, what: str) -> Iterator[None]:
        """Translate engine and client failures into the errors the pages know."""
        import elastic_transport
        from elasticsearch import ApiError
        from elasticsearch import NotFoundError as EsNotFound
        from eqsearch.engine.index import IndexOperationError
        from eqsearch.engine.model.patterns import QueryVariableError
        from eqsearch.engine.search.service import EquationNotFoundError, SearchError

        try:
            yield
        except EquationNotFoundError as error:
            raise NotFoundError(error.message, hint=error.hint) from error
        except QueryVariableError as error:
            raise InvalidRequestError(error.message, hint=error.hint) from error
        except IndexOperationError as error:
            raise InvalidRequestError(error.message, hint=error.hint) from error
        except SearchError as error:
            if isinstance(error.__cause__, EsNotFound) or not self._has_equations_index():
                raise NotIndexedError(error.message, hint=error.hint) from error
            raise BackendUnavailableError(f"{what}: {error.message}") from error
        except elastic_transport.TransportError as error:
            raise BackendUnavailableError(f"Elasticsearch did not answer while {what}") from error
        except ApiError as error:
            if error.meta.status in (429, 502, 503, 504):
                raise BackendUnavailableError(
                    f"Elasticsearch answered HTTP {error.meta.status} while {what}"
                ) from error
            raise

    def _has_equations_index(self) -> bool:
        import elastic_transport

        try:
            return bool(self.client.indices.exists_alias(name=self.alias("equations")))
        except (elastic_transport.TransportError, BackendUnavailableError):
            return True  # unknown: let the caller report the backend as down

    def alias(self, kind: str) -> str:
        """The alias searches read for `kind` (``equations``, ``papers``, ``jobs``)."""
        from eqsearch.engine.index import alias_name

        return alias_name(self.prefix, kind)

    # -- LaTeX and search ------------------------------------------------------------------------------------

    def to_mathml(self, latex: str) -> ConversionResult:
        """LaTeX -> MathML for a preview; bad LaTeX gives a failed result with a message, never an exception.

        Raises:
            InvalidRequestError: the LaTeX is longer than `MAX_RENDER_CHARS`.
        """
        if len(latex) > MAX_RENDER_CHARS:
            raise InvalidRequestError(
                f"the formula has {len(latex):,} characters; previews take up to {MAX_RENDER_CHARS:,}"
            )
        return self.converter.convert(latex, "equation", ())

    def search(self, query: HybridQuery) -> SearchResults:
        """Run a hybrid query. Without a model bundle, a formula cannot be searched: the keywords still are.

        Raises:
            BackendUnavailableError: Elasticsearch does not answer.
            NotIndexedError: nothing is indexed yet.
        """
        from eqsearch.engine.model.bundle import BundleError

        encoder: Any = None
        warning = None
        if query.has_formula:
            try:
                encoder = self.encoder
            except BundleError as error:
                log.warning("formula search is off: %s", error)
                warning = "Formula search is unavailable on this server (no model bundle); showing keyword results."
                query = replace(query, latex=None)
        with self._elasticsearch("searching"):
            results = self._search_service(encoder).search(query)
        if warning:
            results = replace(results, warnings=[warning, *results.warnings])
        return results

    def similar(self, eq_id: str, size: int = 8) -> SearchResults:
        """Equations nearest to a stored one (the equation itself excluded); none when it has no vector."""
        from eqsearch.engine.search.service import EquationNotFoundError

        with self._elasticsearch("finding similar equations"):
            try:
                return self._search_service(self._encoder).more_like_equation(eq_id, size)
            except EquationNotFoundError:
                return SearchResults([], [], 0, 1, size)

    def equation(self, eq_id: str) -> dict[str, Any] | None:
        """The stored equation document (vector excluded), or None."""
        with self._elasticsearch("reading an equation"):
            return self._search_service(self._encoder).get_equation(eq_id)

    def paper(self, paper_id: str) -> dict[str, Any] | None:
        """A paper with ``sections`` (with their equations), ``citations_out`` and ``cited_by``; or None."""
        with self._elasticsearch("reading a paper"):
            return self._search_service(self._encoder).get_paper(paper_id)


def init_app(app: Any, config: WebConfig, encoder: Encoder | None = None) -> WebServices:
    """Attach a `WebServices` to `app` (``app.extensions["eqsearch.services"]``) and close it at process exit."""
    services = WebServices(config, encoder)
    app.extensions["eqsearch.services"] = services
    atexit.register(services.close)
    return services
