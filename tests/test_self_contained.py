"""The suite needs nothing beside the checkout: the watch on reads beside it (`tests/outside_reads.py`) catches what
it should, and the plugin tests, which once read `../shared`, pass from a copy of the repository's files in an
empty folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from outside_reads import CHECKOUT, OutsideReads, neighbours


def _layout(tmp_path: Path) -> Path:
    for name in ("checkout/tests", "shared/benchmarks", "other", ".hidden", "tmp"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "shared" / "benchmarks" / "topics.tsv").write_text("topic\tlatex\n")
    return tmp_path / "checkout"


def test_the_neighbours_are_the_visible_sibling_folders_less_what_is_kept(tmp_path):
    checkout = _layout(tmp_path)
    watched = neighbours(checkout, keep=[tmp_path / "tmp" / "pytest-of-root"])
    assert watched == (f"{tmp_path / 'other'}{os.sep}", f"{tmp_path / 'shared'}{os.sep}")


def test_a_read_beside_the_checkout_is_recorded_and_one_inside_or_elsewhere_is_not(tmp_path):
    checkout = _layout(tmp_path)
    reads = OutsideReads(neighbours(checkout, keep=[]))
    beside = tmp_path / "shared" / "benchmarks" / "topics.tsv"
    reads._hook("open", (str(beside), "r", 0))
    reads._hook("os.listdir", (tmp_path / "shared",))
    reads._hook("open", (str(checkout / "tests" / "x.tsv"), "r", 0))
    reads._hook("open", (str(tmp_path / "sharedx"), "r", 0))  # a prefix of a name is not the folder
    reads._hook("open", (3, "r", 0))  # a file descriptor
    reads._hook("os.scandir", (None,))
    assert reads.new_reads() == [str(beside), str(tmp_path / "shared")]
    assert reads.new_reads() == []


def test_the_watch_is_installed_in_this_run(outside_reads):
    """The conftest's hook is live: a read of a watched folder made here is recorded (and taken, so not failed)."""
    if not outside_reads.watched:
        pytest.skip("nothing beside this checkout to watch")
    os.listdir(outside_reads.watched[0])
    assert outside_reads.new_reads() == [outside_reads.watched[0].rstrip(os.sep)]


def _repository_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=CHECKOUT, capture_output=True, check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.decode(errors='replace').strip()}")
    return [name for name in listed.stdout.decode().split("\0") if name and (CHECKOUT / name).is_file()]


@pytest.mark.es
@pytest.mark.slow
def test_the_plugin_tests_pass_from_a_copy_with_nothing_beside_it(tmp_path, es_config):
    """What a clone holds (tracked and new files, not ignored ones), in an empty folder: the plugin tests' collection
    (the ARQMath excerpt of tests/data) is indexed and searched from there."""
    clone = tmp_path / "empty" / "eqsearch"
    for name in _repository_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CHECKOUT / name, clone / name)
    assert sorted(path.name for path in clone.parent.iterdir()) == ["eqsearch"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
         "tests/es_plugin/test_terms_query.py", "-k", "the_python_rule_and_the_plugins_keep_the_same_terms"],
        cwd=clone, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "CI": "true"},
    )  # fmt: skip
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
