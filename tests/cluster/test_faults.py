"""Faults on a real 3-node cluster: a node killed with SIGKILL under searches and an ingest job, and the whole
cluster restarted in the middle of a job (a full disk: tests/cluster/test_full_disk.py).

Each test says what must hold (no failed search after a bounded retry, no lost or duplicated document, the job ends by
itself or resumes) and records its counts in artifacts/cluster-faults.json. The expected documents are those a
reference run of the same job left on the healthy cluster (tests/cluster/conftest.py). Where what must hold fails for
a known gap (`REPLICAS_DROPPED`: benchmarks/scale.md, "What the fault tests found"), the test ends as an expected
failure naming it, after asserting everything else; once the gap is closed, as it is now, the test passes. The
helpers they share are tests/cluster_faults.py.
"""

from __future__ import annotations

import time

import pytest
from cluster_faults import (
    CORPUS,
    JOB_SECONDS,
    Gate,
    SearchLoad,
    compare,
    documents,
    formula_queries,
    ingest,
    job_config,
    kill_node,
    merged,
    new_prefix,
    no_loss,
    prepare,
    primaries_by_node,
    record_figures,
    replicas_of,
    run_in_thread,
)
from eqsearch.engine.search.service import SearchService
from eqsearch.ingest.jobs import IngestJob
from hashing_encoder import HashingEncoder

pytestmark = [pytest.mark.es, pytest.mark.slow]

DOWN_SECONDS = 45  # how long the killed node stays down when the job has not ended by then
SEARCH_SECONDS_DOWN = 8  # searches go on at least this long after the kill
#: The known gap behind the node-kill test's expected failure (benchmarks/scale.md).
REPLICAS_DROPPED = (
    "the ingest job sets number_of_replicas to 0 while it loads (engine/index/bulk.py bulk_loading_settings), so the "
    "killed node's shards have no copy left: searches answer from the other shards without a word "
    "(SearchService does not read _shards.failed) and bulk requests wait for the missing primaries"
)


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
