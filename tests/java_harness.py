"""Java test harnesses of the plugin (``tests/es_plugin/*.java``), compiled with the plugin's own compiler against a
fresh build of the plugin and the distribution's lucene-core, and run in the package of the plugin's classes (so
they reach its package-private code); no node is needed."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest
from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, is_installed
from eqsearch.engine.es.plugin import build_plugin, plugin_source

#: A harness's compiled form: the JDK's ``java`` and the class path (the plugin's jar, lucene-core, the harness).
Harness = tuple[Path, str]


def compile_harness(source_file: Path, work: Path) -> Harness:
    """Builds the plugin into ``work`` and compiles ``source_file`` against it (skips without a distribution)."""
    lib = LocalNodeConfig.from_env().home / "dist" / PINNED.version / "lib"
    if not is_installed(lib.parent):
        pytest.skip(f"no Elasticsearch distribution at {lib.parent}: run eqsearch es install")
    source = plugin_source()
    assert source is not None  # the tests run from the repository
    with zipfile.ZipFile(build_plugin(source, lib, work)) as plugin_zip:
        jar = next(name for name in plugin_zip.namelist() if name.endswith(".jar"))
        plugin_zip.extract(jar, work)
    javac = subprocess.run(
        ["bash", str(source / "build.sh"), "--javac"], capture_output=True, text=True, check=True
    ).stdout.strip()
    lucene = next(lib.glob("lucene-core-*.jar"))
    class_path = ":".join(str(path) for path in (work / jar, lucene, work / "classes"))
    subprocess.run(
        [javac, "--add-modules", "jdk.incubator.vector", "-Xlint:-incubating", "-d", str(work / "classes"),
         "-cp", class_path, str(source_file)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(javac).with_name("java"), class_path


def run_harness(harness: Harness, main: str, *java_options: str, timeout: int = 300) -> list[str]:
    """Runs the harness's class ``main`` (a fully qualified name); its standard output's lines."""
    java, class_path = harness
    result = subprocess.run(
        [str(java), *java_options, "-cp", class_path, main], capture_output=True, text=True, timeout=timeout,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()
