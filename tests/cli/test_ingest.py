"""`eqsearch ingest extract` end to end: progress, statistics, resume, parallel workers, hard time limit."""

import json
import os
import shutil
import time

import pytest
from eqsearch.engine.latex.install import installed_katex_version
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.pipeline import run_extraction
from eqsearch.ingest.sources import discover
from eqsearch.main import main
from source_archives import FIXTURES, tar_bytes

katex = pytest.mark.skipif(
    installed_katex_version() is None or shutil.which("node") is None, reason="KaTeX/Node not installed (see README)"
)


def read_papers(out):
    return [json.loads(line) for line in (out / "papers.jsonl").read_text().splitlines()]


def test_help_lists_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["ingest", "extract", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--out", "--metadata", "--workers", "--no-convert", "--resume", "--time-budget", "py:PACKAGE"):
        assert flag in text


def test_extract_no_convert_in_process_with_metadata_and_resume(tmp_path, capsys):
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "1901.00001v2.tar.gz").write_bytes(
        tar_bytes({"main.tex": (FIXTURES / "paper_multifile" / "main.tex").read_bytes()})
    )
    (sources / "1901.00002.tar.gz").write_bytes(b"\x00\x01 binary, not a source")
    out = tmp_path / "out"
    args = ["ingest", "extract", str(sources), "--out", str(out), "--no-convert", "--workers", "0", "--quiet"]
    assert main([*args, "--metadata", str(FIXTURES / "metadata.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert "documents: 2 (1 extracted)" in printed and "failed  no_main_file: 1" in printed
    papers = {p["id"]: p for p in read_papers(out)}
    assert papers["1901.00001"]["title"] == "Heat Kernels on Graphs (metadata title)"
    assert papers["1901.00001"]["key"] == "1901.00001v2"
    assert papers["1901.00001"]["sections"][0]["equations"][0]["id"] == "1901.00001v2:0"
    stats = json.loads((out / "stats.json").read_text())
    assert stats["documents"] == 2 and stats["documents_failed"] == {"no_main_file": 1}
    assert stats["equations_status"] == {"extracted": stats["equations_found"]} and stats["equations_found"] > 0
    assert main(args) == 2  # the output exists: --resume or --overwrite needed
    assert "--resume" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 0
    assert "documents: 0" in capsys.readouterr().out and len(read_papers(out)) == 2
    assert main([*args, "--overwrite"]) == 0 and len(read_papers(out)) == 2


@pytest.mark.slow
def test_worker_over_budget_is_killed_and_the_run_goes_on(tmp_path):
    fifo = tmp_path / "1901.00005.gz"
    os.mkfifo(fifo)  # reading it blocks forever: only the hard limit ends it
    good = tmp_path / "1901.00006.gz"
    good.write_bytes(tar_bytes({"main.tex": b"\\documentclass{article}\\begin{document}\\[x\\]\\end{document}"}))
    config = ExtractConfig(time_budget_s=0.5, convert=False)
    started = time.perf_counter()
    stats = run_extraction(list(discover([str(fifo), str(good)])), tmp_path / "out", config, workers=2)
    assert time.perf_counter() - started < 30
    assert stats.documents == 2 and stats.documents_failed == {"timeout": 1} and stats.equations_found == 1


@katex
@pytest.mark.slow
def test_extract_with_real_katex_conversion(tmp_path, capsys):
    out = tmp_path / "out"
    folders = [str(FIXTURES / name) for name in ("paper_multifile", "paper_bib", "paper_bbl")]
    assert main(["ingest", "extract", *folders, "--kind", "arxiv", "--out", str(out), "--workers", "2", "--quiet"]) == 0
    equations = [eq for p in read_papers(out) for s in p["sections"] for eq in s["equations"]]
    assert len(equations) == 18
    assert all(eq["status"] == "ok" and eq["mathml"].startswith("<math") for eq in equations)
    alignat = next(eq for eq in equations if eq["environment"] == "alignat")
    assert "<mtable" in alignat["mathml"]
    expectation = next(eq for eq in equations if "\\Exp[Q]" in eq["latex"])
    assert "ℙ" in expectation["mathml"] or "P" in expectation["mathml"]  # the optional argument's default expanded
    stats = json.loads((out / "stats.json").read_text())
    assert stats["conversion_success_rate"] == 1.0 and stats["equations_converted"] == 18


@pytest.mark.parametrize("command", [["ingest", "extract", "SRC", "--out", "OUT"], ["ingest", "run", "SRC"]])
def test_every_source_kind_is_accepted_by_extract_and_run(command) -> None:
    from eqsearch.ingest.sources import KINDS
    from eqsearch.main import build_parser

    for kind in KINDS:
        assert build_parser().parse_args([*command, "--kind", kind]).kind == kind


@pytest.mark.parametrize("workers", ["0", "2"])
def test_missing_katex_stops_extract_at_once_with_the_install_hint(tmp_path, capsys, workers):
    empty = tmp_path / "katex"
    empty.mkdir()
    out = tmp_path / "out"
    args = ["ingest", "extract", str(FIXTURES / "paper_bib"), "--kind", "arxiv", "--out", str(out), "--quiet"]
    assert main([*args, "--workers", workers, "--katex-dir", str(empty)]) == 3
    error = capsys.readouterr().err
    assert "not eqsearch's KaTeX folder" in error and "eqsearch setup katex" in error and "--no-convert" in error
    assert not (out / "papers.jsonl").exists()  # nothing was extracted without its conversion


def test_missing_katex_stops_ingest_run_before_elasticsearch(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EQSEARCH_ES_URL", "http://127.0.0.1:9")  # never contacted: the check comes first
    empty = tmp_path / "katex"
    empty.mkdir()
    assert main(["ingest", "run", str(FIXTURES / "paper_bib"), "--katex-dir", str(empty), "--quiet"]) == 3
    error = capsys.readouterr().err
    assert "eqsearch setup katex" in error and "127.0.0.1:9" not in error


def test_run_extraction_refuses_to_start_without_katex(tmp_path):
    from eqsearch.ingest.convert import ConverterUnavailableError

    with pytest.raises(ConverterUnavailableError):
        run_extraction(list(discover([str(FIXTURES / "paper_bib")])), tmp_path, ExtractConfig(katex_dir=str(tmp_path)))
    assert not (tmp_path / "papers.jsonl").exists()


def test_a_worker_pool_that_would_convert_refuses_to_start_without_katex(tmp_path):
    from eqsearch.ingest.convert import ConverterUnavailableError
    from eqsearch.ingest.pipeline import WorkerPool

    with pytest.raises(ConverterUnavailableError, match="KaTeX"):
        WorkerPool(2, ExtractConfig(katex_dir=str(tmp_path)))
