"""docker/: the Elasticsearch image compose.yaml's nodes run is the pinned official image with eqsearch's plugin,
built by es-plugin/build.sh against that image's jars; the app image leaves the plugin to it (no Docker engine
needed for these checks)."""

from __future__ import annotations

import re
from pathlib import Path

from eqsearch.engine.es.distribution import PINNED

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def test_the_elasticsearch_stage_installs_the_plugin_built_against_the_pinned_image():
    assert re.search(r"^ARG ES_VERSION=(\S+)$", DOCKERFILE, re.M).group(1) == PINNED.version
    stages = re.findall(r"^FROM (\S+) AS (\S+)$", DOCKERFILE, re.M)
    assert [name for _, name in stages] == ["es-dist", "es-plugin", "elasticsearch", "app"]  # the app is the default
    assert "bash /src/es-plugin/build.sh /es/lib /out" in DOCKERFILE
    assert "bin/elasticsearch-plugin install --batch" in DOCKERFILE
    assert "ES_PLUGIN=0" in DOCKERFILE  # the app's make setup builds no plugin


def test_compose_nodes_run_the_image_with_the_plugin():
    compose = (ROOT / "docker" / "compose.yaml").read_text()
    node = compose.split("x-es-node: &es-node", 1)[1].split("\nx-", 1)[0]
    assert "target: elasticsearch" in node and "dockerfile: docker/Dockerfile" in node
