"""Discovery and loading of every source kind, and the hostile documents, through `load_paper`."""

import gzip
import io
import json
import tarfile
import time
import zipfile

import pytest
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.errors import DocumentTooLargeError, IngestError, SourceNotFoundError, TimeBudgetError
from eqsearch.ingest.metadata import apply_metadata, load_metadata
from eqsearch.ingest.pipeline import process_task
from eqsearch.ingest.sources import discover, load_paper
from source_archives import FIXTURES, folder_members, tar_bytes

CONFIG = ExtractConfig()
DOC = b"\\documentclass{article}\\begin{document}\\section{S}\\[ x^2 \\]\\end{document}"


def one(path, **kwargs):
    tasks = list(discover([str(path)], **kwargs))
    assert len(tasks) == 1, tasks
    return tasks[0]


def test_arxiv_tarball_gz_tex_folder_and_tex(tmp_path, multifile_tgz, single_gz):
    (tmp_path / "1901.00001v2.tar.gz").write_bytes(multifile_tgz)
    task = one(tmp_path / "1901.00001v2.tar.gz")
    paper = load_paper(task, CONFIG)
    assert (paper.id, paper.version, paper.kind, paper.key) == ("1901.00001", 2, "arxiv", "1901.00001v2")
    assert len(paper.equations()) == 16 and paper.main_file == "main.tex"
    (tmp_path / "hep-th9901001.gz").write_bytes(single_gz)
    paper = load_paper(one(tmp_path / "hep-th9901001.gz"), CONFIG)
    assert paper.id == "hep-th/9901001" and paper.title == "Cited by bib"
    assert len(load_paper(one(FIXTURES / "paper_bib" / "paper.tex"), CONFIG).equations()) == 1
    assert load_paper(one(FIXTURES / "paper_multifile", kind="arxiv"), CONFIG).title.startswith("Heat")


def test_directory_of_sources(tmp_path, multifile_tgz, single_gz):
    (tmp_path / "1901.00001.tar.gz").write_bytes(multifile_tgz)
    (tmp_path / "1901.00002.gz").write_bytes(single_gz)
    folder = tmp_path / "1901.00003"
    folder.mkdir()
    (folder / "ms.tex").write_bytes(DOC)
    tasks = list(discover([str(tmp_path)]))
    assert sorted(t.paper_id for t in tasks) == ["1901.00001", "1901.00002", "1901.00003"]
    assert all(t.arxiv for t in tasks)


def test_bulk_tar_members_are_read_in_place(tmp_path, multifile_tgz, single_gz):
    bulk = tmp_path / "arXiv_src_1901_001.tar"
    with tarfile.open(bulk, "w") as tar:
        for name, data in [
            ("1901/1901.00001.gz", multifile_tgz),
            ("1901/1901.00002.gz", single_gz),
            ("1901/1901.00003.pdf", b"%PDF-1.4"),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tasks = list(discover([str(bulk)]))
    assert [(t.kind, t.paper_id) for t in tasks] == [
        ("bulk", "1901.00001"),
        ("bulk", "1901.00002"),
        ("bulk", "1901.00003"),
    ]
    papers = [process_task(t, ExtractConfig(convert=False), None) for t in tasks]
    assert [len(p.equations()) for p in papers] == [16, 1, 0]
    assert papers[2].error.reason == "pdf_only"


def test_latex_tree_mains_not_their_inputs(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "book.tex").write_bytes(b"\\documentclass{book}\\begin{document}\\input{ch1}\\end{document}")
    (tmp_path / "book" / "ch1.tex").write_bytes(b"\\chapter{One}\\begin{equation}a\\end{equation}")
    (tmp_path / "book" / "standalone.tex").write_bytes(DOC)
    (tmp_path / "vignette.Rnw").write_bytes(
        b"\\documentclass{article}\\begin{document}\n<<x>>=\nd$y\n@\n\\begin{equation}\\mu\\end{equation}\\end{document}"
    )
    # the LaTeX that Sweave wove from the vignette, shipped beside it: the same document under the same id
    (tmp_path / "vignette.tex").write_bytes(b"\\documentclass{article}\\begin{document}$$\\mu$$\\end{document}")
    tasks = list(discover([str(tmp_path)]))
    assert sorted(t.member for t in tasks) == ["book/book.tex", "book/standalone.tex", "vignette.Rnw"]
    papers = {t.member: load_paper(t, CONFIG) for t in tasks}
    assert [eq.latex for eq in papers["book/book.tex"].equations()] == ["a"]
    assert papers["book/book.tex"].sections[1].kind == "chapter"
    assert [eq.latex for eq in papers["vignette.Rnw"].equations()] == ["\\mu"]


def test_python_docstrings_file_wheel_and_installed_package(tmp_path):
    source = '''"""Module about :math:`x^2`."""
def f():
    """Compute it.

    .. math::
       :label: eq1

       a = b

       c = d

    where :math:`a` is see arXiv:1901.00001.
    """
class K:
    def m(self):
        """.. math:: e^{i\\\\pi} = -1"""
'''
    (tmp_path / "mod.py").write_text(source)
    paper = load_paper(one(tmp_path / "mod.py"), CONFIG)
    assert paper.id == "py:mod" and paper.kind == "docstring" and paper.citations == ["1901.00001"]
    assert [(s.title, s.kind) for s in paper.sections] == [("mod", "front"), ("f", "function"), ("K.m", "function")]
    eqs = paper.equations()
    assert [(e.latex, e.environment, e.display) for e in eqs] == [
        ("x^2", "math-role", False),
        ("a = b", "math-directive", True),
        ("c = d", "math-directive", True),
        ("a", "math-role", False),
        ("e^{i\\pi} = -1", "math-directive", True),
    ]
    assert eqs[1].context_before == "Compute it." and "[math]" in eqs[3].context_before
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/__init__.py", source)
        z.writestr("pkg/sub/bad.py", "def broken(:\n")
    tasks = list(discover([str(wheel)]))
    assert [t.paper_id for t in tasks] == ["py:pkg", "py:pkg.sub.bad"]
    assert len(load_paper(tasks[0], CONFIG).equations()) == 5
    assert process_task(tasks[1], ExtractConfig(convert=False), None).error.reason == "python_syntax_error"
    assert any(t.paper_id == "py:eqsearch.ingest.records" for t in discover(["py:eqsearch.ingest"]))
    with pytest.raises(SourceNotFoundError):
        list(discover(["py:no_such_package_xyz"]))


def test_papers_jsonl_roundtrip(tmp_path):
    paper = load_paper(one(FIXTURES / "paper_multifile", kind="arxiv"), CONFIG)
    minimal = {"id": "other:1", "title": "T", "sections": [{"title": "A", "equations": [{"latex": "a+b"}]}]}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(paper.to_json()) + "\n\n" + json.dumps(minimal) + "\n{broken\n")
    tasks = list(discover([str(path)]))
    back = load_paper(tasks[0], CONFIG)
    assert back.to_json()["sections"] == paper.to_json()["sections"] and back.macros == paper.macros
    small = load_paper(tasks[1], CONFIG)
    assert [(e.number, e.latex, e.environment, e.status) for e in small.equations()] == [
        (0, "a+b", "equation", "extracted")
    ]
    assert process_task(tasks[2], CONFIG, None).error.reason == "bad_paper_json"


def test_metadata_join(tmp_path):
    metadata, bad = load_metadata(FIXTURES / "metadata.jsonl")
    assert bad == 1 and set(metadata) == {"1901.00001", "hep-th/9901001"}
    filtered, _ = load_metadata(FIXTURES / "metadata.jsonl", wanted={"hep-th/9901001"})
    assert set(filtered) == {"hep-th/9901001"}
    paper = load_paper(one(FIXTURES / "paper_multifile", kind="arxiv"), CONFIG)
    apply_metadata(paper, metadata["1901.00001"])
    assert paper.title == "Heat Kernels on Graphs (metadata title)" and paper.abstract == "The metadata abstract."
    assert paper.authors == ["Ada Lovelace", "Carl F. Gauss"]
    assert paper.metadata["categories"] == ["math.SP", "math.CO"]
    assert paper.metadata["published"] == "Mon, 31 Dec 2018 19:00:01 GMT"


def write_tgz(path, members):
    path.write_bytes(tar_bytes(members))
    return one(path)


def test_include_loop_is_recorded_not_a_hang(tmp_path):
    task = write_tgz(
        tmp_path / "loop.tar.gz",
        {
            "main.tex": b"\\documentclass{article}\\begin{document}\\input{a}\\end{document}",
            "a.tex": b"\\[ a \\] \\input{b}",
            "b.tex": b"\\[ b \\] \\input{a.tex}",
        },
    )
    paper = load_paper(task, CONFIG)
    assert [eq.latex for eq in paper.equations()] == [" a ", " b "]
    assert [w.reason for w in paper.warnings] == ["include_loop"]
    assert "a.tex -> b.tex -> a.tex" in paper.warnings[0].message


def test_include_bomb_is_too_large(tmp_path):
    members = {"main.tex": b"\\documentclass{article}\\begin{document}\\input{l0}\\end{document}"}
    for level in range(8):
        members[f"l{level}.tex"] = f"\\input{{l{level + 1}}}\\input{{l{level + 1}}}".encode()
    members["l8.tex"] = b"x" * 10_000
    with pytest.raises(DocumentTooLargeError):
        load_paper(write_tgz(tmp_path / "bomb.tar.gz", members), ExtractConfig(max_document_chars=1_000_000))


def test_binary_non_utf8_missing_and_escaping_inputs(tmp_path):
    task = write_tgz(
        tmp_path / "mixed.tar.gz",
        {
            "main.tex": "\\documentclass{article}\\begin{document}\\section{Caf\xe9}\\input{fig}\\input{gone}"
            "\\input{../../etc/passwd}\\[ \\alpha \\]\\end{document}".encode("latin-1"),
            "fig.tex": b"\x00\x01binary",
        },
    )
    paper = load_paper(task, CONFIG)
    assert paper.sections[1].title == "Café" and len(paper.equations()) == 1
    assert sorted(w.reason for w in paper.warnings) == ["binary_file", "include_missing", "include_missing", "non_utf8"]


def test_one_megabyte_equation_is_a_failed_equation(tmp_path):
    huge = b"\\begin{equation}" + b"x+" * 500_000 + b"1\\end{equation}"
    task = write_tgz(
        tmp_path / "huge.tar.gz",
        {"m.tex": b"\\documentclass{article}\\begin{document}" + huge + b"\\[ y \\]\\end{document}"},
    )
    started = time.perf_counter()
    paper = load_paper(task, CONFIG)
    assert time.perf_counter() - started < 5
    big, small = paper.equations()
    assert (big.status, big.reason, big.length, len(big.latex)) == ("failed", "equation_too_long", 1_000_001, 1000)
    assert small.status == "extracted"


def test_self_recursive_macro_recorded(tmp_path):
    task = write_tgz(
        tmp_path / "rec.tar.gz",
        {"m.tex": b"\\documentclass{article}\\def\\a{\\a+1}\\begin{document}\\[ \\a \\]\\end{document}"},
    )
    paper = load_paper(task, CONFIG)
    assert paper.macros == [] and [w.reason for w in paper.warnings] == ["recursive_macro"]


def test_cooperative_time_budget(tmp_path):
    members = folder_members(FIXTURES / "paper_multifile")
    (tmp_path / "1901.00001.tar.gz").write_bytes(tar_bytes(members))
    with pytest.raises(TimeBudgetError):
        load_paper(one(tmp_path / "1901.00001.tar.gz"), CONFIG, deadline=time.monotonic() - 1)


def test_corrupt_and_empty_archives_become_failed_papers(tmp_path, multifile_tgz):
    (tmp_path / "1901.00009.tar.gz").write_bytes(multifile_tgz[:300])
    paper = process_task(one(tmp_path / "1901.00009.tar.gz"), ExtractConfig(convert=False), None)
    assert paper.status == "failed" and paper.error.reason == "corrupt_archive"
    (tmp_path / "1901.00010.gz").write_bytes(gzip.compress(b"\x00\x01\x02"))
    paper = process_task(one(tmp_path / "1901.00010.gz"), ExtractConfig(convert=False), None)
    assert paper.error.reason == "no_main_file"
    with pytest.raises(IngestError):
        load_paper(one(tmp_path / "1901.00010.gz"), CONFIG)
