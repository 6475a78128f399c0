"""The managed local node (`engine/es/local_node.py`) on real Elasticsearch processes: started, found and stopped
through the command line as an unprivileged account, a stale pid file and a taken port, and the command line's exit
code for an unreachable node. (Java discovery: test_java.py; the client's errors: test_client.py.)

Each test that needs its own node starts one on a spare port with a small heap, beside the suite's main node,
and stops it afterwards. Distributions are cached under the main node's home so reruns download nothing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import replace

import pytest
from eqsearch.engine.es.distribution import PINNED
from eqsearch.engine.es.local_node import LocalNode, PortInUseError
from local_nodes import free_port, node_config


def _eqsearch(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eqsearch", *args], capture_output=True, text=True, env=env, timeout=400, check=False
    )


@pytest.mark.es
@pytest.mark.slow
def test_cli_start_status_stop_as_the_current_user(tmp_path):
    """`eqsearch es start && status && stop` (as root here: the node runs as the unprivileged account)."""
    port = free_port()
    config = node_config("cli", port)
    env = {**os.environ, "EQSEARCH_HOME": str(config.home.parent / "cli-home"), "EQSEARCH_ES_PORT": str(port),
           "EQSEARCH_ES_HEAP": "256m"}  # fmt: skip
    if config.archive:
        env["EQSEARCH_ES_ARCHIVE"], env["EQSEARCH_ES_ARCHIVE_SHA256"] = str(config.archive), PINNED.sha256
    try:
        started = _eqsearch("es", "start", env=env)
        assert started.returncode == 0, started.stderr
        assert f"at http://127.0.0.1:{port}" in started.stdout
        again = _eqsearch("es", "start", env=env)
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stdout
        status = _eqsearch("es", "status", env=env)
        assert status.returncode == 0
        assert f"version:   {PINNED.version}" in status.stdout
        assert "health:    green" in status.stdout
        if os.geteuid() == 0:
            pid = int(status.stdout.split("(pid ")[1].split(")")[0])
            assert os.stat(f"/proc/{pid}").st_uid != 0, "Elasticsearch must not run as root"
    finally:
        stopped = _eqsearch("es", "stop", env=env)
    assert stopped.returncode == 0 and stopped.stdout.strip() == "stopped"
    assert _eqsearch("es", "stop", env=env).stdout.strip() == "not running"
    assert _eqsearch("es", "status", env=env).returncode == 3


@pytest.mark.es
@pytest.mark.slow
def test_stale_pid_file_and_taken_port(tmp_path):
    port = free_port()
    node = LocalNode(node_config("stale", port))
    node.install()
    node.pid_file.parent.mkdir(parents=True, exist_ok=True)
    node.pid_file.write_text(str(os.getpid()))  # alive, but not Elasticsearch: a reused pid
    assert node.read_pid() is None
    assert not node.pid_file.exists()
    node.pid_file.write_text("999999999")  # dead
    try:
        node.start()
        assert node.status().running
        other = LocalNode(replace(node_config("stale-other", port)))
        with pytest.raises(PortInUseError, match=rf"port {port} is already taken by another Elasticsearch"):
            other.start()
    finally:
        assert node.stop()
    with socket.socket() as listener:  # a non-Elasticsearch program on the port
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        with pytest.raises(PortInUseError, match=rf"port {port} is already taken by another program"):
            node.start()


def test_cli_reports_an_unreachable_node_with_its_exit_code():
    env = {**os.environ, "EQSEARCH_ES_URL": f"http://127.0.0.1:{free_port()}"}
    result = _eqsearch("es", "check", env=env)
    assert result.returncode == 5
    assert "Elasticsearch is not reachable" in result.stderr
    assert "Traceback" not in result.stderr
