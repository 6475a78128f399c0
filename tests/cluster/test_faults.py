"""Faults on a real 3-node cluster: a node killed with SIGKILL under searches and an ingest job, the whole cluster
restarted in the middle of a job, a disk past its flood-stage watermark.

Each test says what must hold (no failed search after a bounded retry, no lost or duplicated document, the job ends by
itself or resumes) and records its counts in artifacts/cluster-faults.json. The expected documents are those a
reference run of the same job left on the healthy cluster. Where what must hold fails for a known gap of the ingest job
or the search service (`REPLICAS_DROPPED`, `CHECKPOINTED_REFUSALS`: benchmarks/scale.md, "What the fault tests
found"), the test ends as an expected failure naming it, after asserting everything else; once the gap is closed, the
test passes. The helpers (search load, job gate, document counts) live here with the tests they serve, hence the
module's length.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from eqsearch.engine.es.local_cluster import LocalCluster
from eqsearch.engine.index import IndexAdmin, IndexOptions, probe_text_analyzer
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig
from hashing_encoder import HashingEncoder

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "webui" / "corpus"
ARTIFACTS = ROOT / "artifacts"
#: The layout benchmarks/scale.md recommends for 3 nodes: every shard on two nodes, primaries spread over all three.
SHARDS, REPLICAS = 3, 1

pytestmark = [pytest.mark.es, pytest.mark.slow]

JOB_SECONDS = 240  # the longest a faulted job may take to end by itself
DOWN_SECONDS = 45  # how long the killed node stays down when the job has not ended by then
SEARCH_SECONDS_DOWN = 8  # searches go on at least this long after the kill
#: The known gap behind the node-kill test's expected failure (benchmarks/scale.md).
REPLICAS_DROPPED = (
    "the ingest job sets number_of_replicas to 0 while it loads (engine/index/bulk.py bulk_loading_settings), so the "
    "killed node's shards have no copy left: searches answer from the other shards without a word "
    "(SearchService does not read _shards.failed) and bulk requests wait for the missing primaries"
)
#: The known gap behind the partial-full-disk test's expected failure.
CHECKPOINTED_REFUSALS = (
    "the job checkpoints a paper whose documents a flood-stage block refused (ingest/jobs/job.py _flush counts them "
    "in documents_failed and checkpoints the paper), so the resumed job skips it"
)


def prepare(client, prefix: str) -> None:
    """The deployment's three indices, made before any job with the cluster's shard and replica counts."""
    encoder = HashingEncoder()
    options = IndexOptions(
        dims=encoder.dim,
        similarity=encoder.similarity,
        analyzer=probe_text_analyzer(client),
        shards=SHARDS,
        replicas=REPLICAS,
        encoder=encoder.identity,
    )
    IndexAdmin(client, prefix).ensure(options)


def new_prefix(name: str) -> str:
    return f"eqsearch-fault-{name}-{uuid.uuid4().hex[:6]}"


def job_config(sources: tuple[str, ...], prefix: str, job_id: str, **extra: Any) -> IngestJobConfig:
    """Small batches (several flushes on a small corpus), few short retries (bounded test time)."""
    values: dict[str, Any] = {"batch_equations": 4, "max_retries": 3, "initial_backoff": 0.5, **extra}
    return IngestJobConfig(sources=sources, index_prefix=prefix, job_id=job_id, **values)


def ingest(client, converter, sources: tuple[str, ...], prefix: str, job_id: str, **extra: Any):
    """Run one job to its end on a healthy cluster."""
    return IngestJob(client, HashingEncoder(), job_config(sources, prefix, job_id, **extra), converter=converter).run()


def documents(client, prefix: str) -> dict[str, list[str]]:
    """Every document id of the deployment's equations and papers indices (duplicates kept), after a refresh."""
    out = {}
    for kind in ("equations", "papers"):
        index = f"{prefix}-{kind}"
        client.indices.refresh(index=index)
        hits = client.search(index=index, size=10_000, source=False, sort=["_doc"])["hits"]["hits"]
        out[kind] = sorted(hit["_id"] for hit in hits)
        assert client.count(index=index)["count"] == len(out[kind])
    return out


def replicas_of(client, index: str) -> int:
    """The index's ``number_of_replicas`` now."""
    settings = client.indices.get_settings(index=index, name="index.number_of_replicas", flat_settings=True)
    return int(next(iter(settings.values()))["settings"]["index.number_of_replicas"])


def primaries_by_node(client, prefix: str) -> dict[str, int]:
    """How many primary shards of the deployment each node holds."""
    counts: dict[str, int] = {}
    for row in client.cat.shards(index=f"{prefix}-*", format="json", h="prirep,node,state"):
        if row["prirep"] == "p" and row.get("node"):
            counts[row["node"]] = counts.get(row["node"], 0) + 1
    return counts


def kill_node(cluster: LocalCluster, name: str) -> int:
    """SIGKILL the member called `name`; returns its pid once the process is gone."""
    member = next(m for m in cluster.members if m.name == name)
    pid = member.read_pid()
    assert pid is not None, f"{name} is not running"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
    return pid


@dataclass
class SearchLoad:
    """Searches in a thread until stopped: each known formula must find its own equation on the first page.

    A search that raises is tried again (at most `attempts` times, `pause` apart): `first_failures` counts those
    that raised at first, `failed` those that still raised after the retries, `incomplete` those that answered
    without the expected equation (a silently partial result).
    """

    service: SearchService
    queries: list[tuple[HybridQuery, str]]
    attempts: int = 3
    pause: float = 1.0
    max_searches: int = 5_000
    max_seconds: float = 240.0
    run: int = 0
    first_failures: int = 0
    failed: int = 0
    incomplete: int = 0
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> SearchLoad:
        self._thread = threading.Thread(target=self._loop, name="search-load", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        began = time.monotonic()
        while not self._stop.is_set() and self.run < self.max_searches and time.monotonic() - began < self.max_seconds:
            query, expected = self.queries[self.run % len(self.queries)]
            self.run += 1
            for attempt in range(self.attempts):
                try:
                    results = self.service.search(query)
                except Exception as error:
                    if attempt == 0:
                        self.first_failures += 1
                    if len(self.errors) < 20:
                        self.errors.append(f"{type(error).__name__}: {str(error)[:300]}")
                    if attempt == self.attempts - 1:
                        self.failed += 1
                    else:
                        time.sleep(self.pause)
                    continue
                if expected not in {hit.eq_id for hit in results.hits}:
                    self.incomplete += 1
                break
            time.sleep(0.1)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        return {
            "searches_run": self.run,
            "failed_at_first": self.first_failures,
            "failed_after_retries": self.failed,
            "incomplete": self.incomplete,
            "errors": self.errors[:5],
        }


def formula_queries(client, prefix: str, limit: int = 6) -> list[tuple[HybridQuery, str]]:
    """Queries for equations the deployment holds (with vectors), each with the equation it must find."""
    hits = client.search(
        index=f"{prefix}-equations",
        size=100,
        query={"exists": {"field": "vector"}},
        source=["eq_id", "latex"],
        sort=[{"eq_id": "asc"}],
    )["hits"]["hits"]
    seen: set[str] = set()
    out = []
    for hit in hits:
        latex = hit["_source"]["latex"]
        if latex in seen:
            continue
        seen.add(latex)
        out.append((HybridQuery(latex=latex, size=20), hit["_source"]["eq_id"]))
    return out[:limit]


class Gate:
    """Holds an ingest job after its `at`-th flush until the test releases it (bounded waits both ways); `then`, when
    given, runs in the job's thread after that flush and every later one."""

    def __init__(self, at: int, timeout: float = 180.0, then: Callable[[], None] | None = None) -> None:
        self.at = at
        self.timeout = timeout
        self.then = then
        self.flushes = 0
        self.reached = threading.Event()
        self.released = threading.Event()

    def __call__(self, _progress: Any) -> None:
        self.flushes += 1
        if self.flushes == self.at:
            self.reached.set()
            self.released.wait(self.timeout)
        if self.then is not None and self.flushes >= self.at:
            self.then()


def run_in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """`target()` in a thread; the dict gets ``result`` or ``error``."""
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            outcome["result"] = target()
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=body, name="ingest-job", daemon=True)
    thread.start()
    return thread, outcome


def record_figures(name: str, figures: dict[str, Any]) -> None:
    """Print the test's counts and keep them in artifacts/cluster-faults.json (git-ignored)."""
    print(f"\n{name}: {json.dumps(figures, default=str)}")
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "cluster-faults.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    kept[name] = figures
    path.write_text(json.dumps(kept, indent=2, default=str) + "\n")


@pytest.fixture(scope="module")
def reference(client, converter, sources) -> dict[str, list[str]]:
    """The documents the faulted jobs must leave: the same job on the healthy cluster."""
    prefix = new_prefix("reference")
    prepare(client, prefix)
    report = ingest(client, converter, sources, prefix, "reference")
    assert report.state == "finished" and report.failures == [], report
    return documents(client, prefix)


@pytest.fixture(scope="module")
def baseline_ids(client, converter) -> dict[str, list[str]]:
    """The documents of the corpus's papers JSONL, what every faulted deployment holds before its job."""
    prefix = new_prefix("baseline")
    prepare(client, prefix)
    assert ingest(client, converter, (str(CORPUS / "papers.jsonl"),), prefix, "baseline").state == "finished"
    return documents(client, prefix)


def merged(*sets: dict[str, list[str]]) -> dict[str, list[str]]:
    return {kind: sorted({doc for docs in sets for doc in docs[kind]}) for kind in ("equations", "papers")}


def compare(found: dict[str, list[str]], expected: dict[str, list[str]]) -> dict[str, int]:
    """Counts of expected, found, lost and duplicated documents, by index."""
    out = {}
    for kind in ("equations", "papers"):
        out[f"{kind}_expected"] = len(expected[kind])
        out[f"{kind}_found"] = len(found[kind])
        out[f"{kind}_lost"] = len(set(expected[kind]) - set(found[kind]))
        out[f"{kind}_duplicated"] = len(found[kind]) - len(set(found[kind]))
        out[f"{kind}_unexpected"] = len(set(found[kind]) - set(expected[kind]))
    return out


def no_loss(counts: dict[str, int]) -> bool:
    return all(counts[f"{kind}_{what}"] == 0 for kind in ("equations", "papers") for what in ("lost", "duplicated"))


def test_a_node_killed_under_searches_and_an_ingest_job(cluster, client, converter, sources, reference, baseline_ids):
    prefix = new_prefix("kill")
    prepare(client, prefix)
    assert ingest(client, converter, (str(CORPUS / "papers.jsonl"),), prefix, "baseline").state == "finished"
    service = SearchService(client, HashingEncoder(), converter, index_prefix=prefix)
    queries = formula_queries(client, prefix)
    assert len(queries) >= 4
    load = SearchLoad(service, queries).start()

    gate = Gate(at=2)
    job = IngestJob(client, HashingEncoder(), job_config(sources, prefix, "faulted"), converter=converter,
                    on_progress=gate)  # fmt: skip
    thread, outcome = run_in_thread(job.run)
    try:
        assert gate.reached.wait(120), "the job never reached its second flush"
        replicas_while_loading = replicas_of(client, f"{prefix}-equations")
        primaries = primaries_by_node(client, prefix)
        victim = max(sorted(primaries), key=lambda name: primaries[name])
        master = client.cat.master(format="json")[0]["node"]
        killed_at = time.monotonic()
        kill_node(cluster, victim)
    finally:
        gate.released.set()
    thread.join(DOWN_SECONDS)
    ended_while_down = not thread.is_alive()
    job_seconds = time.monotonic() - killed_at
    time.sleep(max(0.0, killed_at + SEARCH_SECONDS_DOWN - time.monotonic()))  # searches go on with the node down
    during = load.stop()

    restarted_at = time.monotonic()
    status = cluster.start()  # restarts the killed member, waits for green with all three
    green_seconds = time.monotonic() - restarted_at
    thread.join(JOB_SECONDS)
    ended = not thread.is_alive()
    after = SearchLoad(service, queries, max_searches=3 * len(queries)).start()
    time.sleep(3)
    after_restart = after.stop()
    counts = compare(documents(client, prefix), merged(baseline_ids, reference))
    report = outcome.get("result")
    figures = {
        "killed": victim,
        "killed_was_master": victim == master,
        "primaries_before_kill": primaries,
        "replicas_while_loading": replicas_while_loading,
        "job_ended_while_node_down": ended_while_down,
        "job_seconds_after_kill": round(job_seconds, 1) if ended_while_down else None,
        "job_state": report.state if report else None,
        "job_error": repr(outcome.get("error"))[:500] if "error" in outcome else None,
        "job_documents_failed": report.counts.get("documents_failed") if report else None,
        "job_errors_by_reason": report.errors_by_reason if report else None,
        "searches_while_node_down": during,
        "searches_after_restart": after_restart,
        "health_after_restart": status.health,
        "green_seconds_after_restart": round(green_seconds, 1),
        **counts,
    }
    record_figures("node_killed", figures)
    assert ended, f"the job did not end within {JOB_SECONDS} s of the node's restart"
    assert status.health == "green"
    assert during["failed_after_retries"] == 0, during
    assert after_restart["failed_after_retries"] == 0 and after_restart["incomplete"] == 0, after_restart
    assert counts["equations_duplicated"] == counts["papers_duplicated"] == 0, counts
    checks = {
        "the job ended by itself while the node was down": ended_while_down,
        "every search found its equation while the node was down": during["incomplete"] == 0,
        "the job finished with no failed document": report is not None and report.state == "finished"
        and not report.counts.get("documents_failed"),
        "no document was lost": no_loss(counts),
    }  # fmt: skip
    failed = [what for what, ok in checks.items() if not ok]
    if failed and replicas_while_loading == 0:
        pytest.xfail(f"{'; '.join(failed)}: {REPLICAS_DROPPED}")
    assert not failed, figures


def test_a_whole_cluster_restart_in_the_middle_of_an_ingest_job(cluster, client, converter, sources, reference):
    prefix = new_prefix("restart")
    prepare(client, prefix)
    gate = Gate(at=2)
    config = job_config(sources, prefix, "restarted")
    job = IngestJob(client, HashingEncoder(), config, converter=converter, on_progress=gate)
    thread, outcome = run_in_thread(job.run)
    try:
        assert gate.reached.wait(120), "the job never reached its second flush"
        stopped = cluster.stop(timeout=60)
    finally:
        gate.released.set()  # the job carries on against a cluster that is down
    thread.join(JOB_SECONDS)
    first_run_ended = not thread.is_alive()
    began = time.monotonic()
    status = cluster.start()
    start_seconds = time.monotonic() - began
    first = outcome.get("result")
    resumed = IngestJob(client, HashingEncoder(), config, converter=converter).run()
    counts = compare(documents(client, prefix), reference)
    figures = {
        "nodes_stopped": stopped,
        "first_run_ended_by_itself": first_run_ended,
        "first_run_state": first.state if first else None,
        "first_run_error": repr(outcome.get("error"))[:500] if "error" in outcome else None,
        "cluster_restart_seconds": round(start_seconds, 1),
        "health_after_restart": status.health,
        "resumed_state": resumed.state,
        "resumed_from_papers": resumed.resumed_from,
        "papers_total": resumed.papers_total,
        "resumed_documents_failed": resumed.counts.get("documents_failed"),
        "resumed_equations_indexed": resumed.counts.get("equations_indexed"),
        "resumed_inline_indexed": resumed.counts.get("inline_indexed"),
        **counts,
    }
    record_figures("cluster_restarted", figures)
    assert first_run_ended, "the job did not end by itself while the cluster was down"
    assert status.health == "green"
    assert resumed.state == "finished" and resumed.failures == [], figures
    assert resumed.resumed_from >= 1, "the second run did not resume from the first run's checkpoints"
    # the reference holds every equation document: the displays and the inline formulas, counted apart
    indexed = resumed.counts["equations_indexed"] + resumed.counts.get("inline_indexed", 0)
    assert indexed == len(reference["equations"]), figures
    assert no_loss(counts) and counts["equations_unexpected"] == 0, counts


def _free_bytes(client) -> int:
    stats = client.nodes.stats(metric="fs")["nodes"]
    return min(int(node["fs"]["total"]["available_in_bytes"]) for node in stats.values())


def _blocked(client, prefix: str) -> list[str]:
    """The deployment's indices that carry a read-only-allow-delete block."""
    settings = client.indices.get_settings(index=f"{prefix}-*", name="index.blocks.read_only_allow_delete")
    return sorted(name for name, body in settings.items() if body.get("settings"))


def _wait(condition: Callable[[], Any], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return bool(condition())


@contextlib.contextmanager
def flood_stage(client, prefix: str) -> Iterator[float]:
    """Every node past its flood-stage watermark until the block ends; yields the seconds the block took to come.

    Absolute watermarks are free-space floors: floors above what the disks have trip the flood stage at the nodes'
    next disk look (10 s apart). "Freeing the disk" is going back to the default ratio watermarks, which the disks are
    far below: the nodes lift the block by themselves, then the watermarks go off again as the nodes' config has them.
    """
    free, gb = _free_bytes(client), 2**30
    trip = {
        "cluster.routing.allocation.disk.threshold_enabled": True,
        "cluster.routing.allocation.disk.watermark.low": f"{free + 3 * gb}b",
        "cluster.routing.allocation.disk.watermark.high": f"{free + 2 * gb}b",
        "cluster.routing.allocation.disk.watermark.flood_stage": f"{free + gb}b",
        "cluster.info.update.interval": "10s",
    }
    reset = dict.fromkeys(trip)
    began = time.monotonic()
    client.cluster.put_settings(persistent=trip)
    try:
        assert _wait(lambda: _blocked(client, prefix), 90), "the flood-stage block never came"
        yield time.monotonic() - began
    finally:
        freed = {**reset, "cluster.routing.allocation.disk.threshold_enabled": True,
                 "cluster.info.update.interval": "10s"}  # fmt: skip
        client.cluster.put_settings(persistent=freed)
        released = _wait(lambda: not _blocked(client, prefix), 90)
        client.cluster.put_settings(persistent=reset)
        assert released, "the flood-stage block stayed after the disk was freed"


def test_a_full_disk_mid_job_is_a_clear_error_and_loses_nothing(
    cluster, client, converter, sources, reference, baseline_ids
):
    prefix = new_prefix("disk")
    prepare(client, prefix)
    assert ingest(client, converter, (str(CORPUS / "papers.jsonl"),), prefix, "baseline").state == "finished"
    gate = Gate(at=2)
    config = job_config(sources, prefix, "disk-full")
    job = IngestJob(client, HashingEncoder(), config, converter=converter, on_progress=gate)
    thread, outcome = run_in_thread(job.run)
    with flood_stage(client, prefix) as seconds_to_block:
        try:
            assert gate.reached.wait(120), "the job never reached its second flush"
        finally:
            gate.released.set()  # its next writes meet the block
        thread.join(JOB_SECONDS)
        ended = not thread.is_alive()
        blocked = _blocked(client, prefix)
    kept_baseline = compare(documents(client, prefix), baseline_ids)
    resumed = IngestJob(client, HashingEncoder(), config, converter=converter).run()
    counts = compare(documents(client, prefix), merged(baseline_ids, reference))
    error, report = outcome.get("error"), outcome.get("result")
    message = f"{type(error).__name__}: {error}" if error else (f"{report.state}: {report.message}" if report else "")
    figures = {
        "seconds_until_blocked": round(seconds_to_block, 1),
        "indices_blocked": len(blocked),
        "job_ended_by_itself": ended,
        "job_error": message[:600],
        "job_documents_failed": report.counts.get("documents_failed") if report else None,
        "baseline_lost_while_full": kept_baseline["equations_lost"] + kept_baseline["papers_lost"],
        "resumed_state": resumed.state,
        "resumed_from_papers": resumed.resumed_from,
        "resumed_equations_indexed": resumed.counts.get("equations_indexed"),
        "resumed_inline_indexed": resumed.counts.get("inline_indexed"),
        **counts,
    }
    record_figures("disk_full", figures)
    assert ended, "the job did not end by itself on a full disk"
    assert kept_baseline["equations_lost"] == kept_baseline["papers_lost"] == 0
    assert "flood-stage watermark" in message, f"no clear error: {message[:600]}"
    assert resumed.state == "finished" and resumed.failures == [], figures
    assert no_loss(counts) and counts["equations_unexpected"] == 0, counts


def test_a_full_disk_under_the_documents_only_loses_nothing(cluster, client, converter, sources, reference):
    """The flood stage is a node's: when only the nodes holding the documents are full, the jobs index still takes
    the checkpoints. The block is the one Elasticsearch puts on every index with a shard on a full node; it is put
    again after every flush, since a node whose disk monitor sees no full disk lifts it (within 30 s)."""
    prefix = new_prefix("disk-part")
    prepare(client, prefix)
    data = f"{prefix}-equations,{prefix}-papers"

    def block() -> None:
        client.indices.put_settings(index=data, settings={"index.blocks.read_only_allow_delete": True})

    gate = Gate(at=2, then=block)
    config = job_config(sources, prefix, "disk-part", max_retries=1)  # each refused flush: one retry, 0.5 s
    job = IngestJob(client, HashingEncoder(), config, converter=converter, on_progress=gate)
    thread, outcome = run_in_thread(job.run)
    try:
        assert gate.reached.wait(120), "the job never reached its second flush"
    finally:
        gate.released.set()
    try:
        thread.join(JOB_SECONDS)
        ended = not thread.is_alive()
    finally:
        client.indices.put_settings(index=data, settings={"index.blocks.read_only_allow_delete": None})
    resumed = IngestJob(client, HashingEncoder(), config, converter=converter).run()
    counts = compare(documents(client, prefix), reference)
    error, report = outcome.get("error"), outcome.get("result")
    figures = {
        "job_ended_by_itself": ended,
        "job_error": f"{type(error).__name__}: {str(error)[:600]}" if error else None,
        "job_state": report.state if report else None,
        "job_documents_failed": report.counts.get("documents_failed") if report else None,
        "job_errors_by_reason": report.errors_by_reason if report else None,
        "resumed_from_papers": resumed.resumed_from,
        "resumed_state": resumed.state,
        **counts,
    }
    record_figures("disk_full_documents_only", figures)
    assert ended, "the job did not end by itself on a full disk"
    refused = report is not None and report.errors_by_reason.get("index:cluster_block_exception")
    if not no_loss(counts) and refused:
        lost = f"{counts['equations_lost']} equations and {counts['papers_lost']} papers lost"
        pytest.xfail(f"{lost}: {CHECKPOINTED_REFUSALS}")
    assert no_loss(counts) and counts["equations_unexpected"] == 0, counts
