"""The plugin's two MaxSim kernels (``MaxSimKernel.java``): the vector API's (``SimdMaxSim``, what a node uses) gives
the same floats, bit for bit, as Lucene's dot product per pair of rows (``MaxSimKernel.Scalar``) on seeded random
rows of many shapes (query rows on both sides of the vector width, one to forty candidate rows, dims whose integer
sums a float could not hold, both directions), and a JVM without ``jdk.incubator.vector`` falls back to the scalar
one. ``MaxSimKernelParity.java`` is compiled with the plugin's own compiler against a fresh build of the plugin and
the distribution's jars; no node is needed. (The kernel a node uses, at work: ``test_maxsim_rescorer.py``.)"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest
from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import PINNED, is_installed
from eqsearch.engine.es.plugin import build_plugin, plugin_source

HARNESS = Path(__file__).with_name("MaxSimKernelParity.java")
MAIN = "org.eqsearch.elasticsearch.MaxSimKernelParity"


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> tuple[Path, str]:
    """The compiled harness's java command prefix: (the JDK's java, the class path)."""
    lib = LocalNodeConfig.from_env().home / "dist" / PINNED.version / "lib"
    if not is_installed(lib.parent):
        pytest.skip(f"no Elasticsearch distribution at {lib.parent}: run eqsearch es install")
    source = plugin_source()
    assert source is not None  # the tests run from the repository
    work = tmp_path_factory.mktemp("kernels")
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
         "-cp", class_path, str(HARNESS)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(javac).with_name("java"), class_path


def _run(harness: tuple[Path, str], *java_options: str) -> list[str]:
    java, class_path = harness
    result = subprocess.run(
        [str(java), *java_options, "-cp", class_path, MAIN], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_vector_kernel_gives_the_scalar_kernels_floats_bit_for_bit(harness):
    lines = _run(harness, "--add-modules", "jdk.incubator.vector")
    assert lines[0] == "kind simd"  # as Elasticsearch's launcher starts every node
    assert lines[-1] == "cases 800 differ 0", "\n".join(lines[-12:])


def test_a_jvm_without_the_vector_module_uses_the_scalar_kernel(harness):
    assert _run(harness)[0] == "kind scalar"


def test_the_scalar_kernel_can_be_chosen(harness):
    assert _run(harness, "--add-modules", "jdk.incubator.vector", "-Deqsearch.maxsim.scalar=true")[0] == "kind scalar"
