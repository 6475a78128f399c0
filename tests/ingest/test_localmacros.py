"""The commands a document gets from its class and packages (`eqsearch.ingest.localmacros`), through extraction."""

from __future__ import annotations

from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import MemoryFiles
from eqsearch.ingest.localmacros import loaded_package_commands


def test_package_commands_only_for_the_documents_that_load_the_package():
    names = [m.name for m in loaded_package_commands(r"\usepackage{amsmath,commath}\usepackage[a=b]{diffcoeff}")]
    assert names == ["\\dif", "\\od", "\\pd", "\\diff", "\\diffp"]
    assert loaded_package_commands(r"\usepackage{amsmath}") == []


def test_a_loaded_packages_command_yields_to_the_documents_definition_and_wins_over_provide():
    """commath loaded: its ``\\od`` stands, a ``\\providecommand{\\od}`` defines nothing (as in LaTeX); a document's
    ``\\renewcommand{\\pd}`` replaces the package's."""
    main = (
        rb"\documentclass{article}\usepackage{commath}\providecommand{\od}{\mathrm{d}}"
        rb"\renewcommand{\pd}[2]{\partial_{#2} #1}\begin{document}\[\od{y}{x} = \pd{f}{t}\]\end{document}"
    )
    files = MemoryFiles({"main.tex": main})
    paper = extract_latex_paper(files, paper_id="p", source="p", kind="arxiv", config=ExtractConfig(convert=False))
    sources = {m.name: (m.source, m.body) for m in paper.macros}
    assert sources["\\od"][0] == "package" and sources["\\pd"] == ("renewcommand", "\\partial_{#2} #1")
    bare = MemoryFiles({"main.tex": rb"\documentclass{article}\begin{document}\[\od{y}{x}\]\end{document}"})
    paper = extract_latex_paper(bare, paper_id="q", source="q", kind="arxiv", config=ExtractConfig(convert=False))
    assert "\\od" not in {m.name for m in paper.macros}
