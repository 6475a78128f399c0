"""What the admin pages do to a deployment's indices: list them, show a mapping, create, migrate, delete.

A part of `eqsearch.webui.services.WebServices` (which views call), kept in a module of its own: it uses the
gateway's checked client, its `IndexAdmin` and its thread runner, and raises the pages' errors
(`eqsearch.webui.service_errors`). A migration runs in a thread of the web process and reports its progress to every
worker from its lock record in Elasticsearch.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.webui.service_base import InvalidRequestError, NotFoundError, ServicesCore

if TYPE_CHECKING:
    from eqsearch.engine.index import MigrationReport

log = logging.getLogger(__name__)


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


class IndexOperations(ServicesCore):
    """The index and migration half of the admin pages (see the module docstring)."""

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
