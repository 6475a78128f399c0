"""The files of one source document, whether they come from an archive in memory or from a folder on disk."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Protocol

TEX_SUFFIXES = (".tex", ".ltx", ".latex", ".rnw", ".Rnw", ".Rtex")


class SourceFiles(Protocol):
    """Read access to a document's files by relative POSIX path."""

    def names(self) -> list[str]:
        """All file paths, relative, POSIX separators."""
        ...

    def read(self, name: str) -> bytes | None:
        """The bytes of one file, or None when it does not exist (or may not be read)."""
        ...


class MemoryFiles:
    """Files unpacked from an archive (never written to disk)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self._files = files

    def names(self) -> list[str]:
        return sorted(self._files)

    def read(self, name: str) -> bytes | None:
        return self._files.get(normalize_member(name) or "")


class FolderFiles:
    """Files under a folder; a path that leaves the folder (``..``, symlinks pointing out) reads as missing.

    Args:
        root: the folder.
        max_file_bytes: larger files read as missing.
        names: the relative paths to expose, when already known (avoids walking a large tree again).
    """

    def __init__(self, root: Path, max_file_bytes: int, names: list[str] | None = None) -> None:
        self.root = root.resolve()
        self.max_file_bytes = max_file_bytes
        self._names = names
        self._cache: dict[str, bytes | None] = {}

    def names(self) -> list[str]:
        if self._names is None:
            found: list[str] = []
            for dirpath, dirnames, filenames in os.walk(self.root):
                dirnames.sort()
                rel = Path(dirpath).relative_to(self.root).as_posix()
                found.extend(f if rel == "." else f"{rel}/{f}" for f in sorted(filenames))
                if len(found) > 100_000:
                    break
            self._names = found
        return self._names

    def read(self, name: str) -> bytes | None:
        rel = normalize_member(name)
        if rel is None:
            return None
        if rel not in self._cache:
            path = (self.root / rel).resolve()
            ok = path.is_relative_to(self.root) and path.is_file() and path.stat().st_size <= self.max_file_bytes
            self._cache[rel] = path.read_bytes() if ok else None
        return self._cache[rel]


def normalize_member(name: str) -> str | None:
    """A safe relative POSIX path for an archive member or include target, or None if it escapes its root."""
    name = name.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    norm = posixpath.normpath(name)
    if norm in (".", "") or norm == ".." or norm.startswith("../"):
        return None
    return norm


def decode_text(data: bytes) -> tuple[str | None, str]:
    """Decode a source file: UTF-8 (BOM allowed), else Windows-1252, else Latin-1; binary data gives None.

    Returns:
        ``(text, encoding)``; text is None for binary content (NUL bytes in the first 8 KiB).
    """
    if b"\x00" in data[:8192]:
        return None, "binary"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def is_tex_name(name: str) -> bool:
    return name.endswith(TEX_SUFFIXES) or name.lower().endswith(".rnw")
