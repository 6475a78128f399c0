"""Running the managed node as an unprivileged account (`engine/es/account.py`): the account found (or refused with a
hint), the subprocess arguments that run as it, a tree given to it, and a Java home it can execute, copied when it
cannot reach the original. Real files and the real account database; the tests that change owners run as root."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from eqsearch.engine.es.account import (
    as_account,
    chown_tree,
    open_to_others,
    readable_java_home,
    service_account,
    world_traversable,
)
from eqsearch.engine.es.distribution import LocalNodeError
from eqsearch.engine.es.java import JavaRuntime

NOBODY = pwd.getpwnam("nobody")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changes owners and accounts: needs root")


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """A folder only its owner may enter, directly under the system's temporary folder (whose parents are open)."""
    folder = Path(tempfile.mkdtemp(prefix="eqsearch-account-"))
    assert folder.stat().st_mode & 0o777 == 0o700
    yield folder
    shutil.rmtree(folder)


def _fake_jdk(home: Path) -> JavaRuntime:
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "bin" / "java").chmod(0o755)
    (home / "lib").mkdir()
    (home / "lib" / "modules").write_bytes(b"jimage")
    (home / "lib" / "modules").chmod(0o600)
    return JavaRuntime(home, 21, "test")


def test_as_account_runs_a_command_as_the_account_or_as_ourselves():
    assert as_account(None) == {}
    assert as_account(NOBODY) == {"user": NOBODY.pw_uid, "group": NOBODY.pw_gid, "extra_groups": []}


@needs_root
def test_an_existing_account_is_found_and_a_bad_name_is_refused_with_a_hint(tmp_path):
    assert service_account("nobody", tmp_path) == NOBODY
    with pytest.raises(LocalNodeError, match="could not be created") as refused:
        service_account("not a valid name!", tmp_path)
    assert "EQSEARCH_ES_USER" in refused.value.hint


def test_not_being_root_needs_no_account(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("as root an account is always returned")
    assert service_account("nobody", tmp_path) is None


@needs_root
def test_chown_tree_gives_everything_under_a_folder_and_no_link_target(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours to give")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "file").write_text("x")
    (tree / "link").symlink_to(outside)
    chown_tree(tree, NOBODY.pw_uid, NOBODY.pw_gid)
    for path in (tree, tree / "a", tree / "a" / "b", tree / "a" / "b" / "file"):
        assert (path.stat().st_uid, path.stat().st_gid) == (NOBODY.pw_uid, NOBODY.pw_gid), path
    assert (tree / "link").lstat().st_uid == NOBODY.pw_uid
    assert outside.stat().st_uid == os.geteuid()  # the link itself, not what it points to


def test_a_file_behind_a_closed_folder_is_opened_up_to_the_root(private_dir):
    script = private_dir / "inner" / "run.sh"
    script.parent.mkdir(mode=0o700)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert not world_traversable(script)
    assert not world_traversable(private_dir / "missing")
    open_to_others(script.parent)
    assert world_traversable(script)
    assert private_dir.stat().st_mode & 0o005 == 0o005 and script.parent.stat().st_mode & 0o005 == 0o005


def test_a_java_home_the_account_can_execute_is_used_as_it_is(private_dir):
    java = _fake_jdk(private_dir / "jdk")
    assert readable_java_home(java, None, private_dir / "copies") == java.home  # no account: no copy
    open_to_others(java.home / "bin")
    assert readable_java_home(java, NOBODY, private_dir / "copies") == java.home
    assert not (private_dir / "copies").exists()


def test_a_java_home_the_account_cannot_reach_is_copied_once_and_opened(private_dir):
    java = _fake_jdk(private_dir / "jdk")
    copies = private_dir / "copies"
    copy = readable_java_home(java, NOBODY, copies)
    assert copy == copies / "test-21"
    assert world_traversable(copy / "bin" / "java")
    assert (copy / "lib" / "modules").stat().st_mode & 0o044 == 0o044  # readable by all
    assert (copy / "lib" / "modules").read_bytes() == b"jimage"
    assert [p.name for p in copies.iterdir()] == ["test-21"]  # no staging folder left behind
    (copy / "lib" / "marker").write_text("made after the copy")
    private_dir.chmod(0o700)  # opening the copy opened its parents: close the original again
    assert readable_java_home(java, NOBODY, copies) == copy
    assert (copy / "lib" / "marker").is_file()  # copied once: the second call reuses it
