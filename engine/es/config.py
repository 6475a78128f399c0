"""Configuration of the engine, built once at the edge (CLI, web app) from `EQSEARCH_*` variables.

Library code receives these frozen dataclasses and never reads the environment itself. `EsConfig` says how to reach
Elasticsearch (one URL, or several nodes of one cluster, comma-separated); `LocalNodeConfig` describes the managed
local node, or a local cluster of several nodes on loopback (``EQSEARCH_ES_NODES``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ENV_PREFIX = "EQSEARCH_"


def _default_home(is_root: bool) -> Path:
    # Elasticsearch refuses to run as root, so a root user's node runs as an unprivileged account that must be
    # able to read the node's files: /root is not traversable by others, hence a system location for root.
    if is_root:
        return Path("/var/lib/eqsearch")
    return Path.home() / ".cache" / "eqsearch"


#: The heap of the single managed node, and of each node of a local cluster (three of them fit beside the suite's node).
SINGLE_NODE_HEAP = "1g"
CLUSTER_NODE_HEAP = "512m"


def _split_urls(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


@dataclass(frozen=True)
class LocalNodeConfig:
    """The managed local Elasticsearch node (`eqsearch es ...`), or a local cluster of `nodes` nodes.

    A cluster's node i (1-based) listens on HTTP ``port + i - 1`` and transport ``transport_port + i - 1``, all on
    127.0.0.1; its files live under ``home/cluster/node-<i>`` beside the single node's.

    Args:
        home: where the distribution, data, logs and pid file live (outside the repository).
        port: HTTP port on 127.0.0.1 (of the first node of a cluster).
        heap: JVM heap per node, e.g. "1g" (min = max); None: 1g for a single node, 512m per node of a cluster.
        java_home: a Java 21+ home to use instead of discovering one.
        run_as: the unprivileged account that runs the node when eqsearch runs as root.
        archive: a local distribution archive (zip or tar.gz) to install instead of downloading one.
        archive_sha256: the expected SHA-256 of `archive` (checked when given).
        maven_repository: base URL of the Maven repository to download the pinned distribution from.
        startup_timeout: seconds to wait for the node to answer healthy (a cluster: green with every node).
        nodes: how many nodes: 1 is the single node (``discovery.type: single-node``), more form one cluster.
        transport_port: the transport port of a cluster's first node (None: ``port + 100``); a single node lets
            Elasticsearch pick one in 9300-9399.
        plugin: build and install eqsearch's Elasticsearch plugin (``es-plugin/``) before a start
            (``EQSEARCH_ES_PLUGIN=0``: leave the distribution as it is).
        java_options: more JVM options for each node, after the heap (``EQSEARCH_ES_JAVA_OPTS``); the test suite's
            short-lived nodes take ``-XX:TieredStopAtLevel=1``, which starts a node in about half the CPU.
    """

    home: Path
    port: int = 9200
    heap: str | None = None
    java_home: Path | None = None
    run_as: str = "eqsearch"
    archive: Path | None = None
    archive_sha256: str | None = None
    maven_repository: str = "https://repo.maven.apache.org/maven2"
    startup_timeout: float = 180.0
    nodes: int = 1
    transport_port: int | None = None
    plugin: bool = True
    java_options: str = ""

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= 9:
            raise ValueError(f"a local cluster has 1 to 9 nodes, got {self.nodes}")
        last = max(self.port, self.first_transport_port if self.nodes > 1 else 0) + self.nodes - 1
        if not self.port > 0 or last > 65535:
            raise ValueError(f"the local node's ports must lie in 1..65535 (port {self.port}, {self.nodes} nodes)")

    @property
    def url(self) -> str:
        """The HTTP URL of the (first) node."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def urls(self) -> tuple[str, ...]:
        """The HTTP URLs of every node (one for a single node)."""
        return tuple(f"http://127.0.0.1:{self.port + i}" for i in range(self.nodes))

    @property
    def node_heap(self) -> str:
        """The heap each node runs with."""
        return self.heap or (SINGLE_NODE_HEAP if self.nodes == 1 else CLUSTER_NODE_HEAP)

    @property
    def first_transport_port(self) -> int:
        """The transport port of a cluster's first node."""
        return self.transport_port if self.transport_port is not None else self.port + 100

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LocalNodeConfig:
        env = os.environ if environ is None else environ
        is_root = hasattr(os, "geteuid") and os.geteuid() == 0
        home = Path(env.get(f"{ENV_PREFIX}HOME") or _default_home(is_root)) / "es"
        java_home = env.get("ES_JAVA_HOME") or env.get(f"{ENV_PREFIX}JAVA_HOME")
        archive = env.get(f"{ENV_PREFIX}ES_ARCHIVE")
        transport = env.get(f"{ENV_PREFIX}ES_TRANSPORT_PORT")
        return cls(
            home=home,
            port=_whole(env, "ES_PORT", 9200),
            heap=env.get(f"{ENV_PREFIX}ES_HEAP") or None,
            nodes=_whole(env, "ES_NODES", 1),
            transport_port=int(transport) if transport else None,
            java_home=Path(java_home) if java_home else None,
            run_as=env.get(f"{ENV_PREFIX}ES_USER", "eqsearch"),
            archive=Path(archive) if archive else None,
            archive_sha256=env.get(f"{ENV_PREFIX}ES_ARCHIVE_SHA256"),
            maven_repository=env.get(f"{ENV_PREFIX}MAVEN_REPOSITORY", "https://repo.maven.apache.org/maven2"),
            plugin=env.get(f"{ENV_PREFIX}ES_PLUGIN", "1").strip().lower() not in {"0", "false", "no", "off"},
            java_options=env.get(f"{ENV_PREFIX}ES_JAVA_OPTS", "").strip(),
        )


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(f"{ENV_PREFIX}{name}") or str(default)
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{ENV_PREFIX}{name} must be a whole number, got {value!r}") from None


def _whole_or_none(env: Mapping[str, str], name: str, least: int) -> int | None:
    value = env.get(f"{ENV_PREFIX}{name}")
    if not value:
        return None
    if not value.strip().isdigit() or int(value) < least:
        raise ValueError(f"{ENV_PREFIX}{name} must be a whole number of at least {least}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class EsConfig:
    """How to reach Elasticsearch.

    With no `url`, eqsearch uses the managed local node (`local`), every node of it when it is a local cluster.
    `url` may name several nodes of one cluster, comma-separated: the client spreads requests over them and sends a
    request again to another node when one does not answer. Credentials: an API key, or a user name and password;
    `ca_file` verifies a TLS cluster's certificate. `shards` and `replicas` (``EQSEARCH_SHARDS``,
    ``EQSEARCH_REPLICAS``) set the layout of the indices eqsearch creates; left unset, it follows the cluster's size
    (`eqsearch.engine.index.recommended_layout`).
    """

    url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # secrets stay out of reprs, logs and pages
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: Path | None = None
    verify_certs: bool = True
    request_timeout: float = 30.0
    index_prefix: str = "eqsearch"
    local: LocalNodeConfig | None = None
    shards: int | None = None
    replicas: int | None = None

    @property
    def uses_local_node(self) -> bool:
        return self.url is None

    @property
    def effective_urls(self) -> tuple[str, ...]:
        """Every node URL requests may go to."""
        if self.url:
            return _split_urls(self.url)
        if self.local is None:
            raise ValueError("EsConfig has neither a url nor a local node")
        return self.local.urls

    @property
    def effective_url(self) -> str:
        """The node URLs as one string (comma-separated when there are several), for messages."""
        return ",".join(self.effective_urls)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EsConfig:
        env = os.environ if environ is None else environ
        ca_file = env.get(f"{ENV_PREFIX}ES_CA_FILE")
        verify = env.get(f"{ENV_PREFIX}ES_VERIFY_CERTS", "true").strip().lower() not in {"0", "false", "no"}
        return cls(
            url=env.get(f"{ENV_PREFIX}ES_URL") or None,
            api_key=env.get(f"{ENV_PREFIX}ES_API_KEY") or None,
            username=env.get(f"{ENV_PREFIX}ES_USERNAME") or None,
            password=env.get(f"{ENV_PREFIX}ES_PASSWORD") or None,
            ca_file=Path(ca_file) if ca_file else None,
            verify_certs=verify,
            request_timeout=float(env.get(f"{ENV_PREFIX}ES_TIMEOUT", "30")),
            index_prefix=env.get(f"{ENV_PREFIX}INDEX_PREFIX", "eqsearch"),
            local=LocalNodeConfig.from_env(env),
            shards=_whole_or_none(env, "SHARDS", least=1),
            replicas=_whole_or_none(env, "REPLICAS", least=0),
        )

    def describe(self) -> str:
        """Where this config points, with no secret in it."""
        auth = "api key" if self.api_key else ("user " + self.username if self.username else "no credentials")
        where = self.url or f"managed local node at {self.effective_url}"
        return f"{where} ({auth})"
