"""The job's migration-aware writer on a real node: migrations of all three indices while a job runs and searches
run lose and duplicate nothing (the job waits on the lock, or sends again what the write block refused), and a
migration that died stops a job with a clear error until the next migration cleans up."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest
from eqsearch.engine.index import (
    MIGRATION_LOCK_ID,
    IndexAdmin,
    MigrationLock,
    bulk_index,
    current_load_settings,
    is_write_block,
)
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig, IngestJobError
from hashing_encoder import HashingEncoder

pytestmark = pytest.mark.es


class GatedEncoder:
    """The hashing encoder behind a gate: the test closes it to stop the job at its next paper."""

    def __init__(self) -> None:
        self.inner = HashingEncoder()
        self.kind, self.dim, self.similarity = self.inner.kind, self.inner.dim, self.inner.similarity
        self.identity = self.inner.identity
        self.gate = threading.Event()
        self.gate.set()

    def encode(self, mathml):
        assert self.gate.wait(300), "the test never opened the gate"
        return self.inner.encode(mathml)


class WatchedJob(IngestJob):
    """An ingest job the test can watch wait for a migration, and make miss the migration's lock once."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.miss_lock_once = False
        self.waiting = threading.Event()
        await_migration, on_wait = self.writer.await_migration, self.writer.on_wait

        def watched_await_migration() -> bool:
            if self.miss_lock_once:  # as if it had looked just before the migration took its lock
                self.miss_lock_once = False
                return False
            return await_migration()

        def watched_on_wait(message: str | None) -> None:
            on_wait(message)
            if message:
                self.waiting.set()

        self.writer.await_migration = watched_await_migration
        self.writer.on_wait = watched_on_wait


def migrate_while_the_job_goes_on(admin, job: WatchedJob, encoder: GatedEncoder, kind: str, miss_lock: bool):
    """Migrate ``kind``; once the copy is under way, let the stopped job go on and wait until it waits."""
    released = []

    def release(copied: int, total: int) -> None:
        if released:
            return
        released.append(copied)
        assert admin.write_blocked(admin.current(kind))  # the copy is under way behind the block
        job.waiting.clear()
        job.miss_lock_once = miss_lock
        encoder.gate.set()
        assert job.waiting.wait(300), "the job never waited for the migration"

    report = admin.migrate(kind, batch_size=5, on_progress=release)
    assert released, "the migration copied too few documents to call back mid-copy"
    return report


@pytest.mark.slow
def test_migrations_while_a_job_runs_and_searches_run_lose_and_duplicate_nothing(
    es_client, index_name, monkeypatch, papers
):
    """Each migration starts while the job is stopped at a paper; once the copy is under way (the old index
    write-blocked), the job goes on and must wait: for ``equations`` and ``jobs`` its next writes miss the lock, are
    refused by the block and are sent again after the swap; for ``papers`` it sees the lock and pauses first."""
    source = papers.write_all()
    encoder = GatedEncoder()
    config = IngestJobConfig(
        sources=(str(source),), index_prefix=index_name, job_id="during", batch_equations=10, migration_poll_s=0.05
    )
    # papers done (a flush every 2 papers) -> the migration to run there, and whether the job misses its lock
    plan = {4: ("equations", True), 10: ("papers", False), 16: ("jobs", True)}
    stopped = {at: threading.Event() for at in plan}

    def on_progress(state) -> None:
        for at, event in stopped.items():
            if state.papers_done >= at and not event.is_set():
                encoder.gate.clear()
                event.set()
                return

    job = WatchedJob(es_client, encoder, config, on_progress=on_progress)
    outcome: dict = {}
    refused: list[str] = []  # the indices of the job's writes that a write block refused (then sent again)

    def watched_bulk_index(*args, **kwargs):
        report = bulk_index(*args, **kwargs)
        refused.extend(f.index for f in report.failures if is_write_block(f))
        return report

    monkeypatch.setattr("eqsearch.ingest.jobs.writer.bulk_index", watched_bulk_index)

    def run_job() -> None:
        try:
            outcome["report"] = job.run()
        except BaseException as error:  # reported by the assertions below
            outcome["error"] = error
            encoder.gate.set()

    stop = threading.Event()
    searches: list[tuple[str, int, int]] = []  # (alias, hits, distinct ids) or ("error while <phase>: ...", 0, 0)
    phase = ["ingesting"]

    def searcher() -> None:
        while not stop.is_set():
            for kind in ("equations", "papers"):
                try:
                    hits = es_client.search(index=f"{index_name}-{kind}", size=1000, source=False)["hits"]["hits"]
                    searches.append((kind, len(hits), len({h["_id"] for h in hits})))
                except Exception as error:  # a failed search is what the test counts
                    searches.append((f"error while {phase[0]}: {error}", 0, 0))
            stop.wait(0.02)  # the machine is shared

    admin = IndexAdmin(es_client, index_name)
    # the indices exist and are ready before anyone searches them (a new index answers 503 until its shard starts)
    admin.ensure(admin.default_options(dims=encoder.dim))
    es_client.cluster.health(index=f"{index_name}-*", wait_for_status="green", timeout="60s")
    threads = [threading.Thread(target=run_job), *(threading.Thread(target=searcher) for _ in range(2))]
    for thread in threads:
        thread.start()
    try:
        for at, (kind, miss_lock) in plan.items():
            assert stopped[at].wait(300) or "error" in outcome, outcome
            assert "error" not in outcome, outcome
            phase[0] = f"migrating {kind}"
            report = migrate_while_the_job_goes_on(admin, job, encoder, kind, miss_lock)
            phase[0] = f"ingesting after the migration of {kind}"
            assert report.target == f"{index_name}-{kind}-v2"
            assert report.copied == report.source_count == report.target_count
    finally:
        encoder.gate.set()
        threads[0].join(600)
        stop.set()
        for thread in threads[1:]:
            thread.join()

    assert "error" not in outcome, outcome
    report = outcome["report"]
    total = papers.N_PAPERS * papers.EQS_PER_PAPER
    assert report.state == "finished" and report.failures == []
    assert report.counts["papers"] == papers.N_PAPERS and report.counts["documents_failed"] == 0
    assert report.counts["equations_indexed"] == total and report.counts["equations_with_vector"] == total - 1
    ids = papers.equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) == total
    es_client.indices.refresh(index=f"{index_name}-papers,{index_name}-jobs")
    assert es_client.count(index=f"{index_name}-papers")["count"] == papers.N_PAPERS
    assert (
        es_client.count(index=f"{index_name}-jobs", query={"term": {"record": "checkpoint"}})["count"]
        == papers.N_PAPERS
    )
    for kind in ("equations", "papers", "jobs"):
        assert admin.current(kind) == f"{index_name}-{kind}-v2"
        assert admin.write_blocked(f"{index_name}-{kind}-v1")  # the old index refuses late writers
    assert admin.migration_lock() is None
    assert {name.rsplit("-", 1)[-1] for name in refused} == {"equations", "jobs"}  # the writes that missed the lock
    assert es_client.get(index=f"{index_name}-jobs", id="during")["_source"]["message"] is None
    assert current_load_settings(es_client, f"{index_name}-equations")["refresh_interval"] is None
    assert [s for s in searches if s[0].startswith("error")] == []  # search never stopped
    assert [s for s in searches if s[1] != s[2]] == []  # and never saw a document twice
    assert {s[0] for s in searches} == {"equations", "papers"}


def test_a_job_stops_with_a_clear_error_when_a_migration_died_and_resumes_after_the_next(es_client, index_name, papers):
    first = papers.write("first.jsonl", [papers.record(p) for p in range(4)])
    IngestJob(es_client, HashingEncoder(), IngestJobConfig(sources=(str(first),), index_prefix=index_name)).run()
    # What a migration killed mid-copy leaves: its lock (naming a process that is gone), a blocked source, a target.
    admin = IndexAdmin(es_client, index_name)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    source, target = admin.current("equations"), f"{index_name}-equations-v2"
    dead = MigrationLock("equations", source, target, int(gone.stdout), socket.gethostname(), "2026-01-01T00:00:00")
    es_client.index(index=f"{index_name}-jobs", id=MIGRATION_LOCK_ID, document=dead.to_record())
    admin.create_index("equations", target, admin.options_of("equations"))
    es_client.indices.add_block(index=source, block="write")

    rest = papers.write("rest.jsonl", [papers.record(p) for p in range(4, papers.N_PAPERS)])
    config = IngestJobConfig(sources=(str(rest),), index_prefix=index_name, job_id="after-a-dead-migration")
    with pytest.raises(IngestJobError, match="stopped without finishing") as refused:
        IngestJob(es_client, HashingEncoder(), config).run()
    assert "eqsearch index migrate equations" in refused.value.hint
    assert es_client.get(index=f"{index_name}-jobs", id=config.job_id)["_source"]["state"] == "failed"

    admin.migrate("equations")  # cleans up after the dead one and migrates
    report = IngestJob(es_client, HashingEncoder(), config).run()
    assert report.state == "finished" and report.counts["documents_failed"] == 0
    ids = papers.equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) == papers.N_PAPERS * papers.EQS_PER_PAPER
