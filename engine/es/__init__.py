"""Reaching Elasticsearch: its configuration, a checked client, and the managed local node.

`config` builds `EsConfig` and `LocalNodeConfig` from the environment, `client` connects and checks the cluster,
`local_node` runs the pinned node (`distribution` installs it, `account` lets an unprivileged account run it,
`java` finds a runtime for it, `node_setup` writes what it starts with, `processes` looks at pids and ports) and
`local_cluster` runs several such nodes as one cluster on loopback.
"""

from eqsearch.engine.es.client import (
    AuthenticationFailedError,
    ClusterInfo,
    ElasticsearchUnavailableError,
    VersionMismatchError,
    check_cluster,
    connect,
    make_client,
)
from eqsearch.engine.es.config import EsConfig, LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, ChecksumMismatchError, Distribution, LocalNodeError
from eqsearch.engine.es.java import JavaNotFoundError, JavaRuntime, find_java
from eqsearch.engine.es.local_cluster import ClusterStatus, LocalCluster
from eqsearch.engine.es.local_node import LocalNode, NodeStatus, PortInUseError, pid_alive
from eqsearch.engine.es.node_setup import ClusterMember

__all__ = [
    "PINNED",
    "AuthenticationFailedError",
    "ChecksumMismatchError",
    "ClusterInfo",
    "ClusterMember",
    "ClusterStatus",
    "Distribution",
    "ElasticsearchUnavailableError",
    "EsConfig",
    "JavaNotFoundError",
    "JavaRuntime",
    "LocalCluster",
    "LocalNode",
    "LocalNodeConfig",
    "LocalNodeError",
    "NodeStatus",
    "PortInUseError",
    "VersionMismatchError",
    "check_cluster",
    "connect",
    "find_java",
    "make_client",
    "pid_alive",
]
