"""The term-at-a-time first stage (``TermAtATime.java``) against Lucene's own search of the same disjunction of
boosted term clauses, hit by hit and bit for bit, by each way it reads a segment's norms (``SegmentNorms.java``):
copied once into bytes and shared (then dropped when the reader closes), read live where a reader offers no core cache
key or a norm does not fit in a byte, and a field without norms. Seeded random in-memory indices of several segments
with deleted documents, filtered and not; ``TermAtATimeParity.java`` is compiled against a fresh build of the plugin
and lucene-core, so no node is needed. (The same on a node's real index: ``test_terms_top.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from java_harness import compile_harness, run_harness

HARNESS = Path(__file__).with_name("TermAtATimeParity.java")


pytestmark = pytest.mark.slow  # compiles the plugin and a Java harness (no node)


@pytest.fixture(scope="module")
def lines(tmp_path_factory) -> list[str]:
    harness = compile_harness(HARNESS, tmp_path_factory.mktemp("termsnorms"))
    return run_harness(harness, "org.eqsearch.elasticsearch.TermAtATimeParity")


def test_norms_copied_into_bytes_give_lucenes_hits_and_scores(lines):
    segments, held, differ = lines[0].split()[2::2]
    assert int(segments) > 1  # several segments, each with its own copy
    assert held == segments
    assert differ == "0", "\n".join(lines)


def test_the_copies_are_dropped_when_the_reader_closes(lines):
    assert lines[1] == "bytes after close held 0"


def test_norms_read_live_give_lucenes_hits_and_scores(lines):
    assert lines[2] == "uncached held 0 differ 0"  # no core cache key: nothing held
    assert lines[3].startswith("wide held") and lines[3].endswith(" differ 0")  # norms wider than a byte


def test_a_field_without_norms_gives_lucenes_hits_and_scores(lines):
    assert lines[4] == "no-norms differ 0"
    assert lines[-1] == "differ 0"
