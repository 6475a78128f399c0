"""The real-paper regression set (tests/ingest/fixtures/realpapers): short excerpts written for eqsearch that
reproduce what arXiv sources do, each through extraction, and with KaTeX through conversion."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from eqsearch.engine.latex.install import installed_katex_version
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import FolderFiles, MemoryFiles
from eqsearch.ingest.includes import find_documents
from eqsearch.ingest.pipeline import process_task, run_extraction
from eqsearch.ingest.records import Paper
from eqsearch.ingest.sources import discover, load_paper
from source_archives import FIXTURES, folder_members, tar_bytes

REAL = FIXTURES / "realpapers"
katex = pytest.mark.skipif(
    installed_katex_version() is None or shutil.which("node") is None, reason="KaTeX/Node not installed (see README)"
)


def extract(name: str, **kwargs: object) -> Paper:
    folder = REAL / name
    return extract_latex_paper(
        FolderFiles(folder, 10**7), paper_id=name, source=str(folder), kind="arxiv", config=ExtractConfig(**kwargs)
    )


@pytest.fixture(scope="module")
def converted() -> dict[str, Paper]:
    from eqsearch.ingest.convert import convert_paper, open_converter

    converter = open_converter()
    try:
        papers = {}
        for folder in sorted(p for p in REAL.iterdir() if p.is_dir()):
            paper = extract(folder.name)
            convert_paper(paper, converter)
            papers[folder.name] = paper
        return papers
    finally:
        converter.__exit__(None, None, None)


# -- documents: a manuscript and its supplement are one paper ------------------------------------------------------


def test_supplement_compiled_on_its_own_is_part_of_the_paper():
    paper = extract("supplement")
    assert [d.file for d in paper.documents] == ["manuscript.tex", "SM.tex"]
    assert paper.main_file == "manuscript.tex" and paper.title == "Thermal transport in a driven lattice"
    assert [(s.kind, s.document, s.title) for s in paper.sections] == [
        ("front", 0, ""),
        ("section", 0, "Model"),
        ("document", 1, "Supplemental Material: Thermal transport in a driven lattice"),
        ("section", 1, "Derivation of the current"),
        ("section", 1, "Linear response"),
    ]
    assert [eq.number for eq in paper.equations()] == [0, 1, 2, 3]
    assert [eq.environment for eq in paper.equations()] == ["equation", "equation", "align", "\\["]
    assert paper.citations == ["2101.00001", "2202.00002"] and paper.bibliography_entries == 3


def test_each_document_has_its_own_macros_and_a_supplement_borrows_the_main_texts():
    paper = extract("supplement")
    assert [m.body for m in paper.macros if m.name == "\\Ham"] == ["\\mathcal{H}"]
    supplement = paper.documents[1]
    assert [m.body for m in supplement.macros or [] if m.name == "\\Ham"] == ["H_{\\mathrm{SM}}"]
    in_force = {m.name: m.body for m in paper.macros_of(1)}
    assert in_force["\\Ham"] == "H_{\\mathrm{SM}}" and in_force["\\kB"] == "k_{\\mathrm{B}}"


def test_documents_in_arxiv_order_main_first_and_readme_declarations():
    doc = b"\\documentclass{article}\\begin{document}x\\end{document}"
    files = MemoryFiles({"SM.tex": doc, "appendix.tex": doc, "main.tex": doc, "frag.tex": b"\\section{A}"})
    assert find_documents(files) == ["main.tex", "SM.tex", "appendix.tex"]
    readme = b"c.tex toplevelfile\na.tex toplevelfile\n"
    declared = MemoryFiles({"b.tex": doc, "a.tex": doc, "c.tex": doc, "00README.XXX": readme})
    assert find_documents(declared) == ["c.tex", "a.tex"]


def test_a_tarball_of_several_independent_papers_is_several_papers(tmp_path: Path):
    members = {f"paperA/{k}": v for k, v in folder_members(REAL / "supplement").items()}
    members.update({f"paperB/{k}": v for k, v in folder_members(REAL / "breqn").items()})
    (tmp_path / "proceedings.tar.gz").write_bytes(tar_bytes(members))
    tasks = list(discover([str(tmp_path / "proceedings.tar.gz")]))
    assert [(t.paper_id, t.folder) for t in tasks] == [
        ("proceedings/paperA", "paperA/"),
        ("proceedings/paperB", "paperB/"),
    ]
    papers = [load_paper(task, ExtractConfig(convert=False)) for task in tasks]
    assert [len(p.documents) for p in papers] == [2, 1] and [len(p.equations()) for p in papers] == [4, 5]
    # an arXiv source is one paper whatever its folders hold
    (tmp_path / "2401.00001.tar.gz").write_bytes(tar_bytes(members))
    (task,) = discover([str(tmp_path / "2401.00001.tar.gz")])
    assert task.folder is None


# -- displays opened through macros, breqn, diagrams ---------------------------------------------------------------


def test_display_shortcuts_of_every_kind_are_found():
    paper = extract("shortcuts")
    assert [eq.environment for eq in paper.equations()] == [
        "equation",  # \be ... \ee
        "eqnarray",  # \bea ... \eea
        "equation",  # \let\beq\equation, inside \bse ... \ese
        "equation",
        "eqnarray*",  # \def\beas#1\eeas{...}
        "align",  # \al{...}, an argument
        "equation",  # \bal ... \eal, opening two environments through another shortcut
        "\\[",  # \bdm ... \edm
        "equation",  # \newenvironment{eqn}{\equation}{\endequation}
    ]
    assert paper.equations()[0].labels == ["eq:efe"]
    assert not any(m.name in ("\\be", "\\bea", "\\beas", "\\al", "\\bal") for m in paper.macros)
    assert "\\Rmn" in {m.name for m in paper.macros}  # defined through \nc, a user name for \newcommand


def test_breqn_environments_are_displays_and_dgroup_is_a_grouping():
    paper = extract("breqn")
    assert [eq.environment for eq in paper.equations()] == ["dmath", "dmath", "dmath*", "dseries", "darray"]
    assert not paper.equations()[0].latex.lstrip().startswith("[")  # the optional argument is not the body
    assert paper.equations()[4].environment_args == ["rcl"]


def test_include_wrappers_and_document_begin_inside_a_definition():
    paper = extract("wrappers")
    assert [s.title for s in paper.sections] == [
        "",
        "Introduction",
        "Results",
        "The $\\alpha$-stable case",
        "Simulating the rescaled process",
    ]
    assert len(paper.equations()) == 2


# -- contexts and inline formulas ------------------------------------------------------------------------------------


def test_inline_formulas_are_kept_in_contexts_and_recorded_with_their_offsets():
    paper = extract("wrappers")
    eq = paper.equations()[1]
    assert eq.context_before.endswith("For $t \\ge 0$ and $x \\in \\mathbb{R}$, the process satisfies\nthe bound")
    assert eq.context_after == "where $W$ is a Brownian motion and $\\sigma$ is Lipschitz."
    inline = paper.inline_formulas()
    assert [(f.latex, f.delimiter) for f in inline] == [
        ("\\alpha", "$"),
        ("t \\ge 0", "$"),
        ("x \\in \\mathbb{R}", "$"),
        ("W", "\\("),
        ("\\sigma", "$"),
    ]
    assert [f.number for f in inline] == [0, 1, 2, 3, 4]
    record = paper.to_json()["sections"][4]["inline"][0]
    context = {"context_before": inline[1].context_before, "context_after": inline[1].context_after}
    assert record == {"number": 1, "latex": "t \\ge 0", "offset": inline[1].offset, "length": 9, "delimiter": "$"} | {
        "id": f"{paper.key}:i1",
        "display": False,
        **context,
        "status": "extracted",
        "reason": None,
        "message": None,
        "mathml": None,
    }
    # an indexed formula (three symbols) has the context a display has, its neighbours as LaTeX, displays as [math]
    assert context["context_before"].endswith("For")
    assert context["context_after"].startswith("and $x \\in \\mathbb{R}$, the process satisfies\nthe bound\n[math]")
    assert inline[2].context_before.endswith("For $t \\ge 0$ and")
    # a lone symbol is not indexed: no context is made for it
    assert (inline[0].context_before, inline[3].context_after) == ("", "")
    assert Paper.from_json(paper.to_json()).inline_formulas() == inline


def test_section_titles_are_read_once():
    paper = extract("wrappers")
    assert paper.sections[3].title == "The $\\alpha$-stable case"  # \texorpdfstring's first argument only
    assert paper.sections[4].title == "Simulating the rescaled process"  # one line, the label dropped


def test_the_same_source_extracts_to_identical_records(tmp_path: Path):
    sources = [str(REAL / name) for name in ("supplement", "shortcuts", "packages")]
    runs = []
    for run in ("one", "two"):
        tasks = list(discover(sources, kind="arxiv"))
        run_extraction(tasks, tmp_path / run, ExtractConfig(convert=False), workers=0)
        records = [json.loads(line) for line in (tmp_path / run / "papers.jsonl").read_text().splitlines()]
        for record in records:
            record.pop("timings")
        runs.append(records)
    assert runs[0] == runs[1] and len(runs[0]) == 3


def test_record_round_trip_keeps_documents_and_sections():
    paper = extract("supplement")
    again = Paper.from_json(json.loads(json.dumps(paper.to_json())))
    assert again.to_json() == paper.to_json()


# -- conversion ----------------------------------------------------------------------------------------------------


@katex
def test_every_construct_converts(converted: dict[str, Paper]):
    statuses = {name: [eq.status for eq in paper.equations()] for name, paper in converted.items()}
    assert statuses == {
        "breqn": ["ok"] * 5,
        "diagrams": ["diagram", "diagram", "ok", "diagram"],
        "packages": ["ok"] * 6,
        "shortcuts": ["ok"] * 9,
        "supplement": ["ok"] * 4,
        "wrappers": ["ok"] * 2,
    }
    diagrams = converted["diagrams"].equations()
    assert (diagrams[0].reason, diagrams[0].mathml) == ("diagram", None) and "tikzcd" in diagrams[0].message
    # a rule whose label is an arrow drawn with tikz-cd: a picture set in the formula, kept as LaTeX
    assert (diagrams[3].reason, diagrams[3].mathml) == ("diagram", None) and "tikzcd" in diagrams[3].message
    # the supplement's \Ham is its own, its \kB the main text's
    sm = converted["supplement"].equations()[2].mathml
    assert '<mi mathvariant="normal">S</mi><mi mathvariant="normal">M</mi>' in sm
    assert '<msub><mi>k</mi><mi mathvariant="normal">B</mi></msub>' in sm


@katex
def test_package_commands_become_what_they_mean(converted: dict[str, Paper]):
    eqs = converted["packages"].equations()
    assert "Var" in eqs[2].mathml and "arg" in eqs[2].mathml
    assert "∂" in eqs[3].mathml and "π" in eqs[3].mathml and "μ" in eqs[3].mathml
    units = '<mi mathvariant="normal">m</mi><mi mathvariant="normal">/</mi><mi mathvariant="normal">s</mi>'
    assert units in eqs[4].mathml and '<mi mathvariant="bold-italic">B</mi>' in eqs[4].mathml


@katex
def test_a_run_with_diagrams_counts_them_apart(tmp_path: Path):
    config = ExtractConfig()
    stats = run_extraction(list(discover([str(REAL / "diagrams")], kind="arxiv")), tmp_path, config, workers=0)
    summary = stats.to_json()
    assert summary["equations_diagrams"] == 3 and summary["equations_failed"] == {}
    assert summary["equations_status"] == {"diagram": 3, "ok": 1} and summary["equations_approximate"] == {}
    assert summary["conversion_success_rate"] == 1.0
    task = next(discover([str(REAL / "diagrams")], kind="arxiv"))
    assert summary["inline_formulas"] == len(process_task(task, ExtractConfig(convert=False), None).inline_formulas())


def test_a_further_document_over_the_size_limit_is_skipped_with_a_warning():
    doc = b"\\documentclass{article}\\begin{document}\\[x\\]\\end{document}"
    files = MemoryFiles({"main.tex": doc, "supplement.tex": doc.replace(b"x", b"y" * 500)})
    config = ExtractConfig(max_document_chars=300)
    paper = extract_latex_paper(files, paper_id="p", source="p", kind="latex", config=config)
    assert [d.file for d in paper.documents] == ["main.tex"] and len(paper.equations()) == 1
    assert [w.reason for w in paper.warnings] == ["document_too_large"]
