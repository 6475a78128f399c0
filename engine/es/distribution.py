"""The Elasticsearch distribution the managed local node runs: pinned by version and SHA-256, and installed.

By default the minimal distribution (``integ-test-zip``) comes from a Maven repository; a user may point at an
official archive (zip or tar.gz) instead, checked against the pinned checksum or one they give. Nothing is unpacked
before its checksum matches; archives are unpacked into a staging folder (zip entries may not leave it, Unix modes
are restored) and moved into place only when they hold ``bin/elasticsearch``. `LocalNode.install` drives this.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.errors import EqsearchError

__all__ = [
    "ES_MAVEN_GROUP",
    "INSTALLED_MARKER",
    "PINNED",
    "ChecksumMismatchError",
    "Distribution",
    "LocalNodeError",
    "ProgressCallback",
    "is_installed",
    "maven_url",
    "obtain_archive",
    "unpack",
]

ES_MAVEN_GROUP = "org.elasticsearch.distribution.integ-test-zip"
#: Written into an unpacked distribution once it is complete; without it the folder is not an installation.
INSTALLED_MARKER = ".eqsearch-installed"


@dataclass(frozen=True)
class Distribution:
    """An Elasticsearch minimal distribution on Maven Central, pinned by version and SHA-256."""

    version: str
    sha256: str


# The newest 9.x minimal distribution on Maven Central when pinned (9.3+ are not published there); the SHA-256
# was measured on the downloaded zip. The client pin in pyproject.toml has the same major.
PINNED = Distribution("9.2.4", "af7b81fe31627c7523b2546351cd4e47310faa6a72c8db8dc8f7a191e871cfaf")

#: Called with (bytes done, total bytes or None) while a distribution downloads.
ProgressCallback = Callable[[int, int | None], None]


class LocalNodeError(EqsearchError):
    """The managed node could not be installed, started or stopped."""

    exit_code = 4


class ChecksumMismatchError(LocalNodeError):
    """A downloaded or given archive is not the expected file."""


def maven_url(repository: str, version: str) -> str:
    """Where a Maven repository keeps the minimal distribution of ``version``."""
    group_path = ES_MAVEN_GROUP.replace(".", "/")
    return f"{repository.rstrip('/')}/{group_path}/elasticsearch/{version}/elasticsearch-{version}.zip"


def is_installed(dist_dir: Path) -> bool:
    """Whether ``dist_dir`` holds a completely unpacked distribution."""
    return (dist_dir / "bin" / "elasticsearch").is_file() and (dist_dir / INSTALLED_MARKER).is_file()


def obtain_archive(
    distribution: Distribution,
    downloads: Path,
    *,
    repository: str,
    archive: Path | None = None,
    archive_sha256: str | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """A verified archive of the distribution: the one given, or one downloaded into ``downloads`` (kept there).

    Args:
        distribution: the version and checksum to install.
        downloads: where downloaded archives are kept (an earlier download with the right checksum is reused).
        repository: base URL of the Maven repository to download from.
        archive: a local archive to use instead of downloading.
        archive_sha256: the expected SHA-256 of ``archive`` (None: it must be the pinned file).
        progress: download progress callback.

    Raises:
        ChecksumMismatchError: the archive is not the expected file (a bad download is deleted).
        LocalNodeError: the given archive does not exist, or the download failed.
    """
    if archive is not None:
        if not archive.is_file():
            raise LocalNodeError(f"the Elasticsearch archive {archive} does not exist")
        if archive_sha256 is None and sha256_file(archive) != distribution.sha256:
            raise ChecksumMismatchError(
                f"{archive} is not the pinned Elasticsearch {distribution.version} zip and no checksum was given",
                hint="pass --sha256 with the checksum published beside the archive",
            )
        if archive_sha256 is not None:
            actual = sha256_file(archive)
            if actual != archive_sha256.lower():
                raise ChecksumMismatchError(f"{archive}: SHA-256 {actual} does not match the expected {archive_sha256}")
        return archive
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / f"elasticsearch-{distribution.version}.zip"
    if target.is_file() and sha256_file(target) == distribution.sha256:
        return target
    partial = target.with_suffix(".zip.part")
    url = maven_url(repository, distribution.version)
    try:
        with urllib.request.urlopen(url, timeout=60) as response, partial.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            done = 0
            while block := response.read(1 << 20):
                out.write(block)
                done += len(block)
                if progress:
                    progress(done, total)
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        partial.unlink(missing_ok=True)
        raise LocalNodeError(
            f"could not download Elasticsearch {distribution.version} from {url}: {error}",
            hint="check the network, set EQSEARCH_MAVEN_REPOSITORY to a mirror, or pass --archive FILE",
        ) from error
    actual = sha256_file(partial)
    if actual != distribution.sha256:
        partial.unlink(missing_ok=True)
        raise ChecksumMismatchError(
            f"the download from {url} has SHA-256 {actual}, expected {distribution.sha256}; it was deleted"
        )
    partial.replace(target)
    return target


def unpack(archive: Path, dist_dir: Path, version: str) -> None:
    """Unpack a verified archive into ``dist_dir`` (replacing what is there), through a staging folder beside it.

    Raises:
        LocalNodeError: the archive is not a zip or tar, has an entry outside its folder, or holds no
            ``bin/elasticsearch``.
    """
    staging = dist_dir.parent / f".unpack-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            _unzip(archive, staging)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tar:
                tar.extractall(staging, filter="data")
        else:
            raise LocalNodeError(f"{archive} is neither a zip nor a tar archive")
        roots = [p for p in staging.iterdir() if p.is_dir()]
        if len(roots) != 1 or not (roots[0] / "bin" / "elasticsearch").is_file():
            raise LocalNodeError(f"{archive} does not look like an Elasticsearch distribution (no bin/elasticsearch)")
        (roots[0] / INSTALLED_MARKER).write_text(json.dumps({"version": version, "archive": str(archive)}))
        shutil.rmtree(dist_dir, ignore_errors=True)
        roots[0].rename(dist_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _unzip(archive: Path, target: Path) -> None:
    root = target.resolve()
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            destination = (target / info.filename).resolve()
            if not destination.is_relative_to(root):
                raise LocalNodeError(f"{archive} has an entry outside its folder: {info.filename}")
            zipped.extract(info, target)
            mode = (info.external_attr >> 16) & 0o777  # zipfile drops Unix modes; bin/ must stay executable
            if mode:
                os.chmod(destination, mode | (0o755 if info.is_dir() else 0o444))
