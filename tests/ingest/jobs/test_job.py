"""Ingest jobs on a real node: exact counts, no duplicates, resume after ``kill -9``, per-document bulk failures,
bulk-loading settings restored, stale equations of re-ingested papers deleted (resumably), and migrations of all three
indices while a job runs and searches run.

Sources are papers JSONL files (the ingest format's minimal input form); LaTeX goes through the real KaTeX
converter; vectors come from the tests' `HashingEncoder` (an honest stand-in for the trained model).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from eqsearch.engine.index.admin import (
    MIGRATION_LOCK_ID,
    IndexAdmin,
    MigrationLock,
    bulk_index,
    current_load_settings,
    is_write_block,
)
from eqsearch.engine.index.mappings import IndexOptions
from eqsearch.ingest.jobs.job import IngestJob, IngestJobConfig, IngestJobError

pytestmark = pytest.mark.es

TESTS = Path(__file__).resolve().parents[2]
N_PAPERS = 24
EQS_PER_PAPER = 5


def hashing_encoder():
    spec = importlib.util.spec_from_file_location("_hashing_encoder", TESTS / "hashing_encoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HashingEncoder()


def paper_record(
    p: int, *, version: int = 1, equations: int = EQS_PER_PAPER, bad_title: bool = False, failed: bool = False
) -> dict:
    """Paper ``p`` in the papers JSONL form; paper 3's last equation does not parse."""
    latex = [f"x_{{{p}}}^{{{k}}} + \\frac{{a_{k}}}{{b_{p}}} = {k} + {version}" for k in range(equations)]
    if p == 3 and latex:
        latex[-1] = r"\frac{1}{"
    record = {
        "id": f"2401.{p:05d}",
        "version": version,
        "title": {"not": "a string"} if bad_title else f"On the sums of paper {p}",
        "abstract": "We study sums.",
        "authors": ["A. Author"],
        "metadata": {"categories": ["math.CO"], "published": "Mon, 1 Jan 2024 00:00:00 GMT"},
        "citations": [f"2401.{(p + 1) % N_PAPERS:05d}"],
        "sections": [
            {"title": "Intro", "equations": []},
            {"title": "Main", "equations": [{"latex": x, "context_before": f"lemma {k} of paper {p}"}
                                            for k, x in enumerate(latex)]},
        ],
    }  # fmt: skip
    if failed:
        record.update(status="failed", error={"reason": "timeout", "message": "over the time budget"}, sections=[])
    return record


def write_records(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def write_papers(path: Path, *, bad_title_paper: int | None = None) -> Path:
    """N_PAPERS papers of EQS_PER_PAPER equations; paper 3's last equation does not parse."""
    return write_records(path, [paper_record(p, bad_title=p == bad_title_paper) for p in range(N_PAPERS)])


def ids_of(p: int, version: int, equations: int) -> set[str]:
    return {f"2401.{p:05d}v{version}:{k}" for k in range(equations)}


def equation_ids(es_client, prefix: str) -> list[str]:
    es_client.indices.refresh(index=f"{prefix}-equations")
    hits = es_client.search(index=f"{prefix}-equations", size=1000, source=["eq_id"], sort=[{"eq_id": "asc"}])
    return [hit["_id"] for hit in hits["hits"]["hits"]]


def test_job_indexes_everything_once_and_twice_changes_nothing(es_client, index_name, tmp_path):
    source = write_papers(tmp_path / "papers.jsonl")
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=20)
    report = IngestJob(es_client, hashing_encoder(), config).run()
    total = N_PAPERS * EQS_PER_PAPER
    assert report.state == "finished"
    assert report.counts["papers"] == N_PAPERS
    assert report.counts["equations"] == total
    assert report.counts["equations_indexed"] == total
    assert report.counts["equations_with_vector"] == total - 1
    assert report.counts["equations_unconverted"] == 1
    assert report.counts["documents_failed"] == 0
    assert sum(v for k, v in report.errors_by_reason.items() if k.startswith("convert:")) == 1
    ids = equation_ids(es_client, index_name)
    assert len(ids) == total == len(set(ids))
    assert ids[0] == "2401.00000v1:0"
    # bulk-loading settings are back
    settings = current_load_settings(es_client, f"{index_name}-equations")
    assert settings["refresh_interval"] is None
    # cited-by counts: each paper is cited by exactly one other
    paper = es_client.get(index=f"{index_name}-papers", id="2401.00005")["_source"]
    assert paper["cited_by_count"] == 1
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert record["state"] == "finished"
    assert record["counts"]["equations_indexed"] == total
    assert record["progress"] == {"papers_done": N_PAPERS, "papers_total": N_PAPERS}

    again = IngestJob(es_client, hashing_encoder(), config).run()  # a finished job: nothing left to do
    assert again.counts == report.counts and again.resumed_from == N_PAPERS
    restarted = IngestJob(es_client, hashing_encoder(), IngestJobConfig(**{**config.__dict__, "restart": True})).run()
    assert restarted.counts == report.counts and restarted.resumed_from == 0
    assert equation_ids(es_client, index_name) == ids


def test_bulk_partial_failures_are_reported_per_document(es_client, index_name, tmp_path):
    source = write_papers(tmp_path / "papers.jsonl", bad_title_paper=7)
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=50)
    report = IngestJob(es_client, hashing_encoder(), config).run()
    assert report.state == "finished"
    failed_ids = sorted(f.doc_id for f in report.failures)
    assert failed_ids == ["2401.00007", *[f"2401.00007v1:{k}" for k in range(EQS_PER_PAPER)]]
    assert {f.status for f in report.failures} == {400}
    assert all("title" in f.reason for f in report.failures)
    assert report.counts["documents_failed"] == EQS_PER_PAPER + 1
    assert report.counts["equations_indexed"] == (N_PAPERS - 1) * EQS_PER_PAPER
    assert len(equation_ids(es_client, index_name)) == (N_PAPERS - 1) * EQS_PER_PAPER
    (reason,) = [k for k in report.errors_by_reason if k.startswith("index:")]
    assert report.errors_by_reason[reason] == EQS_PER_PAPER + 1
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert sorted(f["doc_id"] for f in record["failures"]) == failed_ids


RUNNER = """
import importlib.util, sys, time
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.es.client import connect
from eqsearch.ingest.jobs.job import IngestJob, IngestJobConfig

spec = importlib.util.spec_from_file_location("_hashing_encoder", sys.argv[3])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
inner = module.HashingEncoder()

class SlowEncoder:
    kind, dim, similarity, identity = inner.kind, inner.dim, inner.similarity, inner.identity
    calls = 0
    def encode(self, mathml):  # one call per paper
        SlowEncoder.calls += 1
        # slow enough that the kill lands mid-job, anywhere from paper 6 on; and never past paper 20, so that a
        # test process slowed down by a busy machine cannot see the job finish before it kills it
        time.sleep(0.25 if SlowEncoder.calls <= 20 else 3600)
        return inner.encode(mathml)

client, _ = connect(EsConfig.from_env())
config = IngestJobConfig(sources=(sys.argv[1],), index_prefix=sys.argv[2], job_id="killed", batch_equations=10)
IngestJob(client, SlowEncoder(), config).run()
"""


@pytest.mark.slow
def test_kill_9_then_resume_loses_nothing_and_duplicates_nothing(es_client, index_name, tmp_path):
    source = write_papers(tmp_path / "papers.jsonl")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    process = subprocess.Popen(
        [sys.executable, str(runner), str(source), index_name, str(TESTS / "hashing_encoder.py")],
        env=os.environ.copy(),
    )
    try:
        deadline = time.monotonic() + 120
        done = 0
        while time.monotonic() < deadline and process.poll() is None:
            try:
                record = es_client.get(index=f"{index_name}-jobs", id="killed")["_source"]
                done = record["progress"]["papers_done"]
            except Exception:
                done = 0
            if done >= 6:
                break
            time.sleep(0.1)
        assert process.poll() is None, "the job process ended before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    killed = es_client.get(index=f"{index_name}-jobs", id="killed")["_source"]
    assert killed["state"] == "running"  # nobody could record the end
    assert 6 <= killed["progress"]["papers_done"] < N_PAPERS
    # the killed run left the bulk-loading settings on; the resumed run must put the recorded ones back
    assert es_client.indices.get_settings(index=f"{index_name}-equations", flat_settings=True)
    partial = len(equation_ids(es_client, index_name))
    assert 0 < partial < N_PAPERS * EQS_PER_PAPER

    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, job_id="killed", batch_equations=10)
    report = IngestJob(es_client, hashing_encoder(), config).run()
    total = N_PAPERS * EQS_PER_PAPER
    assert report.state == "finished"
    assert report.resumed_from >= 6
    assert report.counts["papers"] == N_PAPERS
    assert report.counts["equations"] == total
    assert report.counts["equations_indexed"] == total
    assert report.counts["equations_with_vector"] == total - 1
    ids = equation_ids(es_client, index_name)
    assert len(ids) == total == len(set(ids))
    assert report.failures == []
    es_client.indices.refresh(index=f"{index_name}-papers")
    papers = es_client.count(index=f"{index_name}-papers")["count"]
    assert papers == N_PAPERS
    assert current_load_settings(es_client, f"{index_name}-equations")["refresh_interval"] is None
    es_client.indices.refresh(index=f"{index_name}-jobs")
    checkpoints = es_client.count(index=f"{index_name}-jobs", query={"term": {"record": "checkpoint"}})["count"]
    assert checkpoints == N_PAPERS


def test_reingesting_changed_papers_deletes_their_stale_equations(es_client, index_name, tmp_path):
    config = IngestJobConfig(sources=(str(write_papers(tmp_path / "papers.jsonl")),), index_prefix=index_name)
    assert IngestJob(es_client, hashing_encoder(), config).run().counts["equations_stale_deleted"] == 0
    changed = write_records(
        tmp_path / "changed.jsonl",
        [
            paper_record(0, version=2, equations=3),  # a new arXiv version with fewer equations: every v1 id goes
            paper_record(1, equations=2),  # the same version, edited: v1:2..4 go
            paper_record(2, version=2, equations=7),  # more equations
            paper_record(4, version=2, failed=True),  # extraction failed: the v1 equations stay
            paper_record(5, version=2, bad_title=True),  # Elasticsearch refuses its documents: v1 stays
            paper_record(6, version=2, equations=4),  # two versions in one job: the later one wins,
            paper_record(6, version=3, equations=2),  # and the earlier one's equations go too
        ],
    )
    config = IngestJobConfig(sources=(str(changed),), index_prefix=index_name, batch_equations=50)
    report = IngestJob(es_client, hashing_encoder(), config).run()

    assert report.state == "finished"
    assert report.counts["equations_stale_deleted"] == 5 + 3 + 5 + (5 + 4)
    assert report.counts["documents_failed"] == 1 + EQS_PER_PAPER  # paper 5's paper and equation documents
    assert report.counts["papers_failed"] == 1
    expected = set().union(*(ids_of(p, 1, EQS_PER_PAPER) for p in range(N_PAPERS) if p not in (0, 1, 2, 6)))
    expected |= ids_of(0, 2, 3) | ids_of(1, 1, 2) | ids_of(2, 2, 7) | ids_of(6, 3, 2)
    ids = equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) and set(ids) == expected
    papers = f"{index_name}-papers"
    assert es_client.get(index=papers, id="2401.00000")["_source"]["paper_key"] == "2401.00000v2"
    assert es_client.get(index=papers, id="2401.00006")["_source"]["equation_count"] == 2
    assert es_client.get(index=papers, id="2401.00005")["_source"]["paper_key"] == "2401.00005v1"
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert record["counts"]["equations_stale_deleted"] == report.counts["equations_stale_deleted"]

    again = IngestJob(es_client, hashing_encoder(), IngestJobConfig(**{**config.__dict__, "restart": True})).run()
    # the same end state; only paper 6's two versions replace each other again on the way (2 then 4 ids)
    assert again.counts["equations_stale_deleted"] == 2 + 4
    assert set(equation_ids(es_client, index_name)) == expected


def test_two_jobs_on_the_same_paper_never_delete_each_others_equations(es_client, index_name, tmp_path, monkeypatch):
    def run(name: str, records: list[dict], **options) -> object:
        source = write_records(tmp_path / f"{name}.jsonl", records)
        config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, job_id=name, **options)
        return IngestJob(es_client, hashing_encoder(), config).run()

    run("a", [paper_record(p) for p in range(3)])
    # Job b wrote paper 0's version 2 (pruning version 1) and is still running: its record says so, its process lives.
    run("b", [paper_record(0, version=2, equations=3)])
    jobs = f"{index_name}-jobs"
    es_client.update(index=jobs, id="b", doc={"state": "running", "pid": os.getpid(), "host": socket.gethostname()})
    es_client.indices.refresh(index=jobs)
    c = run("c", [paper_record(0, version=3, equations=2)])
    assert c.counts["equations_stale_kept"] == 3 and c.counts["equations_stale_deleted"] == 0
    assert set(equation_ids(es_client, index_name)) >= ids_of(0, 2, 3) | ids_of(0, 3, 2)  # b's equations stand
    assert "another job was ingesting the same papers" in es_client.get(index=jobs, id="c")["_source"]["message"]
    # Once b has ended, ingesting the paper again removes what is left of the older version.
    es_client.update(index=jobs, id="b", doc={"state": "finished"})
    es_client.indices.refresh(index=jobs)
    again = run("c", [paper_record(0, version=3, equations=2)], restart=True)
    assert again.counts["equations_stale_deleted"] == 3 and again.counts["equations_stale_kept"] == 0
    assert {i for i in equation_ids(es_client, index_name) if i.startswith("2401.00000")} == ids_of(0, 3, 2)

    # Job d writes paper 1's version 2; before it prunes, another job ("e") writes paper 1's document: d leaves the
    # paper to e and deletes none of its equations.
    real_bulk = IngestJob._bulk

    def bulk_then_overtaken(self, actions, **kwargs):
        report = real_bulk(self, actions, **kwargs)
        if self.job_id == "d" and any(a["_index"].endswith("-papers") for a in actions):
            es_client.update(index=f"{index_name}-papers", id="2401.00001", doc={"job_id": "e"})
        return report

    monkeypatch.setattr(IngestJob, "_bulk", bulk_then_overtaken)
    d = run("d", [paper_record(1, version=2, equations=2)])
    assert d.counts["equations_stale_kept"] == EQS_PER_PAPER and d.counts["equations_stale_deleted"] == 0
    assert set(equation_ids(es_client, index_name)) >= ids_of(1, 1, EQS_PER_PAPER) | ids_of(1, 2, 2)


class Crash(Exception):
    """Stands for a kill at one point of the job (the documents and records written so far stay, as after kill -9)."""


@pytest.mark.parametrize("point", ["before the deletes", "after the deletes"])
def test_a_job_that_dies_while_deleting_stale_equations_resumes_exactly(
    es_client, index_name, tmp_path, monkeypatch, point
):
    config = IngestJobConfig(sources=(str(write_papers(tmp_path / "papers.jsonl")),), index_prefix=index_name)
    IngestJob(es_client, hashing_encoder(), config).run()
    changed = write_records(tmp_path / "changed.jsonl", [paper_record(p, version=2, equations=3) for p in range(6)])
    config = IngestJobConfig(sources=(str(changed),), index_prefix=index_name, job_id="prune", batch_equations=8)
    real_bulk = IngestJob._bulk
    deletes_seen = []

    def dying_bulk(self, actions, **kwargs):
        if actions and actions[0].get("_op_type") == "delete" and actions[0]["_index"].endswith("-equations"):
            deletes_seen.append(len(actions))
            if len(deletes_seen) == 2:  # the second flush's deletes: the first flush is checkpointed
                if point == "after the deletes":
                    real_bulk(self, actions, **kwargs)
                raise Crash(point)
        return real_bulk(self, actions, **kwargs)

    monkeypatch.setattr(IngestJob, "_bulk", dying_bulk)
    with pytest.raises(Crash):
        IngestJob(es_client, hashing_encoder(), config).run()
    monkeypatch.undo()

    report = IngestJob(es_client, hashing_encoder(), config).run()
    assert report.state == "finished" and 0 < report.resumed_from < 6
    assert report.counts["equations_stale_deleted"] == 6 * EQS_PER_PAPER
    assert report.counts["equations_indexed"] == 6 * 3
    expected = set().union(
        *(ids_of(p, 1, EQS_PER_PAPER) for p in range(6, N_PAPERS)), *(ids_of(p, 2, 3) for p in range(6))
    )
    ids = equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) and set(ids) == expected
    es_client.indices.refresh(index=f"{index_name}-jobs")
    records = es_client.search(index=f"{index_name}-jobs", query={"term": {"job_id": "prune"}}, size=100)["hits"]
    assert sorted(h["_source"]["record"] for h in records["hits"]) == ["checkpoint"] * 6 + ["job"]


class GatedEncoder:
    """The hashing encoder behind a gate: the test closes it to stop the job at its next paper."""

    def __init__(self) -> None:
        self.inner = hashing_encoder()
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

    def _await_migration(self) -> bool:
        if self.miss_lock_once:  # as if it had looked just before the migration took its lock
            self.miss_lock_once = False
            return False
        return super()._await_migration()

    def _note(self, message):
        super()._note(message)
        if message:
            self.waiting.set()


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
    es_client, index_name, tmp_path, monkeypatch
):
    """Each migration starts while the job is stopped at a paper; once the copy is under way (the old index
    write-blocked), the job goes on and must wait: for ``equations`` and ``jobs`` its next writes miss the lock, are
    refused by the block and are sent again after the swap; for ``papers`` it sees the lock and pauses first."""
    source = write_papers(tmp_path / "papers.jsonl")
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

    monkeypatch.setattr("eqsearch.ingest.jobs.job.bulk_index", watched_bulk_index)

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
    total = N_PAPERS * EQS_PER_PAPER
    assert report.state == "finished" and report.failures == []
    assert report.counts["papers"] == N_PAPERS and report.counts["documents_failed"] == 0
    assert report.counts["equations_indexed"] == total and report.counts["equations_with_vector"] == total - 1
    ids = equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) == total
    es_client.indices.refresh(index=f"{index_name}-papers,{index_name}-jobs")
    assert es_client.count(index=f"{index_name}-papers")["count"] == N_PAPERS
    assert es_client.count(index=f"{index_name}-jobs", query={"term": {"record": "checkpoint"}})["count"] == N_PAPERS
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


def test_a_job_stops_with_a_clear_error_when_a_migration_died_and_resumes_after_the_next(
    es_client, index_name, tmp_path
):
    first = write_records(tmp_path / "first.jsonl", [paper_record(p) for p in range(4)])
    IngestJob(es_client, hashing_encoder(), IngestJobConfig(sources=(str(first),), index_prefix=index_name)).run()
    # What a migration killed mid-copy leaves: its lock (naming a process that is gone), a blocked source, a target.
    admin = IndexAdmin(es_client, index_name)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    source, target = admin.current("equations"), f"{index_name}-equations-v2"
    dead = MigrationLock("equations", source, target, int(gone.stdout), socket.gethostname(), "2026-01-01T00:00:00")
    es_client.index(index=f"{index_name}-jobs", id=MIGRATION_LOCK_ID, document=dead.to_record())
    admin._create_index("equations", target, admin.options_of("equations"), aliases=None)
    es_client.indices.add_block(index=source, block="write")

    rest = write_records(tmp_path / "rest.jsonl", [paper_record(p) for p in range(4, N_PAPERS)])
    config = IngestJobConfig(sources=(str(rest),), index_prefix=index_name, job_id="after-a-dead-migration")
    with pytest.raises(IngestJobError, match="stopped without finishing") as refused:
        IngestJob(es_client, hashing_encoder(), config).run()
    assert "eqsearch index migrate equations" in refused.value.hint
    assert es_client.get(index=f"{index_name}-jobs", id=config.job_id)["_source"]["state"] == "failed"

    admin.migrate("equations")  # cleans up after the dead one and migrates
    report = IngestJob(es_client, hashing_encoder(), config).run()
    assert report.state == "finished" and report.counts["documents_failed"] == 0
    ids = equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) == N_PAPERS * EQS_PER_PAPER


def test_a_new_model_never_mixes_with_the_old_until_the_index_is_reencoded(es_client, index_name, tmp_path):
    """Upgrade the model bundle: the job refuses to add the new model's vectors to the old model's index, searches
    turn formula search off (keywords still answer), `migrate --reencode` swaps in the new vectors, and then both
    the job and formula search go on."""
    from eqsearch.engine.index.admin import reencode_vectors
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.search.service import HybridQuery, SearchService

    old = hashing_encoder()
    new = hashing_encoder()
    new.identity = "hashing-test:2"
    plain_encode = new.encode
    new.encode = lambda mathml: -plain_encode(mathml)  # another model: other vectors, same shape
    source = write_records(tmp_path / "papers.jsonl", [paper_record(p) for p in range(4)])
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=50)
    assert IngestJob(es_client, old, config).run().state == "finished"
    admin = IndexAdmin(es_client, index_name)
    assert admin.options_of("equations").encoder == "hashing-test:1"

    with pytest.raises(IngestJobError, match=r"(?s)hashing-test:1 .* hashing-test:2 .*--reencode"):
        IngestJob(es_client, new, config).run()
    query = HybridQuery(latex=r"x_{1}^{2} + \frac{a_2}{b_1} = 2 + 1", keywords="sums")
    with KatexConverter() as converter:
        stale = SearchService(es_client, new, converter, index_prefix=index_name).search(query)
        assert any("formula search is off" in w and "--reencode" in w for w in stale.warnings)
        assert stale.hits and {h.matched for h in stale.hits} == {"text"}  # keywords still answer

        report = admin.migrate(
            "equations",
            IndexOptions(dims=new.dim, similarity=new.similarity, encoder=new.identity),
            rewrite=reencode_vectors(new),
            batch_size=7,  # pages that do not divide the 20 equations
        )
        assert report.copied == report.source_count == report.target_count == 20
        assert admin.options_of("equations").encoder == "hashing-test:2"
        stored = es_client.get(
            index=f"{index_name}-equations", id="2401.00001v1:2", source_includes=["vector", "mathml"]
        )["_source"]
        assert stored["vector"] == pytest.approx(new.encode([stored["mathml"]])[0].tolist(), abs=1e-6)
        unconverted = es_client.get(index=f"{index_name}-equations", id="2401.00003v1:4")["_source"]
        assert "vector" not in unconverted  # no MathML: no vector, before as after

        service = SearchService(es_client, new, converter, index_prefix=index_name)
        fresh = service.search(query)
        assert not any("formula search is off" in w for w in fresh.warnings)
        assert "both" in {h.matched for h in fresh.hits}
        formula_only = service.search(HybridQuery(latex=query.latex))
        assert formula_only.hits[0].eq_id == "2401.00001v1:2"  # the same formula, found by the new vectors
    assert IngestJob(es_client, new, config).run().state == "finished"
