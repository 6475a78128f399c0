"""The pinned KaTeX's check and install (`engine.latex.install`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from eqsearch.engine.latex.converter import KatexConfig, KatexConverter
from eqsearch.engine.latex.install import (
    DEFAULT_KATEX_DIR,
    KatexNotInstalledError,
    check_installed,
    ensure_katex_installed,
    installed_katex_version,
)


def test_missing_node_or_katex_is_a_clear_error(tmp_path: Path):
    with pytest.raises(KatexNotInstalledError, match=r"Node\.js was not found") as caught:
        KatexConverter(KatexConfig(node="no-such-node-binary-here")).convert("x")
    assert "eqsearch setup katex" in caught.value.hint
    bare = tmp_path / "katex"
    bare.mkdir()
    shutil.copy(DEFAULT_KATEX_DIR / "package.json", bare / "package.json")
    with pytest.raises(KatexNotInstalledError, match="KaTeX is not installed") as caught:
        KatexConverter(KatexConfig(katex_dir=bare)).convert("x")
    assert "eqsearch setup katex" in caught.value.hint
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(KatexNotInstalledError, match="not eqsearch's KaTeX folder") as caught:
        check_installed(katex_dir=empty)
    assert "eqsearch setup katex" in caught.value.hint


def test_ensure_installed_is_a_no_op_when_present(converter):
    assert ensure_katex_installed(npm="no-such-npm") == installed_katex_version()


@pytest.mark.slow
def test_npm_ci_reproduces_the_pinned_install_from_the_lockfile(tmp_path: Path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    target = tmp_path / "katex"
    target.mkdir()
    for name in ("package.json", "package-lock.json", "worker.js"):
        shutil.copy(DEFAULT_KATEX_DIR / name, target / name)
    try:
        version = ensure_katex_installed(target)
    except KatexNotInstalledError as error:  # no registry access on this machine
        pytest.skip(str(error))
    assert version == installed_katex_version(DEFAULT_KATEX_DIR)
    with KatexConverter(KatexConfig(katex_dir=target)) as conv:
        assert conv.convert("x").status == "ok"


def test_the_installed_version_is_read_from_the_folder(tmp_path: Path):
    assert installed_katex_version(tmp_path) is None
