"""What a managed node is started with (`engine/es/node_setup.py`): its configuration folder (the distribution's files
copied once, ``jvm.options`` without the vector API where the runtime lacks it, ``elasticsearch.yml`` for a single
node, a secured node or a cluster member), its process environment, and a secured node's superuser added with the
real distribution's ``elasticsearch-users``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, LocalNodeError, is_installed
from eqsearch.engine.es.java import JavaRuntime, find_java
from eqsearch.engine.es.node_setup import CLUSTER_NAME, ClusterMember, add_superuser, node_environment, prepare_config

VECTOR_LINE = "--add-modules=jdk.incubator.vector"


@pytest.fixture
def fake_dist(tmp_path: Path) -> Path:
    """A distribution's config folder, as the pinned zip ships it (in the parts `prepare_config` reads)."""
    config = tmp_path / "dist" / "config"
    config.mkdir(parents=True)
    (config / "jvm.options").write_text(f"-XX:+UseG1GC\n{VECTOR_LINE}\n-Dfile.encoding=UTF-8\n")
    (config / "log4j2.properties").write_text("status = error\n")
    (config / "elasticsearch.yml").write_text("# the distribution's own\n")
    return tmp_path / "dist"


def _settings(config_dir: Path) -> dict[str, object]:
    lines = (config_dir / "elasticsearch.yml").read_text().splitlines()
    assert lines[0].startswith("# Written by eqsearch")
    return {key: json.loads(value) for key, value in (line.split(": ", 1) for line in lines[1:])}


def _prepare(home: Path, dist: Path, **changes) -> Path:
    arguments = {"name": "n1", "port": 19200, "member": None, "security": False, "account": None,
                 "java": JavaRuntime(Path("/j"), 21, "test")}  # fmt: skip
    return prepare_config(home, dist, **{**arguments, **changes})


def test_a_single_node_listens_on_loopback_alone(tmp_path, fake_dist):
    home = tmp_path / "home"
    config_dir = _prepare(home, fake_dist)
    assert config_dir == home / "config"
    assert _settings(config_dir) == {
        "cluster.name": CLUSTER_NAME,
        "node.name": "n1",
        "path.data": str(home / "data"),
        "path.logs": str(home / "logs"),
        "network.host": "127.0.0.1",
        "http.port": "19200",
        "discovery.type": "single-node",
        "xpack.security.enabled": "false",
        "cluster.routing.allocation.disk.threshold_enabled": "false",
    }
    assert all((home / name).is_dir() for name in ("data", "logs", "tmp", "run"))
    assert (config_dir / "log4j2.properties").read_text() == "status = error\n"


def test_jvm_options_lose_the_vector_api_only_where_the_runtime_lacks_it(tmp_path, fake_dist):
    trimmed = _prepare(tmp_path / "a", fake_dist) / "jvm.options"
    assert trimmed.read_text() == "-XX:+UseG1GC\n-Dfile.encoding=UTF-8\n"
    full = _prepare(tmp_path / "b", fake_dist, java=JavaRuntime(Path("/j"), 21, "system", has_vector_api=True))
    assert VECTOR_LINE in (full / "jvm.options").read_text().splitlines()


def test_the_distributions_files_are_copied_once_and_ours_rewritten_at_every_start(tmp_path, fake_dist):
    home = tmp_path / "home"
    config_dir = _prepare(home, fake_dist)
    (config_dir / "log4j2.properties").write_text("status = debug\n")  # an operator's edit
    (config_dir / "elasticsearch.yml").write_text("http.port: 1\n")
    _prepare(home, fake_dist, port=19201)
    assert (config_dir / "log4j2.properties").read_text() == "status = debug\n"
    assert _settings(config_dir)["http.port"] == "19201"


def test_a_secured_node_has_security_without_tls_on_loopback(tmp_path, fake_dist):
    settings = _settings(_prepare(tmp_path, fake_dist, security=True))
    assert settings["xpack.security.enabled"] == "true"
    assert settings["xpack.security.http.ssl.enabled"] == settings["xpack.security.transport.ssl.enabled"] == "false"


def test_a_cluster_member_finds_the_others_and_bootstraps_only_a_new_cluster(tmp_path, fake_dist):
    seeds = ("127.0.0.1:19300", "127.0.0.1:19301")
    names = ("eqsearch-local-1", "eqsearch-local-2")
    new = ClusterMember("eqsearch-local-2", 19301, seeds, names, tmp_path)
    settings = _settings(_prepare(tmp_path / "a", fake_dist, name=new.name, member=new))
    assert "discovery.type" not in settings
    assert settings["transport.port"] == "19301" and settings["node.name"] == "eqsearch-local-2"
    assert settings["discovery.seed_hosts"] == list(seeds)
    assert settings["cluster.initial_master_nodes"] == list(names)
    formed = ClusterMember("eqsearch-local-2", 19301, seeds, (), tmp_path)
    assert "cluster.initial_master_nodes" not in _settings(_prepare(tmp_path / "b", fake_dist, member=formed))


def test_the_environment_names_java_the_config_the_heap_and_more_options(tmp_path):
    env = node_environment(tmp_path, Path("/jdk"), tmp_path / "config", "256m", "-XX:TieredStopAtLevel=1")
    assert env["ES_JAVA_HOME"] == "/jdk" and env["ES_PATH_CONF"] == str(tmp_path / "config")
    assert env["ES_TMPDIR"] == str(tmp_path / "tmp") and env["HOME"] == str(tmp_path)
    assert env["ES_JAVA_OPTS"] == "-Xms256m -Xmx256m -XX:TieredStopAtLevel=1"
    assert node_environment(tmp_path, Path("/jdk"), tmp_path, "1g")["ES_JAVA_OPTS"] == "-Xms1g -Xmx1g"


@pytest.mark.slow
def test_a_superuser_is_added_to_the_file_realm_and_a_refusal_is_an_error(tmp_path):
    dist_dir = LocalNodeConfig.from_env().home / "dist" / PINNED.version
    if not is_installed(dist_dir):
        pytest.skip(f"no Elasticsearch distribution at {dist_dir}: run eqsearch es install")
    java = find_java()
    config_dir = _prepare(tmp_path, dist_dir, security=True, java=java)
    env = node_environment(tmp_path, java.home, config_dir, "64m")
    add_superuser(dist_dir, ("eqadmin", "right-password-42"), env, None)
    add_superuser(dist_dir, ("eqadmin", "another-password-42"), env, None)  # replaced, not refused as a duplicate
    assert [line.split(":")[0] for line in (config_dir / "users").read_text().splitlines()] == ["eqadmin"]
    assert "superuser:eqadmin" in (config_dir / "users_roles").read_text().splitlines()
    with pytest.raises(LocalNodeError, match="could not add the superuser"):
        add_superuser(dist_dir, ("short", "pw"), env, None)  # too short a password for elasticsearch-users
