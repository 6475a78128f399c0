"""A disk past its flood-stage watermark on a real 3-node cluster, in the middle of an ingest job: the job stops with
a clear error, nothing indexed before is lost, and once the disk is freed the resumed job writes what was refused
(`CHECKPOINTED_REFUSALS` names the gap an expected failure would point at; closed now). Shared helpers:
tests/cluster_faults.py.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cluster_faults import (
    CORPUS,
    JOB_SECONDS,
    Gate,
    compare,
    documents,
    ingest,
    job_config,
    merged,
    new_prefix,
    no_loss,
    prepare,
    record_figures,
    run_in_thread,
)
from eqsearch.ingest.jobs import IngestJob
from hashing_encoder import HashingEncoder

pytestmark = [pytest.mark.es, pytest.mark.slow]

#: The known gap behind the partial-full-disk test's expected failure.
CHECKPOINTED_REFUSALS = (
    "the job checkpoints a paper whose documents a flood-stage block refused (ingest/jobs/job.py _flush counts them "
    "in documents_failed and checkpoints the paper), so the resumed job skips it"
)


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
