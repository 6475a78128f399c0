"""Configuration from `EQSEARCH_*` variables (`engine/es/config.py`): a local cluster's nodes, ports and heap, the
index layout, and the switch that turns the plugin off, checked without a node."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from eqsearch.engine.es.config import EsConfig, LocalNodeConfig


def test_a_cluster_config_names_every_node_and_halves_the_heap():
    single = LocalNodeConfig(home=Path("/x"))
    assert single.urls == ("http://127.0.0.1:9200",) and single.node_heap == "1g"
    three = LocalNodeConfig(home=Path("/x"), nodes=3, port=9250)
    assert three.urls == ("http://127.0.0.1:9250", "http://127.0.0.1:9251", "http://127.0.0.1:9252")
    assert three.url == "http://127.0.0.1:9250"
    assert three.node_heap == "512m" and three.first_transport_port == 9350
    assert replace(three, heap="256m", transport_port=9400).node_heap == "256m"
    assert EsConfig(local=three).effective_urls == three.urls
    with pytest.raises(ValueError, match="1 to 9 nodes"):
        LocalNodeConfig(home=Path("/x"), nodes=0)
    with pytest.raises(ValueError, match="ports must lie in"):
        LocalNodeConfig(home=Path("/x"), nodes=3, port=65534)


def test_the_environment_sets_the_cluster():
    env = {"EQSEARCH_HOME": "/h", "EQSEARCH_ES_NODES": "3", "EQSEARCH_ES_PORT": "9300"}
    config = LocalNodeConfig.from_env({**env, "EQSEARCH_ES_TRANSPORT_PORT": "9500"})
    assert (config.home, config.nodes, config.port, config.first_transport_port) == (Path("/h/es"), 3, 9300, 9500)
    assert config.heap is None and config.node_heap == "512m"
    assert LocalNodeConfig.from_env({"EQSEARCH_HOME": "/h", "EQSEARCH_ES_HEAP": "2g"}).node_heap == "2g"
    with pytest.raises(ValueError, match="EQSEARCH_ES_NODES must be a whole number"):
        LocalNodeConfig.from_env({"EQSEARCH_ES_NODES": "three"})


def test_the_environment_sets_the_index_layout():
    assert (EsConfig.from_env({}).shards, EsConfig.from_env({}).replicas) == (None, None)
    config = EsConfig.from_env({"EQSEARCH_SHARDS": "6", "EQSEARCH_REPLICAS": "0"})
    assert (config.shards, config.replicas) == (6, 0)
    with pytest.raises(ValueError, match="EQSEARCH_SHARDS must be a whole number of at least 1"):
        EsConfig.from_env({"EQSEARCH_SHARDS": "0"})
    with pytest.raises(ValueError, match="EQSEARCH_REPLICAS must be a whole number of at least 0"):
        EsConfig.from_env({"EQSEARCH_REPLICAS": "one"})


def test_the_plugin_can_be_turned_off_for_the_managed_node():
    assert LocalNodeConfig.from_env({"EQSEARCH_HOME": "/tmp/x"}).plugin is True
    for value in ("0", "false", "off", "no"):
        assert LocalNodeConfig.from_env({"EQSEARCH_HOME": "/tmp/x", "EQSEARCH_ES_PLUGIN": value}).plugin is False
