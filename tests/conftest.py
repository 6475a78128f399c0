"""Shared fixtures and the test tiers (markers `es`, `browser`, `slow`, `gpu`; see pyproject.toml).

Elasticsearch tests run against a real node: the one named by EQSEARCH_ES_URL, else the managed local node that
the README's test command starts. With CI=true an unreachable node fails every `es` test; elsewhere they are
skipped with the reason, so a quick local run without a node still works.

No test may read beside the checkout (a `../shared` that a clone lacks): `tests/outside_reads.py` watches, and the
test during which such a read happened fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from eqsearch.engine.es.config import EsConfig
from outside_reads import CHECKOUT, OutsideReads, default_keep, neighbours
from parallel import Scheduling, slow_units_first
from tiny_papers import random_graph, write_papers

ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
#: the nodes the suite starts itself (extra nodes, the local clusters, those its CLI tests start) live a minute or
#: two: compiled by C1 alone, a node starts in about half the CPU (EQSEARCH_ES_JAVA_OPTS given in the environment wins)
os.environ.setdefault("EQSEARCH_ES_JAVA_OPTS", "-XX:TieredStopAtLevel=1")
OUTSIDE = OutsideReads(neighbours(CHECKOUT, default_keep()))
OUTSIDE.install()


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):  # `make test` runs the suite in workers: tests/parallel.py
        config.pluginmanager.register(Scheduling(), "eqsearch-scheduling")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_units_first(items)
    for item in items:
        # a test that reaches Elasticsearch or Chromium is in that tier, marked or not (`make test-fast` skips them)
        if "es_config" in item.fixturenames and "es" not in item.keywords:
            item.add_marker(pytest.mark.es)
        if "browser" in item.fixturenames and "browser" not in item.keywords:
            item.add_marker(pytest.mark.browser)
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _reads_nothing_beside_the_checkout() -> Iterator[None]:
    """Fails a test that read a file beside the checkout (or one read before it, at collection or by a fixture)."""
    earlier = OUTSIDE.new_reads()
    yield
    reads = earlier + OUTSIDE.new_reads()
    if reads:
        shown = ", ".join(sorted(set(reads))[:5])
        pytest.fail(f"read beside the checkout, which a clone elsewhere lacks: {shown} (copy what a test needs into "
                    "the repository: tests/data/)", pytrace=False)  # fmt: skip


@pytest.fixture
def outside_reads() -> OutsideReads:
    """The suite's watch on reads beside the checkout (a test that reads with it on purpose takes its reads)."""
    return OUTSIDE


@pytest.fixture(scope="session")
def es_config() -> EsConfig:
    """The configuration of the real Elasticsearch the suite uses (checked once)."""
    from eqsearch.engine.errors import EqsearchError
    from eqsearch.engine.es.client import check_cluster

    config = EsConfig.from_env()
    try:
        check_cluster(config)
    except EqsearchError as error:
        message = f"no Elasticsearch for the `es` tests: {error}"
        if ON_CI:
            pytest.fail(message + " (CI=true: Elasticsearch tests never skip)", pytrace=False)
        pytest.skip(message)
    return config


@pytest.fixture(scope="session")
def es_client(es_config: EsConfig):
    from eqsearch.engine.es.client import connect

    client, _ = connect(es_config)
    yield client
    client.close()


@pytest.fixture
def index_name(es_client) -> Iterator[str]:
    """A fresh index name for one test; every index with that prefix is deleted afterwards."""
    name = f"eqsearch-test-{uuid.uuid4().hex[:12]}"
    yield name
    existing = es_client.indices.get(index=f"{name}*", expand_wildcards="all", ignore_unavailable=True)
    for index in existing:
        es_client.indices.delete(index=index, ignore_unavailable=True)


@pytest.fixture
def papers_jsonl(tmp_path: Path) -> Path:
    """A papers JSONL of tiny hand-written papers (tests/tiny_papers.py)."""
    return write_papers(tmp_path / "papers.jsonl")


@pytest.fixture
def make_graph():
    """A random tree of `GraphArrays` (a function of its size and seed)."""
    return random_graph
