"""A local cluster of several managed nodes (`engine/es/local_cluster.py`).

The cluster's layout (its members' ports, files and seed hosts; a formed cluster never started with fewer nodes) is
checked without a node; one slow test starts a real 2-node cluster through the command line (`eqsearch es start
--nodes 2`), and finds it again with `status` and `stop` without being told its size. The fault tests on a 3-node
cluster are in tests/cluster/; the cluster's configuration in test_config.py, one client of several node URLs in
test_client.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import replace

import pytest
from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, LocalNodeError
from eqsearch.engine.es.local_cluster import LocalCluster, recorded_cluster
from local_nodes import MAIN, TEST_NODES, free_port


def test_members_get_their_own_ports_files_and_the_seed_hosts(tmp_path):
    cluster = LocalCluster(LocalNodeConfig(home=tmp_path, nodes=3, port=19250))
    fresh = cluster._members(formed=False)
    assert [m.url for m in fresh] == list(cluster.urls)
    assert [m.home for m in fresh] == [tmp_path / "cluster" / f"node-{i}" for i in (1, 2, 3)]
    assert all(m.dist_dir == tmp_path / "dist" / PINNED.version for m in fresh)
    assert [m.member.transport_port for m in fresh] == [19350, 19351, 19352]
    assert fresh[0].member.seed_hosts == ("127.0.0.1:19350", "127.0.0.1:19351", "127.0.0.1:19352")
    assert fresh[2].member.initial_master_nodes == ("eqsearch-local-1", "eqsearch-local-2", "eqsearch-local-3")
    assert all(m.config.node_heap == "512m" for m in fresh)
    assert cluster.members[0].member.initial_master_nodes == ()  # once formed, no bootstrapping
    with pytest.raises(ValueError, match="at least 2 nodes"):
        LocalCluster(LocalNodeConfig(home=tmp_path))


def test_a_cluster_formed_with_more_nodes_is_not_started_with_fewer(tmp_path):
    config = LocalNodeConfig(home=tmp_path, nodes=3, port=19250)
    dist = tmp_path / "dist" / PINNED.version
    (dist / "bin").mkdir(parents=True)  # pretend-installed: the refusal comes before Java or any process
    (dist / "bin" / "elasticsearch").write_text("")
    (dist / ".eqsearch-installed").write_text("{}")
    data = tmp_path / "cluster" / "node-1" / "data"
    data.mkdir(parents=True)
    (data / "_state").mkdir()
    record = {"nodes": 3, "port": 19250, "transport_port": 19350, "heap": "512m", "formed": True}
    (tmp_path / "cluster" / "cluster.json").write_text(json.dumps(record))
    assert recorded_cluster(replace(config, nodes=1, port=9200)) == replace(config, heap="512m", transport_port=19350)
    with pytest.raises(LocalNodeError, match="formed with 3 nodes; 2 of them") as caught:
        LocalCluster(replace(config, nodes=2)).start()
    assert "--nodes 3" in str(caught.value)


@pytest.mark.es
@pytest.mark.slow
def test_cli_starts_finds_and_stops_a_two_node_cluster():
    port = free_port()
    while not all(_port_free(p) for p in (port + 1, port + 100, port + 101)):
        port = free_port()
    home = TEST_NODES / "cli-cluster"
    cached = MAIN.home / "downloads" / f"elasticsearch-{PINNED.version}.zip"
    env = {**os.environ, "EQSEARCH_HOME": str(home), "EQSEARCH_ES_PORT": str(port), "EQSEARCH_ES_HEAP": "256m"}
    env.pop("EQSEARCH_ES_NODES", None)
    if cached.is_file():
        env["EQSEARCH_ES_ARCHIVE"], env["EQSEARCH_ES_ARCHIVE_SHA256"] = str(cached), PINNED.sha256
    try:
        started = _eqsearch("es", "start", "--nodes", "2", env=env)
        assert started.returncode == 0, started.stderr
        assert "cluster of 2 nodes started" in started.stdout and "health green" in started.stdout
        assert f"EQSEARCH_ES_URL=http://127.0.0.1:{port},http://127.0.0.1:{port + 1}" in started.stderr
        status = _eqsearch("es", "status", env=env)  # no --nodes: the running cluster is found
        assert status.returncode == 0, status.stdout + status.stderr
        assert "2 of 2 nodes running" in status.stdout and "health:    green (2 nodes" in status.stdout
        if os.geteuid() == 0:
            pids = [int(line.split("(pid ")[1].rstrip(")")) for line in status.stdout.splitlines() if "(pid " in line]
            assert len(pids) == 2 and all(os.stat(f"/proc/{pid}").st_uid != 0 for pid in pids)
        # Indices made on the cluster get its layout: a primary per data node and a replica on the other node.
        url = f"http://127.0.0.1:{port},http://127.0.0.1:{port + 1}"
        prefix = f"eqsearch-layout-{os.getpid()}-{port}"  # the cluster's data may outlive a run: a prefix of its own
        created = _eqsearch(
            "index", "create", "equations", env={**env, "EQSEARCH_ES_URL": url, "EQSEARCH_INDEX_PREFIX": prefix}
        )
        assert created.returncode == 0, created.stderr
        assert "(analyzer" in created.stdout and "2 shard(s), 1 replica(s)" in created.stdout, created.stdout
    finally:
        stopped = _eqsearch("es", "stop", env=env)
    assert stopped.returncode == 0 and stopped.stdout.strip() == "stopped 2 of 2 nodes", stopped.stdout
    assert _eqsearch("es", "status", "--nodes", "2", env=env).returncode == 3


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _eqsearch(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eqsearch", *args], capture_output=True, text=True, env=env, timeout=400, check=False
    )
