"""Migrations: the re-encoding rewrite; and on a real node: searches running throughout (zero failed searches, zero
lost documents, vectors carried over), the lock and the write block (refused while held, lifted on failure, cleaned
up after a ``kill -9``), the record of how each migration ended, and re-encoding through the command line. (A
migration while an ingest job writes is in tests/ingest/jobs/test_writer.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from eqsearch.engine.index import (
    IndexAdmin,
    IndexOperationError,
    IndexOptions,
    MigrationError,
    bulk_index,
    index_definition,
    is_write_block,
    reencode_vectors,
)
from eqsearch.engine.model import MathMLError

N_DOCS = 3000


class PlusOne:
    """An encoder whose vector of a MathML is its length plus one; it refuses MathML that says "bad"."""

    def encode(self, mathml: list[str]) -> np.ndarray:
        if any("bad" in m for m in mathml):
            raise MathMLError("bad MathML")
        return np.array([[len(m) + 1.0] for m in mathml], dtype=np.float32)


def test_reencoding_replaces_vectors_and_drops_those_it_cannot_make():
    rewrite = reencode_vectors(PlusOne())
    page = [
        {"eq_id": "p:0", "mathml": "<math/>", "vector": [0.0]},
        {"eq_id": "p:1", "mathml": None, "vector": [0.0]},  # no MathML: no vector of another model stays
        {"eq_id": "p:2", "mathml": "<bad/>", "vector": [0.0]},  # refused: encoded one by one, this one drops
        {"eq_id": "p:3", "mathml": "<mi/>"},
    ]
    assert rewrite(page) == [
        {"eq_id": "p:0", "mathml": "<math/>", "vector": [8.0]},
        {"eq_id": "p:1", "mathml": None},
        {"eq_id": "p:2", "mathml": "<bad/>"},
        {"eq_id": "p:3", "mathml": "<mi/>", "vector": [6.0]},
    ]
    assert rewrite([]) == []


@pytest.mark.es
@pytest.mark.slow
def test_migration_under_concurrent_searches_loses_nothing(es_client, index_name, equation_docs):
    admin = IndexAdmin(es_client, index_name)
    alias = f"{index_name}-equations"
    admin.create("equations", IndexOptions())
    assert bulk_index(es_client, equation_docs(alias, N_DOCS), refresh="wait_for").failed == 0
    query_vector = np.random.default_rng(9).normal(size=64).tolist()
    before_knn = [h["_id"] for h in es_client.search(
        index=alias, knn={"field": "vector", "query_vector": query_vector, "k": 5, "num_candidates": 200}, size=5
    )["hits"]["hits"]]  # fmt: skip

    stop = threading.Event()
    outcomes: list[tuple[bool, int]] = []

    def searcher() -> None:
        while not stop.is_set():
            try:
                text = es_client.search(
                    index=alias, query={"match": {"context": "lemma"}}, size=3, track_total_hits=True
                )
                knn = es_client.search(
                    index=alias, knn={"field": "vector", "query_vector": query_vector, "k": 3, "num_candidates": 50}
                )
                ok = text["hits"]["total"]["value"] == N_DOCS // 2 and len(knn["hits"]["hits"]) == 3
                outcomes.append((ok, text["hits"]["total"]["value"]))
            except Exception:
                outcomes.append((False, -1))

    threads = [threading.Thread(target=searcher) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        report = admin.migrate("equations", batch_size=500, delete_old=True)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert report.source == f"{index_name}-equations-v1" and report.target == f"{index_name}-equations-v2"
    assert report.copied == report.source_count == report.target_count == N_DOCS
    assert admin.current("equations") == report.target
    assert len(outcomes) > 5
    assert [o for o in outcomes if not o[0]] == []  # zero failed searches, every one saw all documents
    assert es_client.count(index=alias)["count"] == N_DOCS
    after_knn = [h["_id"] for h in es_client.search(
        index=alias, knn={"field": "vector", "query_vector": query_vector, "k": 5, "num_candidates": 200}, size=5
    )["hits"]["hits"]]  # fmt: skip
    assert after_knn == before_knn  # the vectors came across (9.2+ leaves them out of _source unless asked)
    assert not es_client.indices.exists(index=report.source)


@pytest.mark.es
def test_while_a_migration_copies_a_second_one_and_deleting_its_target_are_refused(
    es_client, index_name, equation_docs
):
    admin = IndexAdmin(es_client, index_name)
    alias = f"{index_name}-equations"
    admin.create("equations", IndexOptions())
    assert bulk_index(es_client, equation_docs(alias, 40), refresh="wait_for").failed == 0
    seen = []

    def meanwhile(copied: int, total: int) -> None:
        if seen:
            return
        lock = admin.migration_lock()
        seen.append(lock)
        assert admin.write_blocked(lock.source) and lock.holder_alive()
        assert (lock.copied, lock.total) == (0, 40)  # the lock record says how much there is to copy
        late = bulk_index(es_client, equation_docs(alias, 1), max_retries=0)  # a writer that missed the lock
        assert [is_write_block(f) for f in late.failures] == [True]
        with pytest.raises(MigrationError, match="still in progress"):
            admin.migrate("equations")
        with pytest.raises(IndexOperationError, match="copying into"):
            admin.delete(lock.target)

    report = admin.migrate("equations", batch_size=10, on_progress=meanwhile)
    [lock] = seen
    assert (lock.source, lock.target) == (report.source, report.target) == (f"{alias}-v1", f"{alias}-v2")
    assert report.copied == report.target_count == 40
    assert admin.migration_lock() is None and admin.current("equations") == report.target
    assert bulk_index(es_client, equation_docs(alias, 41), refresh="wait_for").failed == 0  # writes go to the new index
    assert es_client.count(index=alias)["count"] == 41
    assert sorted(admin.versions("equations")) == [1, 2]  # the refused second migration left nothing behind
    outcome = admin.last_migrations()["equations"]
    assert (outcome.state, outcome.copied, outcome.source, outcome.target) == ("finished", 40, lock.source, lock.target)
    assert outcome.message == f"40 documents copied; {alias} now reads {lock.target}"


@pytest.mark.es
def test_a_failed_migration_lifts_its_block_and_drops_its_lock(es_client, index_name, equation_docs):
    admin = IndexAdmin(es_client, index_name)
    alias = f"{index_name}-equations"
    admin.create("equations", IndexOptions())
    assert bulk_index(es_client, equation_docs(alias, 20), refresh="wait_for").failed == 0
    with pytest.raises(MigrationError, match="failed to copy"):
        admin.migrate("equations", IndexOptions(dims=32))  # the 64-d vectors do not fit
    assert admin.current("equations") == f"{alias}-v1" and admin.versions("equations") == [1]
    assert not admin.write_blocked(alias) and admin.migration_lock() is None
    assert bulk_index(es_client, equation_docs(alias, 21), refresh="wait_for").failed == 0
    outcome = admin.last_migrations()["equations"]
    assert outcome.state == "failed" and outcome.target == f"{alias}-v2"
    assert outcome.message.startswith("failed, nothing changed: 20 documents failed to copy")


@pytest.mark.es
def test_the_lock_is_read_while_the_jobs_index_is_still_starting(es_client, index_name):
    # The moment after a first migration created the jobs index, before its shard started (a web page polling the
    # lock saw 503 then): here a shard that cannot start until its allocation filter is lifted.
    name, definition = f"{index_name}-jobs-v1", index_definition("jobs", IndexOptions())
    waiting = {**definition["settings"], "index.routing.allocation.require._name": "not-yet"}
    es_client.indices.create(
        index=name, settings=waiting, mappings=definition["mappings"], aliases={f"{index_name}-jobs": {}},
        wait_for_active_shards="0",
    )  # fmt: skip
    lift = {"index.routing.allocation.require._name": None}
    start = threading.Timer(0.5, lambda: es_client.indices.put_settings(index=name, settings=lift))
    start.start()
    try:
        assert IndexAdmin(es_client, index_name).migration_lock() is None
    finally:
        start.join()


MIGRATOR = """
import sys, time
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.es.client import connect
from eqsearch.engine.index import IndexAdmin

def hang(copied, total):
    print("copying", flush=True)
    time.sleep(600)  # killed here, mid-copy

client, _ = connect(EsConfig.from_env())
IndexAdmin(client, sys.argv[1]).migrate("equations", batch_size=50, on_progress=hang)
"""


@pytest.mark.es
@pytest.mark.slow
def test_a_migration_killed_mid_copy_is_cleaned_up_by_the_next(es_client, index_name, tmp_path, equation_docs):
    admin = IndexAdmin(es_client, index_name)
    alias = f"{index_name}-equations"
    admin.create("equations", IndexOptions())
    assert bulk_index(es_client, equation_docs(alias, 300), refresh="wait_for").failed == 0
    runner = tmp_path / "migrator.py"
    runner.write_text(MIGRATOR)
    process = subprocess.Popen(
        [sys.executable, str(runner), index_name], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert process.stdout.readline().strip() == "copying"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()

    lock = admin.migration_lock()
    assert (lock.source, lock.target, lock.pid) == (f"{alias}-v1", f"{alias}-v2", process.pid)
    assert lock.holder_alive() is False
    assert admin.write_blocked(lock.source) and es_client.indices.exists(index=lock.target)
    assert es_client.count(index=alias)["count"] == 300  # searches still answer from the old index
    late = bulk_index(es_client, equation_docs(alias, 301), max_retries=0)
    assert late.ok == 0 and all(is_write_block(f) for f in late.failures)  # refused, never half-copied

    # cleans up after the dead one (its half-made v2 deleted, the block lifted), then migrates afresh into a new v2
    report = admin.migrate("equations", batch_size=100)
    assert (report.source, report.target) == (f"{alias}-v1", f"{alias}-v2")
    assert report.copied == report.source_count == report.target_count == 300
    assert admin.migration_lock() is None and admin.current("equations") == f"{alias}-v2"
    assert bulk_index(es_client, equation_docs(alias, 301), refresh="wait_for").failed == 0
    assert es_client.count(index=alias)["count"] == 301


@pytest.mark.es
def test_cli_create_takes_the_bundles_vectors_and_migrate_reencode_re_embeds(
    es_client, index_name, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from eqsearch.engine.model.encoder import load_encoder
    from eqsearch.main import main

    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    shipped = load_encoder()
    assert main(["index", "create", "equations"]) == 0
    admin = IndexAdmin(es_client, index_name)
    options = admin.options_of("equations")
    assert (options.encoder, options.dims, options.similarity) == (shipped.identity, shipped.dim, shipped.similarity)
    with pytest.raises(SystemExit) as usage:
        main(["index", "migrate", "papers", "--reencode"])
    assert usage.value.code == 2 and "--reencode applies to the equations index only" in capsys.readouterr().err
    assert main(["index", "migrate", "equations", "--reencode", "--quiet"]) == 0
    assert admin.current("equations").endswith("-v2")
    assert admin.options_of("equations").encoder == shipped.identity
