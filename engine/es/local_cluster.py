"""A local Elasticsearch cluster: several nodes of the pinned distribution on loopback, formed into one cluster.

For development, the fault tests (``tests/cluster/``) and benchmarks: ``eqsearch es start --nodes 3`` runs three
`LocalNode`s sharing one installed distribution, each with its own HTTP and transport port and its own files under
``<home>/cluster/node-<i>``, every one of them master-eligible and a data node, discovering each other through
``discovery.seed_hosts`` on 127.0.0.1. The first start bootstraps the cluster (``cluster.initial_master_nodes``);
once it has formed, a record (``<home>/cluster/cluster.json``) says so and later starts leave that setting out, as
Elasticsearch asks. `start` launches every member that is not running before waiting for any (a member reports
itself started only once a quorum of masters has formed), then waits for green with every node in, so it also
restarts a member that died and is harmless when all run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
import urllib.error
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, Distribution, LocalNodeError, ProgressCallback
from eqsearch.engine.es.java import find_java
from eqsearch.engine.es.local_node import LocalNode, NodeStatus
from eqsearch.engine.es.node_setup import ClusterMember
from eqsearch.engine.es.processes import pid_alive

__all__ = ["CLUSTER_DIR", "ClusterStatus", "LocalCluster", "recorded_cluster"]

#: The cluster's folder under the node home (beside the single node's config/, data/, ...).
CLUSTER_DIR = "cluster"
_RECORD = "cluster.json"


@dataclass(frozen=True)
class ClusterStatus:
    """What `eqsearch es status` reports for a local cluster: the cluster's health and each node's status."""

    nodes: tuple[NodeStatus, ...]
    health: str | None = None
    number_of_nodes: int | None = None
    note: str | None = None

    @property
    def running(self) -> int:
        """How many members run."""
        return sum(1 for node in self.nodes if node.running)

    def lines(self) -> list[str]:
        """Human-readable lines: the cluster, then one block per node."""
        out = [f"cluster:   {self.running} of {len(self.nodes)} nodes running"]
        if self.health:
            out.append(f"health:    {self.health} ({self.number_of_nodes} nodes in the cluster)")
        if self.note:
            out.append(f"note:      {self.note}")
        for index, node in enumerate(self.nodes, start=1):
            out.append(f"-- node {index}")
            out += ["  " + line for line in node.lines() if not line.startswith(("health:", "installed:"))]
        return out


def recorded_cluster(config: LocalNodeConfig) -> LocalNodeConfig | None:
    """The configuration the local cluster under ``config.home`` was last started with, or None if there is none."""
    record = _read_record(config.home / CLUSTER_DIR / _RECORD)
    if not record:
        return None
    return replace(
        config,
        nodes=int(record["nodes"]),
        port=int(record["port"]),
        transport_port=int(record["transport_port"]),
        heap=record.get("heap") or None,
    )


def _read_record(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


class LocalCluster:
    """A cluster of ``config.nodes`` managed nodes on this machine (node i on ``port + i - 1``).

    Args:
        config: the node home (the distribution is installed under it, the cluster's files go to
            ``home/cluster``), the first node's HTTP and transport ports, the heap per node, and Java.
        distribution: the distribution every node runs.

    Raises:
        ValueError: ``config.nodes`` is below 2 (one node is the single `LocalNode`).
    """

    def __init__(self, config: LocalNodeConfig, *, distribution: Distribution = PINNED) -> None:
        if config.nodes < 2:
            raise ValueError("a local cluster has at least 2 nodes; one node is the single LocalNode")
        self.config = config
        self.home = config.home / CLUSTER_DIR
        self.installer = LocalNode(config, distribution=distribution)
        self.distribution = distribution
        self.version = distribution.version
        self.members = self._members(formed=True)

    def _members(self, *, formed: bool) -> list[LocalNode]:
        """The member nodes; those of a cluster not yet formed carry the bootstrap setting."""
        config = self.config
        names = tuple(f"eqsearch-local-{i}" for i in range(1, config.nodes + 1))
        transports = [config.first_transport_port + i for i in range(config.nodes)]
        return [
            LocalNode(
                replace(config, home=self.home / f"node-{i + 1}", port=config.port + i, heap=config.node_heap),
                distribution=self.distribution,
                member=ClusterMember(
                    name=names[i],
                    transport_port=transports[i],
                    seed_hosts=tuple(f"127.0.0.1:{port}" for port in transports),
                    initial_master_nodes=() if formed else names,
                    install_home=config.home,
                ),
            )
            for i in range(config.nodes)
        ]

    def _formed(self, record: dict[str, Any]) -> bool:
        """Whether the cluster has formed before (and its nodes still hold its data)."""
        data = [member.home / "data" for member in self.members]
        return bool(record.get("formed")) and any(path.is_dir() and any(path.iterdir()) for path in data)

    @property
    def record_file(self) -> Path:
        return self.home / _RECORD

    @property
    def urls(self) -> tuple[str, ...]:
        """Every node's HTTP URL."""
        return tuple(member.url for member in self.members)

    def is_installed(self) -> bool:
        return self.installer.is_installed()

    def install(self, progress: ProgressCallback | None = None) -> Path:
        """Download, verify and unpack the distribution all nodes share (see `LocalNode.install`)."""
        return self.installer.install(progress)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        with (self.home / "lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- start / stop ------------------------------------------------------------------------------------------
    def start(self, progress: ProgressCallback | None = None) -> ClusterStatus:
        """Start every member that is not running and wait for green with all of them in the cluster.

        Raises:
            JavaNotFoundError: no Java 21+.
            PortInUseError: a member's HTTP or transport port is taken.
            LocalNodeError: a member failed to start, the cluster was formed with more nodes than asked for, or it
                did not turn green in time.
        """
        if not self.is_installed():
            self.install(progress)
        with self._lock():
            record = _read_record(self.record_file)
            formed = self._formed(record)
            if formed and int(record.get("nodes", 0)) > self.config.nodes:
                raise LocalNodeError(
                    f"the local cluster in {self.home} was formed with {record['nodes']} nodes; {self.config.nodes} "
                    "of them would leave its indices without their copies",
                    hint=f"start it with --nodes {record['nodes']}, or stop it and delete {self.home} to begin anew",
                )
            self._write_record(formed=formed)
            self.members = self._members(formed=formed)
            java = find_java(self.config.java_home)
            if all(member.read_pid() is None for member in self.members):  # every member loads the same plugins
                self.installer.plugin = self.installer.install_plugin(java)
            launched: list[tuple[LocalNode, Any]] = []
            try:
                for member in self.members:
                    launcher = member.launch(java)
                    if launcher is not None:
                        launched.append((member, launcher))
                for member, launcher in launched:
                    member.await_launch(launcher)
                self._wait_green()
            except BaseException:
                for member, _ in launched:  # what this call started goes down with it
                    with contextlib.suppress(Exception):
                        member.stop(timeout=30)
                raise
            self._write_record(formed=True)
        return self.status()

    def _write_record(self, *, formed: bool) -> None:
        record = {
            "nodes": self.config.nodes,
            "port": self.config.port,
            "transport_port": self.config.first_transport_port,
            "heap": self.config.node_heap,
            "formed": formed,
        }
        self.record_file.write_text(json.dumps(record, indent=2) + "\n")

    def health(self, query: str = "", timeout: float = 10.0) -> dict[str, Any] | None:
        """``GET /_cluster/health?<query>`` from the first member that answers, or None if none does."""
        for member in self.members:
            if member.read_pid() is None:
                continue
            try:
                return member.get_json(f"/_cluster/health?{query}", timeout=timeout)
            except (urllib.error.URLError, OSError, ValueError):
                continue
        return None

    def _wait_green(self) -> None:
        deadline = time.monotonic() + self.config.startup_timeout
        wanted = len(self.members)
        last = "no answer yet"
        while time.monotonic() < deadline:
            for member in self.members:
                pid = member.read_pid()
                if pid is None or not pid_alive(pid):
                    raise member.startup_failure(-1)
            health = self.health(f"wait_for_status=green&wait_for_nodes={wanted}&timeout=5s", timeout=15)
            if health is not None:
                if health.get("status") == "green" and int(health.get("number_of_nodes", 0)) == wanted:
                    return
                last = f"status {health.get('status')}, {health.get('number_of_nodes')} of {wanted} nodes"
            time.sleep(0.5)
        raise LocalNodeError(
            f"the local cluster did not turn green with {wanted} nodes within {self.config.startup_timeout:.0f} s "
            f"({last})",
            hint=f"see the nodes' logs: {self.home}/node-*/logs",
        )

    def stop(self, timeout: float = 60.0) -> int:
        """Stop every member at once (SIGTERM, SIGKILL after `timeout`). Returns how many were running."""
        with ThreadPoolExecutor(max_workers=len(self.members)) as pool:
            stopped = list(pool.map(lambda member: member.stop(timeout), self.members))
        return sum(stopped)

    # -- look ----------------------------------------------------------------------------------------------------
    def status(self) -> ClusterStatus:
        """Each member's status and the cluster's health (as the first member that answers sees it)."""
        nodes = tuple(member.status() for member in self.members)
        health = self.health() if any(node.running for node in nodes) else None
        if health is None:
            return ClusterStatus(nodes)
        return ClusterStatus(nodes, health.get("status"), int(health.get("number_of_nodes", 0)))

    def logs(self, lines: int = 50) -> list[str]:
        """The last `lines` lines of each member's log, each line prefixed by the member's name."""
        out = []
        for member in self.members:
            out += [f"[{member.name}] {line}" for line in member.logs(lines)]
        return out
