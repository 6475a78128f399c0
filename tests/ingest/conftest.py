"""Fixtures of the ingest tests: source archives (good and hostile) built from the fixture papers."""

from __future__ import annotations

import gzip

import pytest
from source_archives import FIXTURES, folder_members, tar_bytes


@pytest.fixture
def multifile_tgz() -> bytes:
    return tar_bytes(folder_members(FIXTURES / "paper_multifile"))


@pytest.fixture
def single_gz() -> bytes:
    return gzip.compress((FIXTURES / "paper_bib" / "paper.tex").read_bytes())
