"""Versioned indices behind aliases: create, list, describe, migrate (client-side copy + atomic swap), delete.

Plus the two bulk-loading helpers every writer uses: `bulk_index` (streaming bulk with retries and per-document
failure records) and `bulk_loading_settings` (refresh off and no replicas while loading, restored afterwards even
on failure); and what writers need to live with a migration: the `MigrationLock` record and `is_write_block`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import ApiError, BadRequestError, ConflictError, Elasticsearch, NotFoundError, helpers
from elasticsearch import ConnectionError as EsConnectionError
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.es.local_node import pid_alive
from eqsearch.engine.index.mappings import (
    INDEX_KINDS,
    MAPPING_VERSIONS,
    VECTOR_FIELD,
    IndexOptions,
    alias_name,
    index_definition,
    parse_version,
    versioned_name,
)

RETRY_STATUSES = (429, 502, 503, 504)

#: Id of the migration lock in the jobs index. No job or checkpoint id contains ':' (job ids are [A-Za-z0-9._-]).
MIGRATION_LOCK_ID = "eqsearch:migration"
#: Id prefix of the record of each kind's last migration (``eqsearch:last-migration:equations``): how it ended.
LAST_MIGRATION_ID = "eqsearch:last-migration:"
#: The least time between two progress updates of a running migration's lock record.
PROGRESS_SECONDS = 1.0
#: How long a read waits for the shard of an index that is being created to start (it answers 503 until then).
SHARD_START_SECONDS = 5.0


class IndexOperationError(EqsearchError):
    """An index operation cannot be done as asked."""

    exit_code = 8


class MigrationError(IndexOperationError):
    """A migration stopped before the alias swap; the old index still serves."""


@dataclass(frozen=True)
class IndexInfo:
    """One concrete eqsearch index."""

    name: str
    kind: str
    version: int
    aliased: bool
    docs: int
    size_bytes: int
    mapping_version: int | None
    analyzer: str | None


@dataclass(frozen=True)
class BulkFailure:
    """One document Elasticsearch did not take.

    Args:
        doc_id: the document's id.
        index: the index it was for.
        status: the HTTP status of the item (0 when the request itself failed).
        error_type: Elasticsearch's error type (``mapper_parsing_exception``, ...) or the exception name.
        reason: Elasticsearch's reason sentence.
        op: the bulk operation (``index``, ``update``, ...).
    """

    doc_id: str
    index: str
    status: int
    error_type: str
    reason: str
    op: str = "index"

    def to_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "index": self.index,
            "status": self.status,
            "error_type": self.error_type,
            "reason": self.reason,
            "op": self.op,
        }


@dataclass
class BulkReport:
    """What a bulk run did: counts, and every failed document."""

    ok: int = 0
    failures: list[BulkFailure] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    def errors_by_type(self) -> Counter[str]:
        return Counter(failure.error_type for failure in self.failures)


@dataclass(frozen=True)
class MigrationReport:
    """The outcome of a migration."""

    kind: str
    source: str
    target: str
    copied: int
    source_count: int
    target_count: int
    seconds: float
    old_deleted: bool


@dataclass(frozen=True)
class MigrationLock:
    """The record of a running migration, kept in the jobs index under `MIGRATION_LOCK_ID` (one per deployment).

    Ingest jobs read it before each write and wait while it stands; a second migration refuses to start.

    Args:
        kind: the index kind being migrated.
        source: the concrete index the alias pointed at (write-blocked for the copy).
        target: the new concrete index.
        pid: the migrating process.
        host: the machine it runs on.
        started_at: ISO 8601 time the migration took the lock.
        source_was_blocked: the source already had a write block (an abandoned migration leaves it in place).
        copied: documents copied so far (as last recorded; not recorded while the jobs index itself is migrated).
        total: documents to copy (None until the copy starts).
    """

    kind: str
    source: str
    target: str
    pid: int
    host: str
    started_at: str
    source_was_blocked: bool = False
    copied: int = 0
    total: int | None = None

    def holder_alive(self) -> bool | None:
        """Whether the migrating process still runs: None when it runs on another machine (unknown)."""
        if self.host != socket.gethostname():
            return None
        return self.pid == os.getpid() or pid_alive(self.pid)

    def describe(self) -> str:
        return (
            f"the migration of {self.kind} ({self.source} -> {self.target}, pid {self.pid} on {self.host}, "
            f"started {self.started_at[:19].replace('T', ' ')})"
        )

    def to_record(self) -> dict[str, Any]:
        return {
            "record": "migration",
            "state": "running",
            "source": self.source,
            "sources": [self.source, self.target],
            "pid": self.pid,
            "host": self.host,
            "created_at": self.started_at,
            "updated_at": self.started_at,
            "message": f"migrating {self.kind}: {self.source} -> {self.target}",
            "options": {
                "kind": self.kind,
                "source": self.source,
                "target": self.target,
                "source_was_blocked": self.source_was_blocked,
            },
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> MigrationLock:
        options = record.get("options") or {}
        return cls(
            kind=str(options.get("kind", "")),
            source=str(options.get("source", "")),
            target=str(options.get("target", "")),
            pid=int(record.get("pid") or 0),
            host=str(record.get("host", "")),
            started_at=str(record.get("created_at", "")),
            source_was_blocked=bool(options.get("source_was_blocked", False)),
            copied=int((record.get("counts") or {}).get("copied") or 0),
            total=(record.get("counts") or {}).get("total"),
        )


@dataclass(frozen=True)
class MigrationOutcome:
    """How the last migration of one index kind ended, as recorded in the jobs index.

    Args:
        kind: the index kind.
        state: ``finished`` (the alias moved) or ``failed`` (nothing changed).
        source: the index the alias pointed at before.
        target: the new index (deleted again when the migration failed).
        finished_at: ISO 8601 time it ended.
        copied: documents copied.
        seconds: how long it ran.
        message: one sentence for people: what happened, and for a failure, why.
    """

    kind: str
    state: str
    source: str
    target: str
    finished_at: str
    copied: int
    seconds: float
    message: str

    def to_record(self) -> dict[str, Any]:
        return {
            "record": "migration-outcome",
            "state": self.state,
            "source": self.source,
            "sources": [self.source, self.target],
            "created_at": self.finished_at,
            "updated_at": self.finished_at,
            "finished_at": self.finished_at,
            "message": self.message,
            "counts": {"copied": self.copied},
            "options": {"kind": self.kind, "target": self.target, "seconds": self.seconds},
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> MigrationOutcome:
        options = record.get("options") or {}
        return cls(
            kind=str(options.get("kind", "")),
            state=str(record.get("state", "")),
            source=str(record.get("source", "")),
            target=str(options.get("target", "")),
            finished_at=str(record.get("finished_at", "")),
            copied=int((record.get("counts") or {}).get("copied") or 0),
            seconds=float(options.get("seconds") or 0.0),
            message=str(record.get("message", "")),
        )


def is_write_block(failure: BulkFailure) -> bool:
    """Whether Elasticsearch refused the document because its index carries a block (a migration's, or another)."""
    return failure.status == 403 and failure.error_type == "cluster_block_exception"


def is_write_block_error(error: ApiError) -> bool:
    """`is_write_block` for a single request's error."""
    return error.meta.status == 403 and getattr(error, "error", "") == "cluster_block_exception"


def _rewritten(
    documents: Iterator[tuple[str, dict[str, Any]]],
    rewrite: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None,
    page: int,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The documents, each page of ``page`` passed through ``rewrite`` (when given)."""
    if rewrite is None:
        yield from documents
        return
    while chunk := list(itertools.islice(documents, page)):
        bodies = rewrite([body for _, body in chunk])
        if len(bodies) != len(chunk):
            raise MigrationError(f"the rewrite returned {len(bodies)} documents for a page of {len(chunk)}")
        yield from ((doc_id, body) for (doc_id, _), body in zip(chunk, bodies, strict=True))


def reencode_vectors(encoder: Any) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """A `IndexAdmin.migrate` rewrite that replaces each equation's vector with ``encoder``'s vector of its MathML.

    An equation without MathML, or whose MathML the encoder refuses, loses its vector (as the ingest job leaves it):
    it stays findable by text, never by a vector of another model.
    """
    from eqsearch.engine.model.featurize import MathMLError

    def encode_one(mathml: str) -> list[float] | None:
        try:
            return [float(x) for x in encoder.encode([mathml])[0]]
        except MathMLError:
            return None

    def rewrite(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = [i for i, body in enumerate(bodies) if body.get("mathml")]
        try:
            vectors: list[list[float] | None] = (
                [[float(x) for x in v] for v in encoder.encode([bodies[i]["mathml"] for i in rows])] if rows else []
            )
        except MathMLError:  # one bad equation in the page: encode the page one by one
            vectors = [encode_one(bodies[i]["mathml"]) for i in rows]
        out = [{k: v for k, v in body.items() if k != VECTOR_FIELD} for body in bodies]
        for i, vector in zip(rows, vectors, strict=True):
            if vector is not None:
                out[i][VECTOR_FIELD] = vector
        return out

    return rewrite


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def probe_text_analyzer(client: Elasticsearch) -> str:
    """``english`` when the cluster has it (module analysis-common), else ``standard``."""
    try:
        client.indices.analyze(analyzer="english", text="equations")
    except BadRequestError:
        return "standard"
    return "english"


def retrying(client: Elasticsearch, max_retries: int = 5) -> Elasticsearch:
    """The client with transport retries on connection errors, timeouts and 429/50x answers."""
    return client.options(max_retries=max_retries, retry_on_timeout=True, retry_on_status=RETRY_STATUSES)


def bulk_index(
    client: Elasticsearch,
    actions: Iterable[dict[str, Any]],
    *,
    chunk_size: int = 500,
    max_chunk_bytes: int = 20 * 1024 * 1024,
    max_retries: int = 5,
    initial_backoff: float = 1.0,
    max_backoff: float = 60.0,
    refresh: bool | str = False,
    on_item: Callable[[bool, dict[str, Any]], None] | None = None,
) -> BulkReport:
    """Send actions with streaming bulk; never raises for a bad document.

    A 429 item is retried with exponential backoff (`helpers.streaming_bulk`'s ``max_retries``); connection errors
    and 429/50x answers to the whole request are retried by the transport. Documents that still fail come back
    as `BulkFailure` records.

    Args:
        client: the client.
        actions: bulk actions (``_index``, ``_id``, ``_source`` or ``_op_type``...).
        chunk_size: documents per request.
        max_chunk_bytes: bytes per request.
        max_retries: retries of 429 items and of failed requests.
        initial_backoff: seconds before the first retry (doubled each time).
        max_backoff: longest wait between retries.
        refresh: passed to each bulk request.
        on_item: called with ``(ok, item)`` for every document, in order.

    Returns:
        Counts and per-document failures.

    Raises:
        elasticsearch.ApiError, elasticsearch.ConnectionError: the cluster kept refusing whole requests after the
            retries (nothing about one document).
    """
    report = BulkReport()
    kwargs: dict[str, Any] = {} if refresh is False else {"refresh": refresh}
    for ok, item in helpers.streaming_bulk(
        retrying(client, max_retries),
        actions,
        chunk_size=chunk_size,
        max_chunk_bytes=max_chunk_bytes,
        raise_on_error=False,
        raise_on_exception=True,
        max_retries=max_retries,
        initial_backoff=initial_backoff,
        max_backoff=max_backoff,
        **kwargs,
    ):
        if ok:
            report.ok += 1
        else:
            report.failures.append(bulk_failure(item))
        if on_item is not None:
            on_item(ok, item)
    return report


def bulk_failure(item: Mapping[str, Any]) -> BulkFailure:
    """A `BulkFailure` from one failed ``streaming_bulk`` item."""
    op, result = next(iter(item.items()))
    error = result.get("error") or {}
    if isinstance(error, str):
        error_type, reason = "error", error
    else:
        error_type = str(error.get("type", "error"))
        reason = str(error.get("reason", ""))
        caused = error.get("caused_by")
        if isinstance(caused, dict) and caused.get("reason"):
            reason = f"{reason}: {caused['reason']}"
    return BulkFailure(
        doc_id=str(result.get("_id", "")),
        index=str(result.get("_index", "")),
        status=int(result.get("status", 0) or 0),
        error_type=error_type,
        reason=reason,
        op=op,
    )


@contextlib.contextmanager
def bulk_loading_settings(
    client: Elasticsearch, index: str, restore_to: Mapping[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """Refresh off and zero replicas on ``index`` while the block runs; the previous values come back afterwards.

    Args:
        client: the client.
        index: the concrete index (or alias) being loaded.
        restore_to: the settings to restore (``refresh_interval``, ``number_of_replicas``); by default the ones in
            force on entry. A resumed job passes the values its first run recorded, since a killed run left the
            bulk settings in place.

    Yields:
        The settings that will be restored.
    """
    if restore_to is None:
        restore_to = current_load_settings(client, index)
    client.indices.put_settings(index=index, settings={"index": {"refresh_interval": "-1", "number_of_replicas": 0}})
    try:
        yield dict(restore_to)
    finally:
        retrying(client).indices.put_settings(index=index, settings={"index": dict(restore_to)})
        retrying(client).indices.refresh(index=index)


def current_load_settings(client: Elasticsearch, index: str) -> dict[str, Any]:
    """The index's ``refresh_interval`` (None = the default) and ``number_of_replicas``."""
    settings = client.indices.get_settings(index=index, flat_settings=True)
    values = next(iter(settings.values()))["settings"]
    refresh = values.get("index.refresh_interval")
    return {
        "refresh_interval": None if refresh in (None, "-1") else refresh,
        "number_of_replicas": int(values.get("index.number_of_replicas", 0)),
    }


class IndexAdmin:
    """Versioned indices of one deployment (an index prefix on one cluster).

    Args:
        client: a connected client.
        prefix: the deployment's index prefix (``EsConfig.index_prefix``).
    """

    def __init__(self, client: Elasticsearch, prefix: str = "eqsearch") -> None:
        self.client = client
        self.prefix = prefix

    # -- names -------------------------------------------------------------------------------------------------
    def alias(self, kind: str) -> str:
        return alias_name(self.prefix, kind)

    def versions(self, kind: str) -> list[int]:
        """Versions of ``kind`` that exist, ascending."""
        pattern = f"{self.prefix}-{kind}-v*"
        names = self.client.indices.get(index=pattern, expand_wildcards="open,closed", ignore_unavailable=True)
        found = (parse_version(self.prefix, kind, name) for name in names)
        return sorted(v for v in found if v is not None)

    def current(self, kind: str) -> str | None:
        """The concrete index the alias points at, or None."""
        try:
            aliases = self.client.indices.get_alias(name=self.alias(kind))
        except NotFoundError:
            return None
        names = sorted(aliases)
        return names[-1] if names else None

    def default_options(
        self, dims: int = 64, similarity: str = "max_inner_product", encoder: str | None = None
    ) -> IndexOptions:
        """Options for this cluster: its best text analyzer, the given vector shape and encoder identity."""
        return IndexOptions(
            dims=dims, similarity=similarity, analyzer=probe_text_analyzer(self.client), encoder=encoder
        )

    # -- create --------------------------------------------------------------------------------------------------
    def create(self, kind: str, options: IndexOptions, *, point_alias: bool = True) -> str:
        """Create the next version of ``kind``; point the alias at it when no alias exists yet.

        Returns:
            The concrete index name.

        Raises:
            IndexOperationError: the alias already points at an index (use `migrate`) and ``point_alias`` is set.
        """
        current = self.current(kind)
        if point_alias and current is not None:
            raise IndexOperationError(
                f"{self.alias(kind)} already points at {current}",
                hint=f"use 'eqsearch index migrate {kind}' to move to a new mapping",
            )
        versions = self.versions(kind)
        name = versioned_name(self.prefix, kind, (versions[-1] + 1) if versions else 1)
        aliases = {self.alias(kind): {"is_write_index": True}} if point_alias else None
        self._create_index(kind, name, options, aliases=aliases)
        return name

    def _create_index(self, kind: str, name: str, options: IndexOptions, *, aliases: dict[str, Any] | None) -> None:
        body = index_definition(kind, options)
        self.client.indices.create(index=name, settings=body["settings"], mappings=body["mappings"], aliases=aliases)

    def ensure(self, options: IndexOptions, kinds: Iterable[str] = INDEX_KINDS) -> dict[str, str]:
        """Every kind's alias, creating the first version where none exists. Returns kind -> concrete index."""
        out = {}
        for kind in kinds:
            current = self.current(kind)
            if current is None:
                try:
                    current = self.create(kind, options)
                except BadRequestError as error:  # another process created it meanwhile
                    if "resource_already_exists_exception" not in str(error):
                        raise
                    current = self.current(kind) or versioned_name(self.prefix, kind, 1)
            out[kind] = current
        return out

    # -- inspect -------------------------------------------------------------------------------------------------
    def list(self) -> list[IndexInfo]:
        """Every versioned index of this prefix, by kind and version."""
        names = self.client.indices.get(index=f"{self.prefix}-*-v*", expand_wildcards="open", ignore_unavailable=True)
        if not names:
            return []
        stats = self.client.indices.stats(index=list(names), metric="docs,store")["indices"]
        infos = []
        for name, body in names.items():
            kind, version = self._kind_version(name)
            if kind is None or version is None:
                continue
            meta = body.get("mappings", {}).get("_meta", {})
            primaries = stats.get(name, {}).get("primaries", {})
            infos.append(
                IndexInfo(
                    name=name,
                    kind=kind,
                    version=version,
                    aliased=self.alias(kind) in body.get("aliases", {}),
                    docs=int(primaries.get("docs", {}).get("count", 0)),
                    size_bytes=int(primaries.get("store", {}).get("size_in_bytes", 0)),
                    mapping_version=meta.get("mapping_version"),
                    analyzer=meta.get("analyzer"),
                )
            )
        return sorted(infos, key=lambda info: (INDEX_KINDS.index(info.kind), info.version))  # type: ignore[arg-type]

    def _kind_version(self, name: str) -> tuple[str | None, int | None]:
        for kind in INDEX_KINDS:
            version = parse_version(self.prefix, kind, name)
            if version is not None:
                return kind, version
        return None, None

    def describe(self, kind: str) -> dict[str, Any]:
        """Alias, concrete index, mapping meta (analyzer, vector options), settings and counts of ``kind``.

        Raises:
            IndexOperationError: no alias for ``kind`` exists.
        """
        current = self.current(kind)
        if current is None:
            raise IndexOperationError(
                f"no {self.alias(kind)} alias", hint=f"create it with 'eqsearch index create {kind}'"
            )
        mapping = self.client.indices.get_mapping(index=current)[current]["mappings"]
        meta = mapping.get("_meta", {})
        settings = current_load_settings(self.client, current)
        stats = self.client.indices.stats(index=current, metric="docs,store")["indices"][current]["primaries"]
        vector = mapping.get("properties", {}).get("vector")
        return {
            "alias": self.alias(kind),
            "index": current,
            "versions": self.versions(kind),
            "mapping_version": meta.get("mapping_version"),
            "code_mapping_version": MAPPING_VERSIONS[kind],
            "stale": meta.get("mapping_version") != MAPPING_VERSIONS[kind],
            "analyzer": meta.get("analyzer"),
            "cluster_analyzer": probe_text_analyzer(self.client),
            "vector": vector,
            "docs": int(stats["docs"]["count"]),
            "size_bytes": int(stats["store"]["size_in_bytes"]),
            **settings,
        }

    def options_of(self, kind: str) -> IndexOptions | None:
        """The `IndexOptions` the current index of ``kind`` was created with (from its ``_meta``)."""
        current = self.current(kind)
        if current is None:
            return None
        meta = self.client.indices.get_mapping(index=current)[current]["mappings"].get("_meta", {})
        return IndexOptions(
            dims=int(meta.get("dims", 64)),
            similarity=str(meta.get("similarity", "max_inner_product")),
            index_type=str(meta.get("index_type", "hnsw")),
            analyzer=str(meta.get("analyzer", "standard")),
            encoder=meta.get("encoder"),
        )

    # -- migrate -------------------------------------------------------------------------------------------------
    def migrate(
        self,
        kind: str,
        options: IndexOptions | None = None,
        *,
        batch_size: int = 1000,
        delete_old: bool = False,
        on_progress: Callable[[int, int], None] | None = None,
        take_over: bool = False,
        rewrite: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
    ) -> MigrationReport:
        """Move ``kind`` to a new version: create it, copy every document (vectors included), verify, swap.

        With ``rewrite``, each page of documents is changed on its way (``eqsearch index migrate equations
        --reencode`` puts vectors of a new model bundle into them): a model upgrade without stopping search.

        Searches keep going to the old index until the alias moves in one atomic ``_aliases`` call, so they never
        stop and never see a document twice (the alias always names one index). Ingest jobs may run meanwhile:

        1. The migration takes a lock record in the jobs index (`MigrationLock`); jobs look for it before each
           write and wait while it stands, so they pause between bulk requests instead of failing.
        2. It puts a write block on the old index. Elasticsearch answers that call only once every write already
           in flight on the index has finished, and refuses every later one (403 ``cluster_block_exception``): a
           job that looked for the lock just before it was taken has its bulk refused, waits, and sends it again.
        3. The old index is therefore frozen while it is copied, and the counts must match exactly.
        4. The alias moves; the lock goes; waiting jobs send their writes through the alias, to the new index.
           The old index keeps its write block, so a writer that still resolved it is refused and retries.

        Why a pause and not writes routed to the new index during the copy: ingest also updates documents
        (``cited_by_count``) and deletes them (equations of an earlier version of a paper). An update or delete
        that reaches the new index before the copy brings that document over would be lost or undone by the
        copy, and every writer would have to learn of the migration at the very instant it starts. The write
        block is a barrier Elasticsearch itself enforces; its price is that ingest writes wait for the copy.

        A migration that dies (``kill -9``) leaves its lock and the block; jobs on the same machine then stop
        with an error that says to run the migration again, which cleans up (deletes the half-made index, lifts
        the block) and starts afresh. A lock taken on another machine cannot be checked from here: ``take_over``
        clears it, for when that process is known to be gone.

        Args:
            kind: ``equations``, ``papers`` or ``jobs``.
            options: the new index's options (default: the current index's, with the code's current mapping).
            batch_size: documents per scroll page and bulk request.
            delete_old: delete the old index after the swap.
            on_progress: called with ``(copied, total)``.
            take_over: clear the lock of another migration whose process is known to be gone.
            rewrite: called with each page of document sources (at most ``batch_size``), returns them changed, in
                the same order (ids stay).

        Raises:
            MigrationError: another migration is running, or the copy failed or the counts differ; the new index is
                deleted, the block lifted, the alias unchanged.
        """
        began = time.perf_counter()
        source = self.current(kind)
        if source is None:
            raise IndexOperationError(f"no {self.alias(kind)} alias to migrate", hint=f"eqsearch index create {kind}")
        options = options or self.options_of(kind) or IndexOptions()
        self._clear_finished_or_dead_lock(take_over=take_over)
        versions = self.versions(kind)
        target = versioned_name(self.prefix, kind, (versions[-1] + 1) if versions else 1)
        lock = MigrationLock(
            kind, source, target, os.getpid(), socket.gethostname(), _now(), self.write_blocked(source)
        )
        copied = 0
        self._take_lock(lock)
        try:
            self._create_index(kind, target, options, aliases=None)
            # The barrier: answered once the writes in flight on `source` are done; later ones are refused.
            self.client.indices.add_block(index=source, block="write")
            self.client.indices.refresh(index=source)
            total = int(self.client.count(index=source)["count"])
            recorded_at = 0.0
            self._record_progress(lock, copied, total)

            def progress(ok: bool, item: dict[str, Any]) -> None:
                nonlocal copied, recorded_at
                copied += 1
                if copied % batch_size == 0:
                    if on_progress is not None:
                        on_progress(copied, total)
                    if time.monotonic() - recorded_at >= PROGRESS_SECONDS:
                        self._record_progress(lock, copied, total)
                        recorded_at = time.monotonic()

            with bulk_loading_settings(self.client, target, restore_to=current_load_settings(self.client, target)):
                report = bulk_index(
                    self.client,
                    (
                        {"_index": target, "_id": doc_id, "_source": body}
                        for doc_id, body in _rewritten(self.scan(source, batch_size), rewrite, batch_size)
                    ),
                    chunk_size=batch_size,
                    on_item=progress,
                )
            if report.failures:
                first = report.failures[0]
                raise MigrationError(
                    f"{report.failed} documents failed to copy from {source} to {target}; first: {first.doc_id}: "
                    f"{first.error_type}: {first.reason}",
                    hint="fix the mapping so it accepts the existing documents, then migrate again",
                )
            self.client.indices.refresh(index=target)
            source_count = int(self.client.count(index=source)["count"])
            target_count = int(self.client.count(index=target)["count"])
            if source_count != target_count:  # nothing writes to either while the block stands: a real fault
                raise MigrationError(
                    f"{target} holds {target_count} documents but {source} holds {source_count}",
                    hint="run the migration again; if it happens again, check the cluster's health and logs",
                )
            self.client.indices.update_aliases(
                actions=[
                    {"remove": {"index": source, "alias": self.alias(kind)}},
                    {"add": {"index": target, "alias": self.alias(kind), "is_write_index": True}},
                ]
            )
        except BaseException as error:
            with contextlib.suppress(ApiError, EsConnectionError):
                self._undo(lock)
                if isinstance(error, Exception):  # not for Ctrl-C: the user saw it stop
                    why = error.message if isinstance(error, EqsearchError) else str(error)
                    self._record_outcome(lock, "failed", copied, began, f"failed, nothing changed: {why}")
            raise
        # A lock left here (connection lost) is harmless: its target is behind the alias, so it reads as finished.
        with contextlib.suppress(ApiError, EsConnectionError):
            self._drop_lock()
            self._record_outcome(
                lock, "finished", copied, began, f"{copied:,} documents copied; {self.alias(kind)} now reads {target}"
            )
        if on_progress is not None:
            on_progress(copied, total)
        if delete_old:
            self.client.indices.delete(index=source)
        return MigrationReport(
            kind, source, target, copied, source_count, target_count, time.perf_counter() - began, delete_old
        )

    def migration_lock(self) -> MigrationLock | None:
        """The lock of the migration in progress (or of one that died), or None.

        A real-time get: it sees a lock the moment it is taken, without a refresh. A jobs index that another thread
        or process is creating at this very moment (a first migration creates it) exists before its shard has
        started, and answers 503 for that moment: asked again for up to `SHARD_START_SECONDS`.
        """
        deadline = time.monotonic() + SHARD_START_SECONDS
        while True:
            try:
                record = self.client.get(index=self.alias("jobs"), id=MIGRATION_LOCK_ID)["_source"]
            except NotFoundError:  # no lock, or no jobs index at all
                return None
            except ApiError as error:
                if error.meta.status != 503 or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
                continue
            return MigrationLock.from_record(record)

    def last_migrations(self) -> dict[str, MigrationOutcome]:
        """How the last migration of each index kind ended (kinds never migrated are absent)."""
        ids = [f"{LAST_MIGRATION_ID}{kind}" for kind in INDEX_KINDS]
        try:
            docs = self.client.mget(index=self.alias("jobs"), ids=ids)["docs"]
        except NotFoundError:  # no jobs index yet
            return {}
        outcomes = [MigrationOutcome.from_record(doc["_source"]) for doc in docs if doc.get("found")]
        return {outcome.kind: outcome for outcome in outcomes}

    def _record_progress(self, lock: MigrationLock, copied: int, total: int) -> None:
        """Best effort: the copy's progress in the lock record, for other processes to show (not when the jobs
        index itself is migrated: the lock then lives in the write-blocked source)."""
        if lock.kind == "jobs":
            return
        with contextlib.suppress(ApiError, EsConnectionError):
            self.client.update(
                index=self.alias("jobs"),
                id=MIGRATION_LOCK_ID,
                doc={"counts": {"copied": copied, "total": total}, "updated_at": _now()},
            )

    def _record_outcome(self, lock: MigrationLock, state: str, copied: int, began: float, message: str) -> None:
        """Best effort: how the migration ended, in the jobs index (read by `last_migrations`)."""
        outcome = MigrationOutcome(
            lock.kind, state, lock.source, lock.target, _now(), copied, round(time.perf_counter() - began, 1), message
        )
        with contextlib.suppress(ApiError, EsConnectionError):
            self.client.index(
                index=self.alias("jobs"), id=f"{LAST_MIGRATION_ID}{lock.kind}", document=outcome.to_record()
            )

    def migration_finished(self, lock: MigrationLock) -> bool:
        """Whether the lock's alias already points at its target (only the lock's removal was left to do)."""
        return self.current(lock.kind) == lock.target

    def write_blocked(self, index: str) -> bool:
        """Whether ``index`` (a concrete index or an alias) carries a write block."""
        try:
            settings = self.client.indices.get_settings(index=index, name="index.blocks.*", flat_settings=True)
        except NotFoundError:
            return False
        return any(
            str(body.get("settings", {}).get("index.blocks.write", "false")) == "true" for body in settings.values()
        )

    def _clear_finished_or_dead_lock(self, *, take_over: bool) -> None:
        lock = self.migration_lock()
        if lock is None:
            return
        if self.migration_finished(lock):
            self._drop_lock()
            return
        if lock.holder_alive() is False or take_over:
            self._undo(lock)
            return
        where = "it runs on another machine" if lock.holder_alive() is None else "its process is alive"
        raise MigrationError(
            f"{lock.describe()} is still in progress ({where})",
            hint=(
                "wait for it to finish; if its process is gone, run "
                f"'eqsearch index migrate {lock.kind} --take-over' to clean up after it and migrate"
            ),
        )

    def _take_lock(self, lock: MigrationLock) -> None:
        if lock.kind != "jobs":  # the lock lives in the jobs index
            self.ensure(IndexOptions(analyzer=probe_text_analyzer(self.client)), kinds=("jobs",))
        try:
            self.client.create(index=self.alias("jobs"), id=MIGRATION_LOCK_ID, document=lock.to_record())
        except ConflictError:
            other = self.migration_lock()
            raise MigrationError(
                f"{other.describe() if other else 'another migration'} started meanwhile",
                hint="wait for it to finish, then migrate again",
            ) from None
        except ApiError as error:
            if not is_write_block_error(error):
                raise
            raise MigrationError(
                f"{self.alias('jobs')} is write-blocked, so no migration can record itself",
                hint=f"lift the block (PUT {self.current('jobs')}/_settings with index.blocks.write: null) if no "
                "migration is running",
            ) from None

    def _drop_lock(self) -> None:
        with contextlib.suppress(NotFoundError):
            self.client.delete(index=self.alias("jobs"), id=MIGRATION_LOCK_ID)

    def _undo(self, lock: MigrationLock) -> None:
        """Clean up after a migration that did not swap: delete its target, lift its block, drop its lock."""
        if not self.migration_finished(lock):
            self.client.indices.delete(index=lock.target, ignore_unavailable=True)
            if not lock.source_was_blocked:
                # before the lock goes: when the jobs index is migrated, the lock lives in the blocked source
                self.client.indices.put_settings(index=lock.source, settings={"index.blocks.write": None})
        self._drop_lock()

    def scan(
        self,
        index: str,
        batch_size: int = 1000,
        *,
        query: Mapping[str, Any] | None = None,
        source: bool | list[str] = True,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Documents of ``index`` as ``(id, source)``, through a point in time (vectors included in full sources).

        Args:
            index: a concrete index or an alias.
            batch_size: documents per page.
            query: only the documents it matches (default: all).
            source: ``True`` for whole sources, a list of fields for only those, ``False`` for none (``{}``).
        """
        pit = self.client.open_point_in_time(index=index, keep_alive="2m")["id"]
        try:
            search_after = None
            while True:
                body: dict[str, Any] = {
                    "size": batch_size,
                    "pit": {"id": pit, "keep_alive": "2m"},
                    "sort": [{"_shard_doc": "asc"}],
                    # 9.2+ leave vectors out of _source by default; a copy must carry them
                    "_source": {"exclude_vectors": False} if source is True else source,
                    "track_total_hits": False,
                }
                if query is not None:
                    body["query"] = dict(query)
                if search_after is not None:
                    body["search_after"] = search_after
                response = self.client.search(body=body)
                pit = response.get("pit_id", pit)
                hits = response["hits"]["hits"]
                if not hits:
                    return
                for hit in hits:
                    yield hit["_id"], hit.get("_source") or {}
                search_after = hits[-1]["sort"]
        finally:
            with contextlib.suppress(ApiError, EsConnectionError):
                self.client.close_point_in_time(id=pit)

    # -- delete --------------------------------------------------------------------------------------------------
    def delete(self, index: str, *, force: bool = False) -> None:
        """Delete one concrete index of this prefix.

        Raises:
            IndexOperationError: the name is not one of this prefix's versioned indices, or the alias points at it and
                ``force`` is not set.
        """
        kind, version = self._kind_version(index)
        if kind is None or version is None:
            raise IndexOperationError(
                f"{index!r} is not a versioned index of prefix {self.prefix!r}",
                hint="see 'eqsearch index list' for the names",
            )
        if self.current(kind) == index and not force:
            raise IndexOperationError(
                f"{self.alias(kind)} points at {index}; deleting it would stop {kind} search",
                hint="migrate first, or pass --force to delete it anyway",
            )
        lock = self.migration_lock()
        copying = lock is not None and lock.target == index and lock.holder_alive() is not False
        if copying and lock is not None and not self.migration_finished(lock) and not force:
            raise IndexOperationError(
                f"{lock.describe()} is copying into {index}",
                hint="wait for the migration to finish (or fail); --force deletes it anyway and fails the migration",
            )
        try:
            self.client.indices.delete(index=index)
        except NotFoundError:
            raise IndexOperationError(f"no index {index}", hint="see 'eqsearch index list'") from None
