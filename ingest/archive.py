"""Safe reading of source archives in memory: gzip, tar, tar.gz, zip; nothing is ever written to disk.

Every member name is checked (no absolute paths, no ``..``, no device files, no links leaving the archive), and
the total of uncompressed bytes, the member count and the compression ratio are capped so that an archive bomb
stops early with a specific error instead of filling memory.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field

from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.errors import ArchiveLimitError, CorruptArchiveError
from eqsearch.ingest.files import is_tex_name, normalize_member
from eqsearch.ingest.records import Issue

_CHUNK = 1 << 20


@dataclass
class UnpackedSource:
    """What an archive (or single compressed file) contained.

    Attributes:
        files: relative path -> bytes.
        issues: members refused or skipped (``unsafe_member``, ``link_member``), recorded on the paper.
        container: ``tar``, ``gzip-tex``, ``zip`` or ``plain``.
    """

    files: dict[str, bytes] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    container: str = "plain"


def gunzip(data: bytes, config: ExtractConfig, name: str) -> bytes:
    """Decompress gzip data (several concatenated members allowed) within the configured limits.

    Raises:
        CorruptArchiveError: not gzip, broken or truncated stream.
        ArchiveLimitError: more than ``max_archive_bytes`` out, or a compression ratio above the limit.
    """
    out = bytearray()
    view = memoryview(data)
    consumed = 0
    while consumed < len(data):
        decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = view[consumed:]
        try:
            while True:
                chunk = decomp.decompress(pending, _CHUNK)
                out += chunk
                _check_size(len(out), len(data) - len(decomp.unused_data), config, name)
                pending = decomp.unconsumed_tail
                if decomp.eof or (not chunk and not pending):
                    break
        except zlib.error as error:
            raise CorruptArchiveError(f"{name}: broken gzip stream ({error})") from None
        if not decomp.eof:
            raise CorruptArchiveError(f"{name}: truncated gzip stream after {len(out):,} bytes")
        consumed = len(data) - len(decomp.unused_data)
        if decomp.unused_data.strip(b"\x00") == b"" or not decomp.unused_data.startswith(b"\x1f\x8b"):
            break
    return bytes(out)


def _check_size(out_bytes: int, in_bytes: int, config: ExtractConfig, name: str) -> None:
    if out_bytes > config.max_archive_bytes:
        raise ArchiveLimitError(
            f"{name}: unpacks to more than {config.max_archive_bytes:,} bytes",
            hint="an archive bomb, or raise --max-archive-mb",
        )
    if out_bytes > _CHUNK and out_bytes > config.max_compression_ratio * max(in_bytes, 1):
        raise ArchiveLimitError(
            f"{name}: compression ratio above {config.max_compression_ratio:.0f}:1 (an archive bomb)",
            reason="archive_bomb",
        )


def is_tar(data: bytes) -> bool:
    return len(data) >= 262 and data[257:262] == b"ustar"


def unpack_source(data: bytes, name: str, config: ExtractConfig) -> UnpackedSource:
    """Unpack one source as arXiv delivers it: ``.tar.gz`` of a folder, gzipped single ``.tex``, ``.tar``, ``.zip``,
    or an uncompressed file.

    Args:
        data: the raw bytes.
        name: the file or member name (gives the single file its name: ``1901.00001.gz`` -> ``1901.00001.tex``).
        config: the limits.

    Raises:
        CorruptArchiveError, ArchiveLimitError: see `gunzip`, `read_tar`.
    """
    if data[:2] == b"\x1f\x8b":
        inner = gunzip(data, config, name)
        if is_tar(inner):
            return read_tar(inner, name, config, compressed_size=len(data))
        return UnpackedSource(files={_single_name(name): inner}, container="gzip-tex")
    if is_tar(data):
        return read_tar(data, name, config, compressed_size=len(data))
    if data[:4] == b"PK\x03\x04":
        return read_zip(data, name, config)
    return UnpackedSource(files={_single_name(name): data}, container="plain")


def _single_name(name: str) -> str:
    """The file name a lone (possibly gzipped) source gets: ``1901.00001.gz`` -> ``1901.00001.tex``."""
    base = posixpath.basename(name)
    for ext in (".gz", ".tgz"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    return base if is_tex_name(base) else base + ".tex"


def read_tar(data: bytes, name: str, config: ExtractConfig, compressed_size: int | None = None) -> UnpackedSource:
    """The regular files of a tar in memory, links inside it resolved, unsafe members refused and recorded."""
    result = UnpackedSource(container="tar")
    links: list[tuple[str, str]] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for count, member in enumerate(tar, start=1):
                if count > config.max_archive_members:
                    raise ArchiveLimitError(
                        f"{name}: more than {config.max_archive_members:,} members", reason="too_many_members"
                    )
                path = normalize_member(member.name)
                if path is None:
                    result.issues.append(
                        Issue("unsafe_member", f"{name}: refused member {member.name!r} (leaves the archive)")
                    )
                    continue
                if member.isdir():
                    continue
                if member.issym() or member.islnk():
                    target = (
                        member.linkname if member.islnk() else posixpath.join(posixpath.dirname(path), member.linkname)
                    )
                    resolved = None if member.linkname.startswith("/") else normalize_member(target)
                    if resolved is None:
                        result.issues.append(
                            Issue(
                                "unsafe_member",
                                f"{name}: refused link {member.name!r} -> {member.linkname!r} (leaves the archive)",
                            )
                        )
                    else:
                        links.append((path, resolved))
                    continue
                if not member.isreg():
                    result.issues.append(Issue("unsafe_member", f"{name}: refused special file {member.name!r}"))
                    continue
                total += member.size
                if total > config.max_archive_bytes:
                    raise ArchiveLimitError(f"{name}: members total more than {config.max_archive_bytes:,} bytes")
                if compressed_size is not None:
                    _check_size(total, compressed_size, config, name)
                handle = tar.extractfile(member)
                if handle is not None:
                    result.files[path] = handle.read()
    except (tarfile.TarError, EOFError, OSError) as error:
        raise CorruptArchiveError(f"{name}: broken tar archive ({error})") from None
    for path, target in links:
        if target in result.files:
            result.files.setdefault(path, result.files[target])
        else:
            result.issues.append(Issue("link_member", f"{name}: link {path!r} points to missing {target!r}"))
    return result


def read_zip(data: bytes, name: str, config: ExtractConfig) -> UnpackedSource:
    """The files of a zip in memory, with the same checks as `read_tar`."""
    result = UnpackedSource(container="zip")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > config.max_archive_members:
                raise ArchiveLimitError(
                    f"{name}: more than {config.max_archive_members:,} members", reason="too_many_members"
                )
            total = 0
            for info in infos:
                path = normalize_member(info.filename)
                if path is None:
                    result.issues.append(Issue("unsafe_member", f"{name}: refused member {info.filename!r}"))
                    continue
                if info.is_dir():
                    continue
                total += info.file_size
                _check_size(total, len(data), config, name)
                result.files[path] = archive.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise CorruptArchiveError(f"{name}: broken zip archive ({error})") from None
    return result
