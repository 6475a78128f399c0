"""Fixtures of the fault tests: a real 3-node cluster on loopback, a client of all its nodes, KaTeX, the sources.

The cluster (`engine.es.local_cluster.LocalCluster`, 512m heap per node) runs beside the suite's main node on ports of
its own, under ``test-nodes/cluster-faults`` next to the main node's home; its data is wiped before each session and
its distribution kept. Documents come from the web tests' corpus (tests/webui/corpus).
"""

from __future__ import annotations

import json
import random
import shutil
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cluster_faults import (
    documents,
    ingest,
    new_prefix,
    prepare,
)
from eqsearch.engine.es.client import connect
from eqsearch.engine.es.config import EsConfig, LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED
from eqsearch.engine.es.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "webui" / "corpus"
MAIN = LocalNodeConfig.from_env()
HOME = MAIN.home.parent / "test-nodes" / "cluster-faults"
NODES = 3
#: Copies of the corpus's papers JSONL (new ids) in the faulted jobs: enough papers for several flushes.
COPIES = 4


def _free_block(count: int) -> int:
    """A port p with p..p+count-1 and p+100..p+100+count-1 free on 127.0.0.1."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20_000, 29_000)
        ports = [base + i for i in range(count)] + [base + 100 + i for i in range(count)]
        try:
            sockets = []
            for port in ports:
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
        return base
    raise RuntimeError("no free block of ports")


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """A fresh 3-node cluster for the session (stopped at its end)."""
    cached = MAIN.home / "downloads" / f"elasticsearch-{PINNED.version}.zip"
    config = replace(
        MAIN,
        home=HOME,
        nodes=NODES,
        port=_free_block(NODES),
        transport_port=None,
        heap="512m",
        archive=cached if cached.is_file() else None,
        archive_sha256=PINNED.sha256 if cached.is_file() else None,
        startup_timeout=240,
    )
    cluster = LocalCluster(config)
    cluster.stop(timeout=30)  # a session killed earlier may have left it running
    shutil.rmtree(cluster.home, ignore_errors=True)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(timeout=30)


@pytest.fixture(scope="session")
def cluster_config(cluster: LocalCluster) -> EsConfig:
    """Every node's URL: the client sends a request again to another node when one is down."""
    return EsConfig(url=",".join(cluster.urls), request_timeout=30)


@pytest.fixture(scope="session")
def client(cluster_config: EsConfig):
    client, _ = connect(cluster_config)
    yield client
    client.close()


@pytest.fixture(scope="session")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture(scope="session")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    """What the faulted jobs ingest: the corpus's two LaTeX papers and `COPIES` copies of its JSONL under new ids."""
    folder = tmp_path_factory.mktemp("cluster-sources")
    records = [json.loads(line) for line in (CORPUS / "papers.jsonl").read_text().splitlines() if line.strip()]
    lines = []
    for copy in range(COPIES):
        for record in records:
            lines.append(json.dumps({**record, "id": f"{record['id']}c{copy}"}))
    papers = folder / "copies.jsonl"
    papers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return (str(CORPUS / "latex"), str(papers))


@pytest.fixture(scope="session")
def reference(client, converter, sources) -> dict[str, list[str]]:
    """The documents the faulted jobs must leave: the same job on the healthy cluster."""
    prefix = new_prefix("reference")
    prepare(client, prefix)
    report = ingest(client, converter, sources, prefix, "reference")
    assert report.state == "finished" and report.failures == [], report
    return documents(client, prefix)


@pytest.fixture(scope="session")
def baseline_ids(client, converter) -> dict[str, list[str]]:
    """The documents of the corpus's papers JSONL, what every faulted deployment holds before its job."""
    prefix = new_prefix("baseline")
    prepare(client, prefix)
    assert ingest(client, converter, (str(CORPUS / "papers.jsonl"),), prefix, "baseline").state == "finished"
    return documents(client, prefix)
