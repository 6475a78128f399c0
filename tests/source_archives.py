"""Source archives for the tests, built programmatically from the fixture papers in tests/ingest/fixtures."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

FIXTURES = Path(__file__).parent / "ingest" / "fixtures"


def tar_bytes(members: dict[str, bytes], *, gz: bool = True) -> bytes:
    """A tar (gzipped by default) with the given regular-file members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gz else "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def folder_members(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
