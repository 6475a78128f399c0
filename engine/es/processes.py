"""Processes and ports of the managed nodes: is a pid alive and an Elasticsearch, is a port taken, a log's end.

Shared by the single node (`local_node`) and the local cluster (`local_cluster`); standard library only.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ["is_elasticsearch_process", "pid_alive", "port_open", "tail"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_elasticsearch_process(pid: int) -> bool:
    """Whether ``pid`` runs Elasticsearch (a pid file may name a pid that another program has since taken)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid_alive(pid)  # no /proc: trust the pid
    return b"org.elasticsearch" in cmdline


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def tail(path: Path, lines: int) -> list[str]:
    """The last ``lines`` lines of a text file (read from its last 256 KiB); none when it cannot be read."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 256 * 1024))
            data = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return data.splitlines()[-lines:]
