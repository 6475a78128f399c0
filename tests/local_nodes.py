"""Extra real Elasticsearch nodes for tests that need one beside the suite's main node: a spare port, a home under
``test-nodes/`` next to the main node's, and the distribution zip the main node downloaded, so reruns download
nothing."""

from __future__ import annotations

import socket
from dataclasses import replace
from typing import Any

from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, Distribution

MAIN = LocalNodeConfig.from_env()
TEST_NODES = MAIN.home.parent / "test-nodes"


def free_port() -> int:
    """A port nothing on this machine listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_config(name: str, port: int, distribution: Distribution = PINNED, **changes: Any) -> LocalNodeConfig:
    """The main node's configuration for a small node of its own (256 MB heap) named ``name`` on ``port``."""
    cached = MAIN.home / "downloads" / f"elasticsearch-{distribution.version}.zip"
    return replace(
        MAIN,
        home=TEST_NODES / name,
        port=port,
        heap="256m",
        archive=cached if cached.is_file() else None,
        archive_sha256=distribution.sha256 if cached.is_file() else None,
        startup_timeout=240,
        **changes,
    )
