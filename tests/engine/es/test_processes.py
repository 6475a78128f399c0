"""Processes and ports of the managed nodes (`engine/es/processes.py`): a live or dead pid, a pid another program has
taken since, a port something listens on, and the end of a log, on real processes, sockets and files."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from eqsearch.engine.es.processes import is_elasticsearch_process, pid_alive, port_open, tail


def _sleeper(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])


def test_a_running_process_is_alive_and_a_reaped_one_is_not():
    process = _sleeper()
    try:
        assert pid_alive(process.pid)
    finally:
        process.kill()
        process.wait()
    assert not pid_alive(process.pid)


def test_only_a_process_running_elasticsearch_counts_as_one():
    impostor = _sleeper()
    node_like = _sleeper("-Des.path.home=/x", "org.elasticsearch.bootstrap.Elasticsearch")
    try:
        deadline = time.monotonic() + 10
        while b"org.elasticsearch" not in Path(f"/proc/{node_like.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the child never exec'd"
            time.sleep(0.05)
        assert not is_elasticsearch_process(impostor.pid)  # a pid file's pid reused by another program
        assert is_elasticsearch_process(node_like.pid)
    finally:
        for process in (impostor, node_like):
            process.kill()
            process.wait()


def test_a_port_is_open_while_something_listens_on_it():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port_open(port)
    assert not port_open(port)


def test_tail_gives_the_last_lines_of_a_log(tmp_path):
    log = tmp_path / "node.log"
    log.write_text("".join(f"line {i}\n" for i in range(100_000)))  # more than the 256 KiB it reads
    assert log.stat().st_size > 256 * 1024
    assert tail(log, 3) == ["line 99997", "line 99998", "line 99999"]
    short = tmp_path / "short.log"
    short.write_text("only\nbad byte \xff\n", encoding="latin-1")
    assert tail(short, 10) == ["only", "bad byte \ufffd"]
    assert tail(tmp_path / "missing.log", 5) == []
