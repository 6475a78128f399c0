"""The records a migration keeps in the jobs index: the lock and the outcome read back from their documents. (The
lock and the outcome on a real node, during and after migrations: test_migration.py and
tests/ingest/jobs/test_writer.py.)"""

from __future__ import annotations

from dataclasses import replace

from eqsearch.engine.index import MigrationLock, MigrationOutcome


def test_the_lock_and_outcome_records_read_back():
    lock = MigrationLock("equations", "x-equations-v1", "x-equations-v2", 42, "h", "2026-01-01T00:00:00.000+00:00")
    record = lock.to_record()
    assert (
        record["record"] == "migration" and record["message"] == "migrating equations: x-equations-v1 -> x-equations-v2"
    )
    assert MigrationLock.from_record({**record, "counts": {"copied": 7, "total": 9}}) == replace(
        lock, copied=7, total=9
    )
    assert lock.describe() == (
        "the migration of equations (x-equations-v1 -> x-equations-v2, pid 42 on h, started 2026-01-01 00:00:00)"
    )
    assert lock.holder_alive() is None  # another machine's: unknown
    outcome = MigrationOutcome("papers", "failed", "x-papers-v1", "x-papers-v2", "2026-01-01", 3, 1.5, "failed, why")
    assert MigrationOutcome.from_record(outcome.to_record()) == outcome
