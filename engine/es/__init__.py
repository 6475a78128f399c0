"""Reaching Elasticsearch: its configuration, a checked client, and the managed local node.

`config` builds `EsConfig` and `LocalNodeConfig` from the environment, `client` connects and checks the cluster,
and `local_node` runs the pinned node (`distribution` installs it, `account` lets an unprivileged account run it,
`java` finds a runtime for it).
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
from eqsearch.engine.es.local_node import LocalNode, NodeStatus, PortInUseError, pid_alive

__all__ = [
    "PINNED",
    "AuthenticationFailedError",
    "ChecksumMismatchError",
    "ClusterInfo",
    "Distribution",
    "ElasticsearchUnavailableError",
    "EsConfig",
    "JavaNotFoundError",
    "JavaRuntime",
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
