"""Safe unpacking: every hostile archive becomes a specific recorded error, and nothing touches the disk."""

import gzip
import io
import tarfile
import zipfile

import pytest
from eqsearch.ingest.archive import unpack_source
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.errors import ArchiveLimitError, CorruptArchiveError
from eqsearch.ingest.files import decode_text
from source_archives import tar_bytes

CONFIG = ExtractConfig()


def special_tar(add) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        ok = tarfile.TarInfo("main.tex")
        ok.size = 3
        tar.addfile(ok, io.BytesIO(b"abc"))
        add(tar)
    return buffer.getvalue()


def test_tar_gz_of_a_folder_and_single_gzipped_tex(multifile_tgz, single_gz):
    unpacked = unpack_source(multifile_tgz, "1901.00001.tar.gz", CONFIG)
    assert unpacked.container == "tar" and "sections/intro.tex" in unpacked.files
    single = unpack_source(single_gz, "1901.00002.gz", CONFIG)
    assert single.container == "gzip-tex" and list(single.files) == ["1901.00002.tex"]
    plain = unpack_source(b"\\documentclass{article}", "2101.00001", CONFIG)
    assert list(plain.files) == ["2101.00001.tex"]


@pytest.mark.parametrize("name", ["/etc/passwd", "../../escape.tex", "a/../../b.tex", "C:/windows.tex"])
def test_absolute_and_parent_paths_are_refused(name):
    def add(tar):
        info = tarfile.TarInfo(name)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))

    unpacked = unpack_source(special_tar(add), "evil.tar.gz", CONFIG)
    assert list(unpacked.files) == ["main.tex"]
    assert [i.reason for i in unpacked.issues] == ["unsafe_member"]


def test_links_escaping_refused_links_inside_resolved_devices_refused():
    def add(tar):
        for name, target, kind in [
            ("out", "/etc/shadow", tarfile.SYMTYPE),
            ("up", "../../x", tarfile.SYMTYPE),
            ("copy.tex", "main.tex", tarfile.SYMTYPE),
            ("hard.tex", "main.tex", tarfile.LNKTYPE),
        ]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tar.addfile(info)
        dev = tarfile.TarInfo("dev")
        dev.type = tarfile.CHRTYPE
        tar.addfile(dev)
        fifo = tarfile.TarInfo("fifo")
        fifo.type = tarfile.FIFOTYPE
        tar.addfile(fifo)

    unpacked = unpack_source(special_tar(add), "links.tar.gz", CONFIG)
    assert unpacked.files == {"main.tex": b"abc", "copy.tex": b"abc", "hard.tex": b"abc"}
    assert [i.reason for i in unpacked.issues] == ["unsafe_member"] * 4


def test_truncated_and_corrupt_archives(multifile_tgz):
    with pytest.raises(CorruptArchiveError, match="truncated"):
        unpack_source(multifile_tgz[: len(multifile_tgz) // 2], "cut.tar.gz", CONFIG)
    broken = multifile_tgz[:20] + bytes(b ^ 0xFF for b in multifile_tgz[20:200]) + multifile_tgz[200:]
    with pytest.raises(CorruptArchiveError):
        unpack_source(broken, "broken.tar.gz", CONFIG)
    plain_tar = tar_bytes({"main.tex": b"x" * 5000}, gz=False)
    with pytest.raises(CorruptArchiveError):
        unpack_source(plain_tar[:1500], "cut.tar", CONFIG)
    with pytest.raises(CorruptArchiveError):
        unpack_source(b"PK\x03\x04garbage", "bad.zip", CONFIG)


def test_gzip_bomb_stops_on_ratio_and_on_size():
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024), compresslevel=9)
    with pytest.raises(ArchiveLimitError) as error:
        unpack_source(bomb, "bomb.gz", CONFIG)
    assert error.value.reason == "archive_bomb"
    small_cap = ExtractConfig(max_archive_bytes=2 * 1024 * 1024, max_compression_ratio=10**9)
    with pytest.raises(ArchiveLimitError) as error:
        unpack_source(bomb, "bomb.gz", small_cap)
    assert error.value.reason == "archive_too_large"


def test_too_many_members_and_zip_bomb():
    many = tar_bytes({f"f{i}.tex": b"x" for i in range(60)})
    with pytest.raises(ArchiveLimitError) as error:
        unpack_source(many, "many.tar.gz", ExtractConfig(max_archive_members=50))
    assert error.value.reason == "too_many_members"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("big.tex", b"\0" * (20 * 1024 * 1024))
    with pytest.raises(ArchiveLimitError):
        unpack_source(buffer.getvalue(), "bomb.zip", CONFIG)


def test_binary_and_non_utf8_decoding():
    assert decode_text(b"\x89PNG\r\n\x1a\n\x00\x00") == (None, "binary")
    assert decode_text("café".encode("latin-1")) == ("café", "cp1252")
    assert decode_text(b"\xef\xbb\xbfok") == ("ok", "utf-8")
    assert decode_text(b"\x81\x8d") == ("\x81\x8d", "latin-1")
