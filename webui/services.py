"""Everything the web app asks of the engine and of ingest, in one place.

Views call `WebServices` and nothing else: search (`engine.search.service.SearchService`), LaTeX previews
(`engine.latex.converter.KatexConverter`), indices (`engine.index.IndexAdmin`) and ingest jobs and migrations (run
in threads of the web process by `ingest.jobs.JobRunner`). Resources are created on first use (the Elasticsearch
client, the KaTeX workers, the ONNX encoder) and closed by `close`, which `init_app` registers for process exit.

Engine errors are translated here into the four the pages know: `BackendUnavailableError` (503), `NotFoundError`
(404), `InvalidRequestError` (400 in the API, a flashed message in admin) and `NotIndexedError` (503 with its own
sentence).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.results import SearchResults
from eqsearch.webui.config import WebConfig

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch
    from eqsearch.engine.index import IndexAdmin, MigrationReport
    from eqsearch.engine.latex.converter import ConversionResult, KatexConverter
    from eqsearch.engine.model.encoder import Encoder
    from eqsearch.engine.search.service import SearchService
    from eqsearch.ingest.jobs import IngestJobConfig, JobRunner

log = logging.getLogger(__name__)

MAX_RENDER_CHARS = 4000
#: Equations per bulk flush of a job started from the web: small, so that progress moves visibly.
JOB_BATCH_EQUATIONS = 50


class BackendUnavailableError(EqsearchError):
    """Elasticsearch (or another backend the page needs) does not answer; pages show 503."""

    exit_code = 5


class NotIndexedError(EqsearchError):
    """The deployment has no index to search yet."""


class NotFoundError(EqsearchError):
    """The equation, paper, index or job asked for does not exist."""


class InvalidRequestError(EqsearchError):
    """The request cannot be carried out as given (a bad path, deleting a live index, ...)."""


@dataclass(frozen=True)
class IndexRow:
    """One index as the admin pages list it.

    Args:
        name: the concrete index (``<prefix>-<kind>-v<N>``).
        kind: ``equations``, ``papers`` or ``jobs``.
        version: N.
        alias: the alias pointing at it, or None.
        docs: document count (primaries).
        size_bytes: store size (primaries).
        mapping_version: the mapping version recorded in the index.
        current_mapping: whether that is the code's current mapping version.
        analyzer: the text analyzer it was built with.
    """

    name: str
    kind: str
    version: int
    alias: str | None
    docs: int
    size_bytes: int
    mapping_version: int | None
    current_mapping: bool
    analyzer: str | None


class WebServices:
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
                    self._encoder = load_encoder(self.config.model_bundle)
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

    def render(self, latex: str) -> ConversionResult:
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

    # -- indices ---------------------------------------------------------------------------------------------

    def plugin_note(self) -> str:
        """One line on eqsearch's Elasticsearch plugin: on every node (the structural rerank runs inside them), on
        some (a mixed cluster: not used), or on none (the plain requests)."""
        from eqsearch.engine.search.plugin import detect_plugin

        with self._elasticsearch("asking the nodes for their plugins"):
            return detect_plugin(self.client).note

    def indices(self) -> list[IndexRow]:
        """The deployment's versioned indices with their alias, counts and mapping version."""
        from eqsearch.engine.index import MAPPING_VERSIONS

        with self._elasticsearch("listing indices"):
            listed = self.index_admin.list()
        return [
            IndexRow(
                name=info.name,
                kind=info.kind,
                version=info.version,
                alias=self.alias(info.kind) if info.aliased else None,
                docs=info.docs,
                size_bytes=info.size_bytes,
                mapping_version=info.mapping_version,
                current_mapping=info.mapping_version == MAPPING_VERSIONS.get(info.kind),
                analyzer=info.analyzer,
            )
            for info in listed
        ]

    def index_row(self, name: str) -> IndexRow:
        """One index of the deployment.

        Raises:
            NotFoundError: no index of this deployment has that name.
        """
        for row in self.indices():
            if row.name == name:
                return row
        raise NotFoundError(f"no index named {name!r} under the prefix {self.prefix!r}")

    def mapping(self, name: str) -> dict[str, Any]:
        """The full mapping of one of the deployment's indices."""
        row = self.index_row(name)
        with self._elasticsearch("reading a mapping"):
            return dict(self.client.indices.get_mapping(index=row.name)[row.name]["mappings"])

    def _index_options(self, kind: str) -> Any:
        admin = self.index_admin
        existing = admin.options_of(kind)
        if existing is not None:
            return existing
        try:
            encoder = self.encoder
            return admin.default_options(dims=encoder.dim, similarity=encoder.similarity, encoder=encoder.identity)
        except EqsearchError:  # no bundle: the engine's default vector shape
            return admin.default_options()

    def create_index(self, kind: str) -> str:
        """Create the first version of `kind`'s index and point its alias at it.

        Raises:
            InvalidRequestError: `kind` is unknown, or the alias already exists (migrate instead).
        """
        from eqsearch.engine.index import INDEX_KINDS

        if kind not in INDEX_KINDS:
            raise InvalidRequestError(f"unknown index kind {kind!r}; choose one of {', '.join(INDEX_KINDS)}")
        with self._elasticsearch("creating an index"):
            name = self.index_admin.create(kind, self._index_options(kind))
        log.info("created index %s", name)
        return name

    def start_migration(self, kind: str) -> None:
        """Migrate `kind` in a thread of this process: copy its index into a new version with the code's mapping and
        swap the alias (the old index is kept). A migration of a large index takes minutes, longer than a web
        request may (gunicorn stops a worker whose request runs past its timeout), so the page returns at once and
        `migration` reports the copy's progress, to every worker, from the lock record in Elasticsearch;
        `last_migrations` says how it ended.

        Running ingest jobs pause their writes for the copy and carry on into the new index (see
        `eqsearch.engine.index.migration.migrate`); searches keep answering from the old index until the swap.

        Args:
            kind: ``equations``, ``papers`` or ``jobs``.

        Raises:
            InvalidRequestError: unknown kind, no alias yet, or another migration in progress.
        """
        from eqsearch.engine.index import INDEX_KINDS

        if kind not in INDEX_KINDS:
            raise InvalidRequestError(f"unknown index kind {kind!r}; choose one of {', '.join(INDEX_KINDS)}")
        with self._elasticsearch("checking the index before migrating"):
            if self.index_admin.current(kind) is None:
                raise InvalidRequestError(f"{self.alias(kind)} does not exist yet: create the {kind} index first")
        running = self.migration()
        if running is not None and not running["stalled"]:
            raise InvalidRequestError(f"another migration is in progress: {running['summary']}")

        from eqsearch.ingest.jobs import AlreadyRunningError

        def migrate() -> MigrationReport:
            with self._elasticsearch("migrating"):
                return self.index_admin.migrate(kind)

        try:  # returns once the migration has taken its lock, so that the page it returns to shows it
            self.runner.start_migration(kind, migrate, started=lambda: self.migration() is not None)
        except AlreadyRunningError as error:
            raise InvalidRequestError(error.message) from error

    def migration(self) -> dict[str, Any] | None:
        """The migration in progress (or one whose process died and left its lock), for the admin pages; or None.

        Returns:
            ``kind``, ``source``, ``target``, ``started_at``, ``host``, ``pid``, ``summary`` (one sentence),
            ``copied`` and ``total`` (documents; ``total`` is None until the copy starts or when the jobs index is
            migrated, whose lock cannot be updated) and ``stalled`` (its process is gone: the next migration of
            that kind cleans up after it).
        """
        with self._elasticsearch("reading the migration lock"):
            admin = self.index_admin
            lock = admin.migration_lock()
            if lock is None or admin.migration_finished(lock):
                return None
        return {
            "kind": lock.kind,
            "source": lock.source,
            "target": lock.target,
            "started_at": lock.started_at,
            "host": lock.host,
            "pid": lock.pid,
            "summary": lock.describe(),
            "copied": lock.copied,
            "total": lock.total,
            "stalled": lock.holder_alive() is False,
        }

    def last_migrations(self) -> list[dict[str, Any]]:
        """How the last migration of each index kind ended (``kind``, ``state``, ``source``, ``target``,
        ``finished_at``, ``copied``, ``seconds``, ``message``), most recent first."""
        with self._elasticsearch("reading past migrations"):
            outcomes = self.index_admin.last_migrations()
        rows = [asdict(outcome) for outcome in outcomes.values()]
        return sorted(rows, key=lambda row: row["finished_at"], reverse=True)

    def delete_index(self, name: str) -> None:
        """Delete an index the alias does not point at.

        Raises:
            NotFoundError: no index of this deployment has that name.
            InvalidRequestError: the alias points at it (searches read it).
        """
        self.index_row(name)
        with self._elasticsearch("deleting an index"):
            self.index_admin.delete(name)
        log.info("deleted index %s", name)

    # -- ingest jobs -----------------------------------------------------------------------------------------

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
        path = Path(text).expanduser()
        if not path.is_absolute():
            raise InvalidRequestError(f"{text!r} is not an absolute path; give the full path on the server")
        path = path.resolve()
        root = self.config.ingest_root
        if root is not None and not path.is_relative_to(root.resolve()):
            raise InvalidRequestError(f"{path} is outside the ingest folder {root}; ingest only reads under it")
        if not path.exists():
            raise InvalidRequestError(f"{path} does not exist on the server")
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
            InvalidRequestError: the path is not absolute, outside the ingest folder or missing; or that job is
                already running; or no model bundle can be loaded.
        """
        from eqsearch.ingest.config import ExtractConfig
        from eqsearch.ingest.jobs import IngestJobConfig

        config = IngestJobConfig(
            sources=(self._check_path(raw_path),),
            index_prefix=self.prefix,
            shards=self.config.es.shards,
            replicas=self.config.es.replicas,
            batch_equations=JOB_BATCH_EQUATIONS,
            restart=restart,
            extract=ExtractConfig(inline=inline),
        )
        return self._launch(config, wait)

    def resume_job(self, job_id: str, *, wait: bool = False) -> dict[str, Any]:
        """Run a failed or interrupted job again from its checkpoints.

        Raises:
            NotFoundError: no job has that id.
            InvalidRequestError: the job is running or finished.
        """
        from eqsearch.ingest.config import ExtractConfig
        from eqsearch.ingest.jobs import IngestJobConfig

        record = self.job(job_id)
        if not record["resumable"]:
            raise InvalidRequestError(f"job {job_id} is {record['state']}; only a failed or interrupted job resumes")
        inline = (record.get("options") or {}).get("inline") is not False  # as the job was started
        config = IngestJobConfig(
            sources=tuple(record.get("sources") or ()),
            index_prefix=self.prefix,
            shards=self.config.es.shards,
            replicas=self.config.es.replicas,
            job_id=job_id,
            batch_equations=JOB_BATCH_EQUATIONS,
            extract=ExtractConfig(inline=inline),
        )
        return self._launch(config, wait)

    def _launch(self, config: IngestJobConfig, wait: bool) -> dict[str, Any]:
        from eqsearch.ingest.jobs import AlreadyRunningError

        try:
            encoder = self.encoder
        except EqsearchError as error:
            raise InvalidRequestError(f"ingest needs the formula encoder: {error.message}", hint=error.hint) from error
        job_id = config.effective_job_id
        try:  # without `wait`, returns once the job has written its document, so that its page shows real figures
            self.runner.start_job(encoder, config, wait=wait, since=self._job_updated_at(job_id))
        except AlreadyRunningError as error:
            raise InvalidRequestError(error.message) from error
        return self.job(job_id)

    def _job_updated_at(self, job_id: str) -> str | None:
        try:
            return self.job(job_id).get("updated_at")
        except (NotFoundError, BackendUnavailableError):
            return None


def init_app(app: Any, config: WebConfig, encoder: Encoder | None = None) -> WebServices:
    """Attach a `WebServices` to `app` (``app.extensions["eqsearch.services"]``) and close it at process exit."""
    services = WebServices(config, encoder)
    app.extensions["eqsearch.services"] = services
    atexit.register(services.close)
    return services
