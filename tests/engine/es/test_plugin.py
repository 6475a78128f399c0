"""Building eqsearch's Elasticsearch plugin (``es-plugin/build.sh``) against the managed node's distribution and
installing it with the distribution's own ``elasticsearch-plugin``: the zip and its descriptor, a clear refusal when
no JDK 21+ compiler is found, an install that happens once per change of the sources, and the switch that turns it
off. (The plugin at work on a real node: ``tests/es_plugin/``.)"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, is_installed
from eqsearch.engine.es.java import find_java
from eqsearch.engine.es.plugin import (
    PLUGIN_NAME,
    PluginBuildError,
    build_plugin,
    ensure_plugin,
    installed_plugin_digest,
    plugin_source,
    source_digest,
)


@pytest.fixture(scope="module")
def dist_dir() -> Path:
    """The managed node's unpacked distribution (installed by `eqsearch es start`)."""
    folder = LocalNodeConfig.from_env().home / "dist" / PINNED.version
    if not is_installed(folder):
        pytest.skip(f"no Elasticsearch distribution at {folder}: run eqsearch es install")
    return folder


@pytest.mark.slow
def test_the_plugin_builds_against_the_distributions_jars_into_one_installable_zip(dist_dir, tmp_path):
    source = plugin_source()
    assert source is not None  # the tests run from the repository
    zip_path = build_plugin(source, dist_dir / "lib", tmp_path)
    assert zip_path.parent == tmp_path and zip_path.name.endswith(f"-es{PINNED.version}.zip")
    with zipfile.ZipFile(zip_path) as plugin_zip:
        names = plugin_zip.namelist()
        descriptor = plugin_zip.read("plugin-descriptor.properties").decode()
    assert any(name.endswith(".jar") for name in names)
    fields = dict(line.split("=", 1) for line in descriptor.splitlines() if line and not line.startswith("#"))
    assert fields["name"] == PLUGIN_NAME
    assert fields["elasticsearch.version"] == PINNED.version  # a classic plugin runs only in its exact version
    assert fields["java.version"] == "21"
    assert fields["classname"] == "org.eqsearch.elasticsearch.EqsearchPlugin"


def test_without_a_jdk_21_compiler_the_build_says_what_it_tried_and_what_to_install(dist_dir, tmp_path, monkeypatch):
    for name in ("JAVAC_HOME", "JAVA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EQSEARCH_JDK_DIRS", str(tmp_path / "no-jdks"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # Debian's default javac here is OpenJDK 17, or none at all
    with pytest.raises(PluginBuildError) as refused:
        build_plugin(plugin_source(), dist_dir / "lib", tmp_path / "out")
    message = str(refused.value)
    assert "no JDK 21+ compiler (javac) found" in message and "JAVAC_HOME" in message
    assert "runs without the plugin" in refused.value.hint
    assert not list((tmp_path / "out").glob("*.zip"))


def test_a_folder_that_is_not_a_distributions_lib_is_refused(tmp_path):
    with pytest.raises(PluginBuildError, match=r"no elasticsearch-<version>\.jar"):
        build_plugin(plugin_source(), tmp_path, tmp_path / "out")


def test_the_source_digest_follows_the_sources_and_the_elasticsearch_version(tmp_path):
    copy = tmp_path / "es-plugin"
    shutil.copytree(plugin_source(), copy, ignore=shutil.ignore_patterns("build"))
    before = source_digest(copy, PINNED.version)
    assert source_digest(copy, "9.9.9") != before
    (copy / "build").mkdir()
    (copy / "build" / "out.java").write_text("// a build output is not a source")
    assert source_digest(copy, PINNED.version) == before
    java = next(copy.rglob("StructureRescorer.java"))
    java.write_text(java.read_text() + "\n// changed\n")
    assert source_digest(copy, PINNED.version) != before


@pytest.mark.slow
def test_the_plugin_is_installed_once_per_change_into_a_distribution(dist_dir, tmp_path):
    # a distribution of its own, sharing the managed one's jars and modules, so the test installs into no node's
    dist = tmp_path / "dist"
    for name in ("bin", "config"):
        shutil.copytree(dist_dir / name, dist / name, symlinks=True)
    for name in ("lib", "modules"):
        (dist / name).symlink_to(dist_dir / name)
    (dist / "plugins").mkdir()
    java = find_java()
    first = ensure_plugin(dist, java.home, PINNED.version, tmp_path / "build")
    assert first.installed and first.changed
    assert (dist / "plugins" / PLUGIN_NAME / "plugin-descriptor.properties").is_file()
    assert installed_plugin_digest(dist) == source_digest(plugin_source(), PINNED.version)
    again = ensure_plugin(dist, java.home, PINNED.version, tmp_path / "build")
    assert again.installed and not again.changed  # the same sources: nothing rebuilt
    (dist / ".eqsearch-plugin.json").write_text('{"digest": "older sources"}')
    renewed = ensure_plugin(dist, java.home, PINNED.version, tmp_path / "build")
    assert renewed.changed and installed_plugin_digest(dist) == source_digest(plugin_source(), PINNED.version)


def _private_dist(dist_dir: Path, home: Path) -> Path:
    """A distribution of its own under ``home``, sharing the managed one's jars and modules (no node's plugins)."""
    dist = home / "dist" / PINNED.version
    for name in ("bin", "config"):
        shutil.copytree(dist_dir / name, dist / name, symlinks=True)
    for name in ("lib", "modules"):
        (dist / name).symlink_to(dist_dir / name)
    (dist / "plugins").mkdir()
    return dist


def test_a_start_without_a_jdk_runs_the_node_without_the_plugin_and_says_why(dist_dir, tmp_path, monkeypatch):
    from eqsearch.engine.es.local_node import LocalNode

    _private_dist(dist_dir, tmp_path)
    node = LocalNode(LocalNodeConfig(home=tmp_path))
    for name in ("JAVAC_HOME", "JAVA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EQSEARCH_JDK_DIRS", str(tmp_path / "no-jdks"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    outcome = node.install_plugin(find_java())
    assert not outcome.installed and "no JDK 21+ compiler" in outcome.note and "JAVAC_HOME" in outcome.note
    with pytest.raises(PluginBuildError):
        node.install_plugin(find_java(), strict=True)
    off = LocalNode(LocalNodeConfig(home=tmp_path, plugin=False)).install_plugin(find_java())
    assert not off.installed and "EQSEARCH_ES_PLUGIN=0" in off.note
