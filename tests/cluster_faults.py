"""What the fault tests on the real 3-node cluster share: the deployment they make, the jobs they run and hold, the
searches they keep running, and the document counts they compare with a reference run.

The tests themselves are tests/cluster/test_faults.py (a node killed, the whole cluster restarted) and
tests/cluster/test_full_disk.py (a disk past its flood-stage watermark); each records its counts in
artifacts/cluster-faults.json.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqsearch.engine.es.local_cluster import LocalCluster
from eqsearch.engine.index import IndexAdmin, IndexOptions, probe_text_analyzer
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig
from hashing_encoder import HashingEncoder

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "webui" / "corpus"
ARTIFACTS = ROOT / "artifacts"
#: The layout benchmarks/scale.md recommends for 3 nodes: every shard on two nodes, primaries spread over all three.
SHARDS, REPLICAS = 3, 1
JOB_SECONDS = 240  # the longest a faulted job may take to end by itself


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
