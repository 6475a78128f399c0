"""The records a migration keeps in the jobs index: its lock and how each kind's last migration ended.

The lock (`MigrationLock`, one per deployment under `MIGRATION_LOCK_ID`) says who migrates which kind, on which
machine, whether that process still lives, and how far its copy got; ingest jobs read it before each write and wait
while it stands, and a second migration refuses to start. The outcome (`MigrationOutcome`, one per kind) says how
the last migration ended, so that any process can show it. `migration` takes, updates and drops these records.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, ConflictError, NotFoundError
from elasticsearch import ConnectionError as EsConnectionError
from eqsearch.engine.es import pid_alive
from eqsearch.engine.index.bulk import is_write_block_error
from eqsearch.engine.index.errors import MigrationError
from eqsearch.engine.index.mappings import INDEX_KINDS

if TYPE_CHECKING:
    from eqsearch.engine.index.admin import IndexAdmin

#: Id of the migration lock in the jobs index. No job or checkpoint id contains ':' (job ids are [A-Za-z0-9._-]).
MIGRATION_LOCK_ID = "eqsearch:migration"
#: Id prefix of the record of each kind's last migration (``eqsearch:last-migration:equations``): how it ended.
LAST_MIGRATION_ID = "eqsearch:last-migration:"
#: How long a read waits for the shard of an index that is being created to start (it answers 503 until then).
SHARD_START_SECONDS = 5.0


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
        """One phrase for people: which migration, where, since when."""
        return (
            f"the migration of {self.kind} ({self.source} -> {self.target}, pid {self.pid} on {self.host}, "
            f"started {self.started_at[:19].replace('T', ' ')})"
        )

    def to_record(self) -> dict[str, Any]:
        """The lock's document in the jobs index."""
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
        """The lock a `to_record` document (with the progress recorded since) describes."""
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
        """The outcome's document in the jobs index."""
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
        """The outcome a `to_record` document describes."""
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


def now() -> str:
    """The time of a record: ISO 8601, UTC, to the millisecond."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def migration_lock(admin: IndexAdmin) -> MigrationLock | None:
    """The lock of the migration in progress (or of one that died), or None.

    A real-time get: it sees a lock the moment it is taken, without a refresh. A jobs index that another thread
    or process is creating at this very moment (a first migration creates it) exists before its shard has
    started, and answers 503 for that moment: asked again for up to `SHARD_START_SECONDS`.
    """
    deadline = time.monotonic() + SHARD_START_SECONDS
    while True:
        try:
            record = admin.client.get(index=admin.alias("jobs"), id=MIGRATION_LOCK_ID)["_source"]
        except NotFoundError:  # no lock, or no jobs index at all
            return None
        except ApiError as error:
            if error.meta.status != 503 or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
            continue
        return MigrationLock.from_record(record)


def migration_finished(admin: IndexAdmin, lock: MigrationLock) -> bool:
    """Whether the lock's alias already points at its target (only the lock's removal was left to do)."""
    return admin.current(lock.kind) == lock.target


def last_migrations(admin: IndexAdmin) -> dict[str, MigrationOutcome]:
    """How the last migration of each index kind ended (kinds never migrated are absent)."""
    ids = [f"{LAST_MIGRATION_ID}{kind}" for kind in INDEX_KINDS]
    try:
        docs = admin.client.mget(index=admin.alias("jobs"), ids=ids)["docs"]
    except NotFoundError:  # no jobs index yet
        return {}
    outcomes = [MigrationOutcome.from_record(doc["_source"]) for doc in docs if doc.get("found")]
    return {outcome.kind: outcome for outcome in outcomes}


def record_progress(admin: IndexAdmin, lock: MigrationLock, copied: int, total: int) -> None:
    """Best effort: the copy's progress in the lock record, for other processes to show (not when the jobs
    index itself is migrated: the lock then lives in the write-blocked source)."""
    if lock.kind == "jobs":
        return
    with contextlib.suppress(ApiError, EsConnectionError):
        admin.client.update(
            index=admin.alias("jobs"),
            id=MIGRATION_LOCK_ID,
            doc={"counts": {"copied": copied, "total": total}, "updated_at": now()},
        )


def record_outcome(admin: IndexAdmin, lock: MigrationLock, state: str, copied: int, began: float, message: str) -> None:
    """Best effort: how the migration ended, in the jobs index (read by `last_migrations`)."""
    outcome = MigrationOutcome(
        lock.kind, state, lock.source, lock.target, now(), copied, round(time.perf_counter() - began, 1), message
    )
    with contextlib.suppress(ApiError, EsConnectionError):
        admin.client.index(
            index=admin.alias("jobs"), id=f"{LAST_MIGRATION_ID}{lock.kind}", document=outcome.to_record()
        )


def take_lock(admin: IndexAdmin, lock: MigrationLock) -> None:
    """Create the lock record (and the jobs index it lives in); refuse when another migration holds it."""
    if lock.kind != "jobs":  # the lock lives in the jobs index
        admin.ensure(admin.default_options(), kinds=("jobs",))
    try:
        admin.client.create(index=admin.alias("jobs"), id=MIGRATION_LOCK_ID, document=lock.to_record())
    except ConflictError:
        other = migration_lock(admin)
        raise MigrationError(
            f"{other.describe() if other else 'another migration'} started meanwhile",
            hint="wait for it to finish, then migrate again",
        ) from None
    except ApiError as error:
        if not is_write_block_error(error):
            raise
        raise MigrationError(
            f"{admin.alias('jobs')} is write-blocked, so no migration can record itself",
            hint=f"lift the block (PUT {admin.current('jobs')}/_settings with index.blocks.write: null) if no "
            "migration is running",
        ) from None


def drop_lock(admin: IndexAdmin) -> None:
    """Delete the lock record (gone already is fine)."""
    with contextlib.suppress(NotFoundError):
        admin.client.delete(index=admin.alias("jobs"), id=MIGRATION_LOCK_ID)
