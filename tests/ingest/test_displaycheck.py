"""Nothing lost in silence: a paper with no display from a source that holds some is a warning with the count, in the
paper's record and in the extraction statistics (ingest/displaycheck.py, ingest/pipeline.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from eqsearch.engine.latex.install import installed_katex_version
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.displaycheck import NO_DISPLAYS_FOUND, count_display_openers
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import MemoryFiles
from eqsearch.ingest.pipeline import run_extraction
from eqsearch.ingest.records import Paper
from eqsearch.ingest.sources import discover

katex = pytest.mark.skipif(
    installed_katex_version() is None or shutil.which("node") is None, reason="KaTeX/Node not installed (see README)"
)

MAIN = rb"""\documentclass{article}
\def\bea{\begin{eqnarray}}\def\eea{\end{eqnarray}}
\title{Notes}
\begin{document}
\maketitle
Only words here.
\end{document}
"""
# a file that no document inputs (an appendix left out of the build) holds the displays
ORPHAN = rb"""\section{Appendix}
\bea a &=& b \eea
\begin{align*} c &= d \end{align*}
\[ e \]
$$ f $$
\newcommand{\inside}{\begin{equation} g \end{equation}}
"""


def test_display_openers_are_counted_through_shortcuts_and_not_in_definitions():
    text = MAIN.decode() + ORPHAN.decode()
    assert count_display_openers(text) == 4  # \bea, align*, \[, $$ ... $$; not the definition of \inside
    aliased = r"\newenvironment{eqn}{\begin{equation}}{\end{equation}} \begin{eqn} x \end{eqn}"
    assert count_display_openers(aliased) == 1
    assert count_display_openers(r"a \$\$ b \\[2pt] c") == 0  # escaped dollars and a line break's spacing


def test_a_paper_without_displays_from_a_source_with_some_is_warned_with_the_count():
    files = MemoryFiles({"main.tex": MAIN, "appendix.tex": ORPHAN})
    paper = extract_latex_paper(files, paper_id="p", source="p", kind="arxiv", config=ExtractConfig(convert=False))
    assert paper.equations() == []
    (warning,) = paper.warnings
    assert (warning.reason, warning.count) == (NO_DISPLAYS_FOUND, 4)
    assert "open 4 displays" in warning.message and "main.tex" in warning.message
    assert Paper.from_json(json.loads(json.dumps(paper.to_json()))).warnings == [warning]
    # a paper with no display from a source with none is not warned about
    quiet = MemoryFiles({"main.tex": MAIN})
    paper = extract_latex_paper(quiet, paper_id="q", source="q", kind="arxiv", config=ExtractConfig(convert=False))
    assert paper.warnings == [] and paper.to_json()["warnings"] == []


@katex
def test_the_extraction_statistics_name_the_paper_and_the_count(tmp_path: Path):
    (tmp_path / "lost").mkdir()
    (tmp_path / "lost" / "main.tex").write_bytes(MAIN)
    (tmp_path / "lost" / "appendix.tex").write_bytes(ORPHAN)
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "main.tex").write_bytes(MAIN.replace(b"Only words here.", rb"\bea x \eea"))
    tasks = list(discover([str(tmp_path / "lost"), str(tmp_path / "kept")], kind="arxiv"))
    stats = run_extraction(tasks, tmp_path / "out", ExtractConfig(), workers=0)  # converted with KaTeX
    summary = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert summary["warnings"] == {NO_DISPLAYS_FOUND: 1}
    assert summary["displays_missing"]["papers"] == 1 and summary["displays_missing"]["displays"] == 4
    (item,) = summary["displays_missing"]["by_paper"]
    assert (item["paper"], item["displays"]) == ("lost", 4)
    assert stats.equations_status == {"ok": 1}
