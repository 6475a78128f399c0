"""eqsearch's plugin on the local 3-node cluster: starting the cluster installs it into the shared distribution, so
every node loads it and the search service uses it (the fault tests of this folder then search with it)."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.plugin import PLUGIN_VERSION, detect_plugin

pytestmark = [pytest.mark.es, pytest.mark.slow]


def test_every_node_of_the_cluster_has_the_plugin(cluster, client):
    assert cluster.installer.plugin is not None and cluster.installer.plugin.installed, cluster.installer.plugin
    support = detect_plugin(client)
    assert (support.available, support.nodes, support.with_plugin) == (True, 3, 3), support.note
    assert PLUGIN_VERSION in support.note  # the version this engine ships, on every node
