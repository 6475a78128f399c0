"""The plugin tests' gate: the configured node must have eqsearch's plugin. Without it they are skipped with the
reason; with CI=true they fail instead, unless the node is the managed one and was started before the plugin was
installed into its distribution (it loads the plugin at its next start: `make test` on a running node)."""

from __future__ import annotations

import os

import pytest
from eqsearch.engine.es.distribution import PINNED
from eqsearch.engine.es.plugin import plugin_installed_at
from eqsearch.engine.search.plugin import detect_plugin


def _started_before_install(es_client, es_config) -> bool:
    if not es_config.uses_local_node or es_config.local is None:
        return False
    installed = plugin_installed_at(es_config.local.home / "dist" / PINNED.version)
    if installed is None:
        return False
    nodes = es_client.nodes.info(metric="jvm", filter_path="nodes.*.jvm.start_time_in_millis")["nodes"]
    return all(node["jvm"]["start_time_in_millis"] / 1000 < installed for node in nodes.values())


@pytest.fixture(scope="module")
def require_plugin(es_client, es_config):
    """Returns a check: ``require_plugin(maxsim=False)`` skips or fails the test when the node lacks the plugin."""
    on_ci = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

    def check(*, maxsim: bool = False) -> None:
        support = detect_plugin(es_client)
        if support.available and (support.maxsim or not maxsim):
            return
        message = f"the node has no eqsearch plugin{' with MaxSim' if maxsim else ''}: {support.note}"
        if on_ci and not _started_before_install(es_client, es_config):
            pytest.fail(message + " (CI=true)", pytrace=False)
        pytest.skip(message)

    return check
