"""Macros redefined in a document's body (ingest/macroversions.py): each formula with the definition in force."""

from __future__ import annotations

from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import MemoryFiles

THESIS = rb"""\documentclass{report}
\newcommand{\xleft}{x_{-}}
\begin{document}
\chapter{Two}
\begin{equation}\xleft + \xright\end{equation} and $\xleft^0$.
\chapter{Six}
\renewcommand{\xleft}[1]{x_{-}^{#1}}
\newcommand{\xright}{x_{+}}
\begin{equation}\xleft{0} < \xright\end{equation} and $\xleft{2}$.
\end{document}
"""


def test_a_formula_takes_the_definition_in_force_where_it_stands():
    files = MemoryFiles({"thesis.tex": THESIS})
    paper = extract_latex_paper(files, paper_id="t", source="t", kind="arxiv", config=ExtractConfig(convert=False))
    assert [eq.latex for eq in paper.equations()] == ["\\xleft + \\xright", "\\xleft@va{0} < \\xright"]
    assert [f.latex for f in paper.inline_formulas()] == ["\\xleft^0", "\\xleft@va{2}"]
    made = {m.name: (m.nargs, m.body) for m in paper.macros}
    assert made["\\xleft"] == (0, "x_{-}") and made["\\xleft@va"] == (1, "x_{-}^{#1}")
    assert made["\\xright"] == (0, "x_{+}")  # defined once: no version


def test_a_thesis_renewing_its_notation_converts_chapter_by_chapter():
    from eqsearch.ingest.convert import convert_paper, open_converter

    files = MemoryFiles({"thesis.tex": THESIS})
    paper = extract_latex_paper(files, paper_id="t", source="t", kind="arxiv", config=ExtractConfig(convert=False))
    converter = open_converter()
    try:
        convert_paper(paper, converter, inline=False)
    finally:
        converter.__exit__(None, None, None)
    assert [eq.status for eq in paper.equations()] == ["ok", "ok"]
    minus = '<mo lspace="0em" rspace="0em">−</mo>'
    assert f"<msubsup><mi>x</mi>{minus}<mn>0</mn></msubsup>" in paper.equations()[1].mathml
