"""The multi-file fixture paper end to end through extraction (no conversion)."""

from pathlib import Path

import pytest
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import FolderFiles, MemoryFiles
from eqsearch.ingest.includes import find_documents, find_main_file, include_wrappers
from source_archives import FIXTURES


def extract(folder: Path, **kwargs):
    return extract_latex_paper(
        FolderFiles(folder, 10**7),
        paper_id=folder.name,
        source=str(folder),
        kind="arxiv",
        config=ExtractConfig(**kwargs),
    )


@pytest.fixture(scope="module")
def paper():
    return extract(FIXTURES / "paper_multifile")


def test_all_inputs_are_followed(paper):
    titles = [s.title for s in paper.sections]
    # \input, \include, \subfile (its own preamble dropped), \import + a relative \input inside it
    assert titles == ["", "Introduction", "Notation", "Method", "Results", "Appendix", "Proof of the bound"]
    assert not paper.warnings


def test_every_display_once_in_order_with_nested_ones_kept_inside(paper):
    envs = [eq.environment for eq in paper.equations()]
    assert envs == [
        "equation",  # front matter
        "equation",  # \be ... \ee shortcut
        "\\[",
        "$$",
        "equation",  # with split inside
        "align*",
        "gather",  # inside subequations
        "multline*",
        "flalign",
        "alignat",
        "eqnarray*",
        "displaymath",
        "equation",  # \begin{eqn} (a \newenvironment wrapping equation)
        "\\[",  # with aligned inside
        "equation*",
        "align",
    ]
    assert [eq.number for eq in paper.equations()] == list(range(16))
    split = paper.equations()[4]
    assert "\\begin{split}" in split.latex and split.labels == ["eq:split"]
    assert paper.equations()[9].environment_args == ["2"]
    assert all("fake" not in eq.latex and "commented" not in eq.latex for eq in paper.equations())


def test_sections_levels_and_parents(paper):
    notation = paper.sections[2]
    assert (notation.kind, notation.level, notation.parent) == ("subsection", 3, 1)
    assert paper.sections[6].parent == 5
    assert paper.sections[0].kind == "front" and len(paper.sections[0].equations) == 1
    assert all(eq.section == s.index for s in paper.sections for eq in s.equations)


def test_macros_from_the_document_and_its_local_package(paper):
    names = [m.name for m in paper.macros]
    assert names[:2] == ["\\Lap", "\\grad"]  # notation.sty first
    assert {"\\R", "\\norm", "\\vec", "\\abs", "\\Exp", "\\ip", "\\eps", "\\tr", "\\argmin"} <= set(names)
    assert "\\be" not in names  # display shortcuts are expanded, not passed on
    exp = next(m for m in paper.macros if m.name == "\\Exp")
    assert (exp.nargs, exp.default) == (2, "\\mathbb{P}")


def test_front_matter_and_context(paper):
    assert paper.title == "Heat Kernels on Graphs: a Spectral View"
    assert paper.authors == ["Ada Lovelace", "Carl F. Gauss"]
    assert paper.abstract.startswith("We study the heat kernel $e^{-tL}$") and "100%" in paper.abstract
    first = paper.equations()[0]
    assert first.context_before.endswith("a 5% discount")
    assert first.context_after == "which is the front matter's only equation."
    eq = paper.equations()[1]
    assert "Laplacian $\\Lap$ as in [cite]" in eq.context_before
    assert eq.context_after.startswith("Escaped dollars $5 and $10 are prices")
    assert "[math]" in paper.equations()[3].context_before  # the previous display


def test_citations_in_order_normalised_deduplicated(paper):
    assert paper.citations == ["1901.00001", "1502.01234", "hep-th/9901001", "math/0101001"]
    assert paper.bibliography_entries == 6


def test_bib_and_bbl_papers():
    bib = extract(FIXTURES / "paper_bib")
    assert bib.citations == ["2101.12345", "hep-ph/0101234", "0704.0001", "cond-mat/0511234"]
    assert bib.title == "Cited by bib" and bib.abstract == "A paper whose references live in a .bib file."
    bbl = extract(FIXTURES / "paper_bbl")
    assert bbl.citations == ["1905.01234", "astro-ph/0601001"]


def test_context_size_and_equation_limit():
    paper = extract(FIXTURES / "paper_multifile", context_chars=20, max_equation_chars=30)
    assert all(len(eq.context_before) <= 20 and len(eq.context_after) <= 20 for eq in paper.equations())
    long = [eq for eq in paper.equations() if eq.status == "failed"]
    assert long and all(eq.reason == "equation_too_long" and eq.length > 30 for eq in long)


def test_main_file_choice():
    doc = b"\\documentclass{article}\\begin{document}x\\end{document}"
    files = MemoryFiles(
        {
            "appendix.tex": doc,  # a standalone candidate...
            "main.tex": doc + b"\\input{appendix}",  # ...but main includes it
            "fragment.tex": b"\\section{A}",
            "old.tex": b"% \\documentclass{article}\\begin{document}",  # commented out
        }
    )
    assert find_main_file(files) == "main.tex"
    readme = MemoryFiles({"a.tex": doc, "b.tex": doc, "00README.XXX": b"b.tex toplevelfile\n"})
    assert find_main_file(readme) == "b.tex"
    id_named = MemoryFiles({"x.tex": doc, "1901.00001.tex": doc})
    assert find_main_file(id_named, preferred_stem="1901.00001") == "1901.00001.tex"


def test_include_wrappers_and_standalone_children():
    doc = (
        b"\\documentclass{book}\\newcommand{\\chap}[1]{\\clearpage\\include{#1}}"
        b"\\begin{document}\\chap{one}\\input{two}\\end{document}"
    )
    files = MemoryFiles(
        {
            "main.tex": doc,
            "one.tex": b"\\chapter{One}\\begin{equation}a\\end{equation}",
            # a child with a macro holding \begin{document} but no class of its own keeps its definitions
            "two.tex": b"\\newcommand{\\start}{\\begin{document}}\\chapter{Two}\\[b\\]",
        }
    )
    paper = extract_latex_paper(files, paper_id="x", source="x", kind="latex", config=ExtractConfig())
    assert [s.title for s in paper.sections] == ["", "One", "Two"]
    assert [eq.latex for eq in paper.equations()] == ["a", "b"]
    wrappers = include_wrappers(r"\newcommand{\chap}[1]{\include{#1}} \def\inp#1{\input{#1}}")
    assert [(w.name, w.arguments, w.target) for w in wrappers] == [("chap", 1, "#1"), ("inp", 1, "#1")]


def test_chapters_input_by_a_command_of_the_documents_class():
    """A thesis class (adsphd.cls, written here in its shape) defines ``\\includechapter{x}`` as
    ``\\include{\\chaptersdir/x/x}`` and ``\\includeabstract{x}`` through a four-argument command: the include graph
    follows both, so the chapters are the thesis's text, not documents of their own nor files left unread."""
    thesis_class = (
        b"\\ProvidesClass{adsphd}\\LoadClass{book}\\def\\chaptersdir{chapters}\n"
        b"\\newcommand{\\IncludeUnnumbered}[4]{\\cleardoublepage #4\\IfFileExists{\\chaptersdir/#1/#1.tex}"
        b"{\\include{\\chaptersdir/#1/#1}}{\\chapter*{#2}#3}}\n"
        b"\\newcommand{\\includechapter}[1]{%\n  \\graphicspath{{\\chaptersdir/#1/image/}}%\n"
        b"  \\include{\\chaptersdir/#1/#1}%\n}\n"
        b"\\newcommand{\\includeabstract}[1]{\\IncludeUnnumbered{#1}{\\abstractname}{}{\\phantomsection}}\n"
    )
    main = (
        b"\\documentclass[faculty=firw]{adsphd}\\begin{document}\\includeabstract{abstract}"
        b"\\includechapter{introduction}\n\\includechapter{methods}\\end{document}"
    )
    chapter = b"\\documentclass{article}\\begin{document}\\chapter{%s}\\begin{equation}%s\\end{equation}\\end{document}"
    files = MemoryFiles(
        {
            "adsphd.cls": thesis_class,
            "thesis.tex": main,
            "chapters/abstract/abstract.tex": b"\\chapter*{Abstract} We find \\[ c \\]",
            "chapters/introduction/introduction.tex": chapter % (b"Introduction", b"a"),
            "chapters/methods/methods.tex": chapter % (b"Methods", b"b"),
        }
    )
    assert find_documents(files) == ["thesis.tex"]
    paper = extract_latex_paper(files, paper_id="x", source="x", kind="latex", config=ExtractConfig())
    assert [eq.latex.strip() for eq in paper.equations()] == ["c", "a", "b"]


def test_a_package_loaded_by_a_path_of_the_authors_machine_is_found_by_its_name():
    """A thesis: ``\\usepackage{/home/greg/thesis/definitions}``, the file being ``definitions.sty`` of the source."""
    main = rb"\documentclass{report}\usepackage{/home/greg/thesis/definitions}\begin{document}\[\epsI\]\end{document}"
    definitions = rb"\newcommand{\epsI}{\epsilon_{\mathrm{I}}}"
    files = MemoryFiles({"full_thesis/main.tex": main, "definitions.sty": definitions})
    paper = extract_latex_paper(files, paper_id="t", source="t", kind="arxiv", config=ExtractConfig(convert=False))
    assert [(m.name, m.body) for m in paper.macros] == [("\\epsI", "\\epsilon_{\\mathrm{I}}")]


def test_commands_of_a_class_the_source_ships():
    """A SIAM paper ships ``siamltex.cls``, whose ``\\diag`` its formulas use; the class's redefinitions of what
    LaTeX has (``\\vec`` here) are read as ``class`` commands, which the converter uses only where nothing else
    defines the name."""
    files = MemoryFiles(
        {
            "siamltex.cls": b"\\def\\vec#1{\\@vec{#1}}\\newcommand\\diag{\\mathop{\\operator@font diag}\\nolimits}",
            "main.tex": b"\\documentclass[final]{siamltex}\\newcommand{\\R}{\\mathbb{R}}"
            b"\\begin{document}\\[ \\diag(x) \\in \\R \\]\\end{document}",
        }
    )
    paper = extract_latex_paper(files, paper_id="x", source="x", kind="latex", config=ExtractConfig())
    sources = {m.name: m.source for m in paper.macros}
    assert sources["\\diag"] == "class" and sources["\\vec"] == "class" and sources["\\R"] == "newcommand"
    assert list(sources)[-1] == "\\R"  # the document's own definitions come after the class's


def test_a_tikz_drawing_over_the_length_limit_is_a_diagram():
    """A ZX-calculus thesis's display of 25,000 characters, a TikZ drawing with math around it: a diagram kept as
    LaTeX (its first characters), not a formula too long to convert; a long formula stays too long."""
    nodes = "".join(f"\\node[style=Z] ({i}) at ({i}, 0) {{$\\alpha_{{{i}}}$}};\n" for i in range(700))
    drawing = f"\\begin{{tikzpicture}}{nodes}\\end{{tikzpicture}}"
    long_sum = " + ".join(f"a_{{{i}}}" for i in range(4000))
    main = f"\\documentclass{{article}}\\begin{{document}}\\[ A = {drawing} \\]\\[ {long_sum} \\]\\end{{document}}"
    files = MemoryFiles({"main.tex": main.encode()})
    config = ExtractConfig(convert=False)
    paper = extract_latex_paper(files, paper_id="x", source="x", kind="latex", config=config)
    picture, formula = paper.equations()
    assert (picture.status, picture.reason) == ("diagram", "diagram") and "tikzpicture" in picture.message
    assert len(picture.latex) < len(drawing) and picture.length > 20_000
    assert (formula.status, formula.reason) == ("failed", "equation_too_long")


def test_chapters_imported_from_a_folder_named_by_a_text_macro():
    """A thesis sets ``\\def\\PATH{.}`` and imports each chapter as ``\\import{\\PATH/01_intro/}{01_intro}``: the
    folder and file are read with the macro written out."""
    main = (
        b"\\documentclass{book}\\usepackage{import}\\def \\PATH {.}\\def\\CHAPONE{01_intro}\\begin{document}"
        b"\\import{\\PATH/01_intro/}{01_intro}\\import{\\PATH/02_theory/}{02_theory}\\end{document}"
    )
    files = MemoryFiles(
        {
            "thesis.tex": main,
            "01_intro/01_intro.tex": b"\\chapter{Intro} \\begin{equation} a \\end{equation}",
            "02_theory/02_theory.tex": b"\\chapter{Theory} \\input{part} \\[ b \\]",
            "02_theory/part.tex": b"\\[ c \\]",
        }
    )
    paper = extract_latex_paper(files, paper_id="x", source="x", kind="latex", config=ExtractConfig(convert=False))
    assert [eq.latex.strip() for eq in paper.equations()] == ["a", "c", "b"]
