"""Installing a distribution without a network or a node: checksums, safe unpacking, and the install marker."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from eqsearch.engine.es.distribution import (
    INSTALLED_MARKER,
    ChecksumMismatchError,
    Distribution,
    LocalNodeError,
    is_installed,
    maven_url,
    obtain_archive,
    unpack,
)


def _zip(path: Path, entries: dict[str, bytes], mode: int = 0o755) -> Path:
    with zipfile.ZipFile(path, "w") as zipped:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            zipped.writestr(info, data)
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_maven_url():
    url = maven_url("https://repo.example/maven2/", "9.2.4")
    assert url == (
        "https://repo.example/maven2/org/elasticsearch/distribution/integ-test-zip/elasticsearch/9.2.4/"
        "elasticsearch-9.2.4.zip"
    )


def test_a_given_archive_is_checked_before_use(tmp_path: Path):
    archive = _zip(tmp_path / "es.zip", {"elasticsearch-1.0/bin/elasticsearch": b"#!/bin/sh\n"})
    pinned = Distribution("1.0", _sha256(archive))
    assert obtain_archive(pinned, tmp_path / "downloads", repository="unused", archive=archive) == archive
    other = Distribution("1.0", "0" * 64)
    with pytest.raises(ChecksumMismatchError, match=r"not the pinned Elasticsearch 1\.0 zip"):
        obtain_archive(other, tmp_path / "downloads", repository="unused", archive=archive)
    given = _sha256(archive).upper()  # a checksum given by the user wins over the pin, in any case
    assert obtain_archive(other, tmp_path, repository="unused", archive=archive, archive_sha256=given) == archive
    with pytest.raises(ChecksumMismatchError, match="does not match the expected"):
        obtain_archive(pinned, tmp_path, repository="unused", archive=archive, archive_sha256="ab" * 32)
    with pytest.raises(LocalNodeError, match="does not exist"):
        obtain_archive(pinned, tmp_path, repository="unused", archive=tmp_path / "missing.zip")


def test_an_earlier_download_with_the_right_checksum_is_reused(tmp_path: Path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    cached = _zip(downloads / "elasticsearch-1.0.zip", {"elasticsearch-1.0/bin/elasticsearch": b""})
    # the repository is never contacted: the URL would fail
    found = obtain_archive(Distribution("1.0", _sha256(cached)), downloads, repository="http://127.0.0.1:9/none")
    assert found == cached


def test_unpack_keeps_modes_and_marks_the_installation(tmp_path: Path):
    archive = _zip(tmp_path / "es.zip", {"elasticsearch-1.0/bin/elasticsearch": b"#!/bin/sh\n"})
    dist_dir = tmp_path / "dist" / "1.0"
    dist_dir.parent.mkdir()
    assert not is_installed(dist_dir)
    unpack(archive, dist_dir, "1.0")
    assert is_installed(dist_dir)
    assert os.access(dist_dir / "bin" / "elasticsearch", os.X_OK)
    assert '"version": "1.0"' in (dist_dir / INSTALLED_MARKER).read_text()
    assert [p.name for p in dist_dir.parent.iterdir()] == ["1.0"]  # no staging folder left behind


def test_unpack_a_tar_archive(tmp_path: Path):
    archive = tmp_path / "es.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("elasticsearch-1.0/bin/elasticsearch")
        info.size, info.mode = 3, 0o755
        tar.addfile(info, io.BytesIO(b"#!\n"))
    dist_dir = tmp_path / "1.0"
    unpack(archive, dist_dir, "1.0")
    assert is_installed(dist_dir)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"../evil": b"x", "elasticsearch-1.0/bin/elasticsearch": b""}, "entry outside its folder"),
        ({"elasticsearch-1.0/README": b"no launcher"}, "no bin/elasticsearch"),
    ],
)
def test_unpack_refuses_what_is_not_a_distribution(tmp_path: Path, entries: dict[str, bytes], message: str):
    archive = _zip(tmp_path / "bad.zip", entries)
    dist_dir = tmp_path / "dist" / "1.0"
    dist_dir.parent.mkdir()
    with pytest.raises(LocalNodeError, match=message):
        unpack(archive, dist_dir, "1.0")
    assert not dist_dir.exists() and list(dist_dir.parent.iterdir()) == []
    (tmp_path / "plain.txt").write_text("not an archive")
    with pytest.raises(LocalNodeError, match="neither a zip nor a tar"):
        unpack(tmp_path / "plain.txt", dist_dir, "1.0")
