"""The plugin's two MaxSim kernels (``MaxSimKernel.java``): the vector API's (``SimdMaxSim``, what a node uses) gives
the same floats, bit for bit, as Lucene's dot product per pair of rows (``MaxSimKernel.Scalar``) on seeded random
rows of many shapes (query rows on both sides of the vector width, one to forty candidate rows, dims whose integer
sums a float could not hold, both directions), and a JVM without ``jdk.incubator.vector`` falls back to the scalar
one. ``MaxSimKernelParity.java`` is compiled with the plugin's own compiler against a fresh build of the plugin and
the distribution's jars; no node is needed. (The kernel a node uses, at work: ``test_maxsim_rescorer.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from java_harness import Harness, compile_harness, run_harness

HARNESS = Path(__file__).with_name("MaxSimKernelParity.java")
MAIN = "org.eqsearch.elasticsearch.MaxSimKernelParity"


pytestmark = pytest.mark.slow  # compiles the plugin and a Java harness (no node)


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Harness:
    return compile_harness(HARNESS, tmp_path_factory.mktemp("kernels"))


def _run(harness: Harness, *java_options: str) -> list[str]:
    return run_harness(harness, MAIN, *java_options)


def test_the_vector_kernel_gives_the_scalar_kernels_floats_bit_for_bit(harness):
    lines = _run(harness, "--add-modules", "jdk.incubator.vector")
    assert lines[0] == "kind simd"  # as Elasticsearch's launcher starts every node
    assert lines[-1] == "cases 800 differ 0", "\n".join(lines[-12:])


def test_a_jvm_without_the_vector_module_uses_the_scalar_kernel(harness):
    assert _run(harness)[0] == "kind scalar"


def test_the_scalar_kernel_can_be_chosen(harness):
    assert _run(harness, "--add-modules", "jdk.incubator.vector", "-Deqsearch.maxsim.scalar=true")[0] == "kind scalar"
