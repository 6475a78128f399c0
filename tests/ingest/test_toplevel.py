"""Which files are documents: the include graph decides, whatever an input holds (ingest/toplevel.py, and its use in
`find_documents` and in the discovery of LaTeX trees)."""

from __future__ import annotations

from pathlib import Path

from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import MemoryFiles
from eqsearch.ingest.includes import find_documents
from eqsearch.ingest.sources import discover, load_paper
from eqsearch.ingest.toplevel import IncludeGraph, include_pattern, tex_facts
from source_archives import tar_bytes

# The case of the issue: the main file inputs a file holding \documentclass (and \begin{document}); every display
# of the body is written \bea ... \eea through a \def of that included preamble.
HEADER = rb"""\documentclass[prd]{revtex4}
\def\bea{\begin{eqnarray}}
\def\eea{\end{eqnarray}}
\newcommand{\vev}[1]{\langle #1\rangle}
\begin{document}
"""
BODY = rb"""\input{header}
\title{Moduli in a warped throat}
\maketitle
\section{Setup}
\bea
V &=& \vev{\phi}^2 \label{eq:v}
\eea
and
\bea
m^2 &=& \partial^2 V
\eea
\input{sections/tail}
\end{document}
"""
TAIL = rb"""\section{Tail}
\bea
a &=& b
\eea
"""


def issue_case() -> dict[str, bytes]:
    return {"main.tex": BODY, "header.tex": HEADER, "sections/tail.tex": TAIL}


def test_a_file_that_another_inputs_is_never_the_document_whatever_it_holds():
    files = MemoryFiles(issue_case())
    assert find_documents(files) == ["main.tex"]
    paper = extract_latex_paper(files, paper_id="x", source="x", kind="arxiv", config=ExtractConfig(convert=False))
    assert [eq.latex.strip() for eq in paper.equations()] == [
        r"V &=& \vev{\phi}^2 \label{eq:v}",
        r"m^2 &=& \partial^2 V",
        "a &=& b",
    ]
    assert [eq.environment for eq in paper.equations()] == ["eqnarray"] * 3
    assert paper.title == "Moduli in a warped throat"
    assert [m.name for m in paper.macros] == ["\\vev"]  # the included preamble's definitions are the document's
    assert not paper.warnings


def test_the_include_graph_names_roots_with_a_document():
    texts = {
        "main.tex": r"\input{header} \input{sec/a} \end{document}",
        "header.tex": r"\documentclass{article}\begin{document}",
        "sec/a.tex": r"\section{A}",
        "notes.tex": r"\section{Old notes}",  # a fragment nobody inputs: no document
        "supp.tex": r"\documentclass{article}\begin{document}S\end{document}",
    }
    graph = IncludeGraph({name: tex_facts(name, text) for name, text in texts.items()})
    assert graph.documents() == ["main.tex", "supp.tex"]
    assert graph.reach("main.tex") == ["header.tex", "main.tex", "sec/a.tex"]
    assert graph.summary("main.tex")[:2] == (True, True)


def test_subfiles_children_are_inputs_not_documents():
    main = rb"\documentclass{book}\usepackage{subfiles}\begin{document}\subfile{ch/one}\subfile{ch/two}\end{document}"
    child = rb"\documentclass[../main.tex]{subfiles}\begin{document}\chapter{%s}"
    child += rb"\begin{equation}%s\end{equation}\end{document}"
    files = MemoryFiles({"main.tex": main, "ch/one.tex": child % (b"One", b"a"), "ch/two.tex": child % (b"Two", b"b")})
    assert find_documents(files) == ["main.tex"]
    paper = extract_latex_paper(files, paper_id="x", source="x", kind="latex", config=ExtractConfig(convert=False))
    assert [eq.latex for eq in paper.equations()] == ["a", "b"]
    assert [s.title for s in paper.sections] == ["", "One", "Two"]


def test_standalone_pictures_are_not_documents_unless_nothing_else_is():
    doc = rb"\documentclass{article}\usepackage{standalone}\begin{document}\includestandalone{fig/plot}"
    doc += rb"\includegraphics{fig/cone}\[x\]\end{document}"
    picture = rb"\documentclass{standalone}\usepackage{tikz}\begin{document}"
    picture += rb"\begin{tikzpicture}\end{tikzpicture}\end{document}"
    files = MemoryFiles({"paper.tex": doc, "fig/plot.tex": picture, "fig/cone.tex": picture})
    # plot.tex is input through \includestandalone; cone.tex is compiled on its own and included as a graphic
    assert find_documents(files) == ["paper.tex"]
    assert find_documents(MemoryFiles({"fig/cone.tex": picture})) == ["fig/cone.tex"]


def test_files_that_input_each_other_still_give_a_document():
    a = rb"\documentclass{article}\begin{document}\input{b}\end{document}"
    files = MemoryFiles({"a.tex": a, "b.tex": rb"\input{a}"})
    assert find_documents(files) == ["a.tex"]


def test_several_independent_papers_in_one_archive_each_with_its_preamble_file(tmp_path: Path):
    members = {f"{folder}/{name}": data for folder in ("paperA", "paperB") for name, data in issue_case().items()}
    members["paperB/main.tex"] = members["paperB/main.tex"].replace(b"Moduli", b"Axions")
    (tmp_path / "proceedings.tar.gz").write_bytes(tar_bytes(members))
    tasks = list(discover([str(tmp_path / "proceedings.tar.gz")]))
    assert [t.folder for t in tasks] == ["paperA/", "paperB/"]
    papers = [load_paper(task, ExtractConfig(convert=False)) for task in tasks]
    assert [p.main_file for p in papers] == ["main.tex", "main.tex"]
    assert [p.title for p in papers] == ["Moduli in a warped throat", "Axions in a warped throat"]
    assert [len(p.equations()) for p in papers] == [3, 3]


def test_a_latex_tree_finds_a_main_file_whose_class_is_in_an_input(tmp_path: Path):
    for name, data in issue_case().items():
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_bytes(data)
    tasks = list(discover([str(tmp_path / "tree")], kind="latex"))
    assert [(t.kind, t.member) for t in tasks] == [("tree", "main.tex")]
    assert len(load_paper(tasks[0], ExtractConfig(convert=False)).equations()) == 3


def test_a_source_with_no_document_is_a_failed_record_with_its_reason(tmp_path: Path):
    from eqsearch.ingest.pipeline import process_task

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("nothing to read here")
    (task,) = discover([str(tmp_path / "notes")])
    paper = process_task(task, ExtractConfig(convert=False), None)
    assert paper.status == "failed" and paper.error is not None and paper.error.reason == "no_document"
    assert str(tmp_path / "notes") in paper.error.message


def test_an_input_named_inside_a_second_pair_of_braces_is_followed():
    """An Oxford thesis: ``\\include{{./Sections/Chapter1/intro}}`` (466 displays were lost in the chapters)."""
    main = rb"\documentclass{report}\begin{document}\include{{./Sections/Chapter1/intro}}\end{document}"
    chapter = rb"\chapter{Intro}\begin{equation}x=1\end{equation}"
    files = MemoryFiles({"thesis_main.tex": main, "Sections/Chapter1/intro.tex": chapter})
    assert find_documents(files) == ["thesis_main.tex"]
    paper = extract_latex_paper(files, paper_id="t", source="t", kind="arxiv", config=ExtractConfig(convert=False))
    assert [eq.latex.strip() for eq in paper.equations()] == ["x=1"]


def test_a_brace_after_an_input_closes_the_group_around_it():
    """``\\frac{\\input{build/norm.tex}}{x}`` (a number written by the build): the brace after the file's name closes
    the numerator; only ``\\include{{./intro}}`` has a second pair around the name."""
    pattern = include_pattern()
    assert pattern.search("\\frac{\\input{build/norm.tex}}{x}").group(0) == "\\input{build/norm.tex}"
    assert pattern.search("\\include{{./S/intro}} x}").group("file") == "./S/intro"
