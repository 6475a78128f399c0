"""What the search benchmark measures and how it prints it: one JSON object per measurement, latency percentiles,
the machine's load and busy CPU, the Elasticsearch nodes' CPU and memory, an index's size.

Shared by every ``benchmarks/search.py`` command (see that file for how to run them).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "mean": round(statistics.fmean(ordered), 2)}


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine_cpu_s() -> float | None:
    """CPU seconds this machine's cores have been busy so far (all processes), from /proc/stat; None elsewhere."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def node_cpu_ms(client, max_wait_s: float = 2.0) -> int:
    """CPU time the Elasticsearch nodes' processes have used so far (all their threads; every node of a cluster), in
    ms, as of now.

    A node answers its process statistics from a cache refreshed at most once a second
    (``monitor.process.refresh_interval``), so a plain read can be up to a second old: a stage of a few seconds
    would then be charged for work done before it began, or not for its last second. This waits until every node's
    figure is stamped after the call (up to ``max_wait_s``, for nodes whose clocks differ from this one's); the
    wait is idle time, which `measure_stage` discounts.
    """
    asked = time.time() * 1000
    deadline = time.monotonic() + max_wait_s
    while True:
        nodes = client.nodes.stats(metric="process")["nodes"]
        fresh = all(int(node["process"].get("timestamp", 0)) >= asked for node in nodes.values())
        if fresh or time.monotonic() >= deadline:
            return sum(int(node["process"]["cpu"]["total_in_millis"]) for node in nodes.values())
        time.sleep(0.05)


def node_memory(client) -> dict[str, Any]:
    """The node's JVM heap and, when the node runs on this machine and /proc is readable, its resident memory."""
    stats = next(iter(client.nodes.stats(metric="jvm,process")["nodes"].values()))
    info = next(iter(client.nodes.info(metric="process")["nodes"].values()))
    rss = None
    try:
        status = Path(f"/proc/{info['process']['id']}/status").read_text()
        rss = round(int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))) / 1024)
    except (OSError, StopIteration, KeyError, ValueError):
        pass  # a remote node: no resident size
    return {
        "heap_used_mb": round(stats["jvm"]["mem"]["heap_used_in_bytes"] / 2**20),
        "heap_max_mb": round(stats["jvm"]["mem"]["heap_max_in_bytes"] / 2**20),
        "process_virtual_mb": round(stats["process"]["mem"]["total_virtual_in_bytes"] / 2**20),
        "process_rss_mb": rss,
    }


def index_size(client, name: str) -> int:
    return int(client.indices.stats(index=name, metric="store")["indices"][name]["primaries"]["store"]["size_in_bytes"])
