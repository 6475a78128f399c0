"""Titles, authors and abstracts as journal classes write them (ingest/frontmatter.py): titles through macros and
``\\title[short]{long}``, author lists without affiliation marks or empty names, a placeholder for a paper without a
title. The front matter below is written for these tests in the shape of each class's template."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.scan import strip_comments
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import MemoryFiles
from eqsearch.ingest.frontmatter import author_names, read_front_matter, untitled
from eqsearch.ingest.macros import extract_macros

CLASSES = {
    "mnras": r"""\documentclass[fleqn,usenatbib]{mnras}
\newcommand{\rmn}[1]{{\rm #1}}
\title[Short cluster title]{Tidal tails of open clusters in \textit{Gaia} DR3}
\author[A. N. Author et al.]{
A.~N. Author,$^{1}$\thanks{E-mail: an@example.org}
B.~Second$^{1,2}$ and C.~D. Third$^{2}$
\\
$^{1}$Department of Physics, Some University, Town AB1 2CD, UK\\
$^{2}$Observatory of Somewhere, 1 Road, City, Country
}
\begin{document}
\maketitle
\begin{abstract}
We measure the tails at $\sim 100$\,pc.
\end{abstract}
\begin{keywords}
stars -- clusters
\end{keywords}
""",
    "aas_old": r"""\documentclass{aastex}
\title{Fast GP methods}
\author{Daniel~Foreman-Mackey\altaffilmark{1,2},
Eric~Agol\altaffilmark{1,3},
Sivaram~Ambikasaran\altaffilmark{4}, and
Ruth~Angus\altaffilmark{5}}
\altaffiltext{1}{Astronomy Department, University of Washington}
\begin{document}
\begin{abstract} The abstract. \end{abstract}
""",
    "aas631": r"""\documentclass[twocolumn]{aastex631}
\shorttitle{Short}
\begin{document}
\title{Winds of Hot Jupiters}
\author[0000-0001-2345-6789]{Jane Q. Public}
\affiliation{Dept. of Astronomy, Univ. of X}
\email{jane@x.edu}
\author{John Doe}
\affiliation{Somewhere}
\begin{abstract}Winds.\end{abstract}
""",
    "jhep": r"""\documentclass[a4paper,11pt]{article}
\usepackage{jheppub}
\title{Bootstrapping \\ the $O(N)$ model}
\author[a,b]{First Author,}
\author[b]{Second Author\note{Corresponding.}}
\affiliation[a]{Institute A}
\affiliation[b]{Institute B}
\emailAdd{first@a.org}
\abstract{We bootstrap.}
\begin{document}\maketitle
""",
    "revtex": r"""\documentclass[aps,prl,twocolumn]{revtex4-2}
\begin{document}
\title{Quantum walks on graphs}
\author{Alice Smith}
\email{alice@uni.edu}
\affiliation{Department of Physics, Uni}
\author{Bob Jones}
\thanks{These authors contributed equally.}
\affiliation{Other place}
\date{\today}
\begin{abstract}Walks.\end{abstract}
\maketitle
""",
    "jmlr": r"""\documentclass[twoside,11pt]{article}
\usepackage{jmlr2e}
\begin{document}
\title{Kernel methods for things}
\author{\name Alice Smith \email alice@x.edu \\
       \addr Department of Statistics\\
       University of X
       \AND
       \name Bob J.\ Jones \email bob@y.edu \\
       \addr Y Lab}
\maketitle
\begin{abstract}Kernels.\end{abstract}
""",
    "neurips": r"""\documentclass{article}
\usepackage{neurips_2023}
\title{Diffusion for graphs}
\author{%
  Alice Smith\thanks{Equal contribution.} \\
  Department of CS\\
  University of X\\
  \texttt{alice@x.edu} \\
  \And
  Bob Jones \\
  Company Y \\
  \texttt{bob@y.com} \\
  \AND
  Carol White \\ Z Institute
}
\begin{document}\maketitle
\begin{abstract}Graphs.\end{abstract}
""",
    "icml": r"""\documentclass{article}
\usepackage{icml2023}
\begin{document}
\twocolumn[
\icmltitle{Scaling Laws for Sparse Models}
\begin{icmlauthorlist}
\icmlauthor{Alice Smith}{x}
\icmlauthor{Bob Jones}{y}
\end{icmlauthorlist}
\icmlaffiliation{x}{University X}
\icmlcorrespondingauthor{Alice Smith}{alice@x.edu}
]
\begin{abstract}Sparse.\end{abstract}
""",
    "macro_title": r"""\documentclass{article}
\newcommand{\papertitle}{Homotopy Type Theory and $\infty$-Groupoids}
\newcommand{\me}{Carol White}
\title{\papertitle}
\author{\me\thanks{Supported by X.} \and Dan Black}
\begin{document}\maketitle
""",
}

EXPECTED = {
    "mnras": ("Tidal tails of open clusters in Gaia DR3", ["A. N. Author", "B. Second", "C. D. Third"]),
    "aas_old": (
        "Fast GP methods",
        ["Daniel Foreman-Mackey", "Eric Agol", "Sivaram Ambikasaran", "Ruth Angus"],
    ),
    "aas631": ("Winds of Hot Jupiters", ["Jane Q. Public", "John Doe"]),
    "jhep": ("Bootstrapping the $O(N)$ model", ["First Author", "Second Author"]),
    "revtex": ("Quantum walks on graphs", ["Alice Smith", "Bob Jones"]),
    "jmlr": ("Kernel methods for things", ["Alice Smith", "Bob J. Jones"]),
    "neurips": ("Diffusion for graphs", ["Alice Smith", "Bob Jones", "Carol White"]),
    "icml": ("Scaling Laws for Sparse Models", ["Alice Smith", "Bob Jones"]),
    "macro_title": ("Homotopy Type Theory and $\\infty$-Groupoids", ["Carol White", "Dan Black"]),
}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_journal_classes_give_title_and_clean_author_lists(name: str):
    text = strip_comments(CLASSES[name])
    front = read_front_matter(text, extract_macros(text).definitions())
    assert (front.title, front.authors) == EXPECTED[name]
    assert all(author.strip() and "," not in author for author in front.authors)


def test_abstracts_from_the_environment_or_the_command():
    assert read_front_matter(CLASSES["mnras"]).abstract == "We measure the tails at $\\sim 100$ pc."
    assert read_front_matter(CLASSES["jhep"]).abstract == "We bootstrap."  # JHEP's \\abstract{...}
    assert read_front_matter(CLASSES["macro_title"]).abstract is None


def test_the_last_title_set_wins_and_the_long_form_is_taken():
    text = r"\title{Draft}\title[Short]{The long title}\newcommand{\title}[1]{x}\begin{document}"
    assert read_front_matter(text).title == "The long title"


def test_author_debris_never_becomes_a_name():
    assert author_names(r"A.~One$^{1}$, , B.~Two\inst{2},, and C.~Three\footnotemark[3]") == [
        "A. One",
        "B. Two",
        "C. Three",
    ]
    assert author_names(r"John Smith, Jr. \and Mary Major") == ["John Smith, Jr", "Mary Major"]
    assert author_names(r"\IEEEauthorblockN{Ann Lee}\IEEEauthorblockA{Dept. of EE\\ ann@u.edu}") == ["Ann Lee"]
    assert author_names(r"\orcidlink{0000-0002-1825-0097} Ana Ruiz") == ["Ana Ruiz"]
    contact = r"A. B. Duthie (\href{mailto:ab@uni.ac.uk}{\nolinkurl{ab@uni.ac.uk}}) \and Bo Li (\texttt{bo@li.org})"
    assert author_names(contact) == ["A. B. Duthie", "Bo Li"]  # an address beside a name is not the name


def test_a_paper_without_a_title_gets_a_placeholder_never_an_empty_string():
    doc = rb"\documentclass{article}\begin{document}\[x\]\end{document}"
    paper = extract_latex_paper(
        MemoryFiles({"notes.tex": doc}), paper_id="p", source="/src/2401.00001", kind="arxiv", config=ExtractConfig()
    )
    assert paper.title == "Untitled (2401.00001: notes.tex)" == untitled("notes.tex", "/src/2401.00001")
    titled = extract_latex_paper(
        MemoryFiles({"main.tex": CLASSES["macro_title"].encode()}),
        paper_id="q",
        source="q",
        kind="arxiv",
        config=ExtractConfig(convert=False),
    )
    assert titled.title == "Homotopy Type Theory and $\\infty$-Groupoids"
    assert titled.authors == ["Carol White", "Dan Black"]
    assert titled.documents[0].title == titled.title


def test_a_thesis_without_a_title_command_has_the_title_its_pdf_or_its_title_macro_declares():
    """Thesis templates set the title page from a macro of their own: hyperref's ``pdftitle`` (in ``\\hypersetup``
    or the package's options), else the document's title macro, is the title; a file name is not."""
    plain = MacroDef("\\myPlainTitle", "Modeling the Interfacial Properties\\xspace", 0)
    assert read_front_matter("\\hypersetup{pdftitle={\\myPlainTitle}, pdfauthor=X}", [plain]).title == (
        "Modeling the Interfacial Properties"
    )
    assert read_front_matter("\\usepackage[pdftitle=A Title Here,colorlinks]{hyperref}").title == "A Title Here"
    macros = [MacroDef("\\phdtitle", "Modelling of Reservoir Computing", 0), MacroDef("\\TITLE", "00_title", 0)]
    assert read_front_matter("\\hypersetup{pdftitle={\\thesistitle}}", macros).title == (
        "Modelling of Reservoir Computing"
    )
    assert read_front_matter("text", [MacroDef("\\TITLE", "00_title", 0)]).title is None
    assert read_front_matter("\\title{Set}", macros).title == "Set"


def test_a_title_set_by_a_class_command_of_keys_or_by_the_title_page():
    """A class's ``\\puttitle{title=.., name=..}``; else the title page's largest words (``{\\Huge\\textbf{..}}``),
    three of them at least, never the author's name set smaller."""
    keyed = "\\puttitle{\n title=Domain Decomposition and Differentiable Physics,\n name=Gerardo Cicalese,\n}"
    assert read_front_matter(keyed).title == "Domain Decomposition and Differentiable Physics"
    page = (
        "\\begin{titlepage}\\noindent{\\Large Adrien \\sc{Cassagne}}\n"
        "\\noindent{\\Huge\\textbf{Optimization and Parallelization Methods}}\\end{titlepage}"
    )
    assert read_front_matter(page).title == "Optimization and Parallelization Methods"
    loose = "\\begin{titlepage}\\Huge\n\\textbf{Modern Software Approaches}\n\n\\Large\\textbf{S. K.}\\end{titlepage}"
    assert read_front_matter(loose).title == "Modern Software Approaches"
    assert (
        read_front_matter("\\printbibliography[title={Bibliography}] \\begin{titlepage}\\Huge A\\end{titlepage}").title
        is None
    )


def test_a_title_set_by_a_thesis_class_command_never_the_class_default():
    """ufthesis.cls: ``\\SetTitle{..}`` sets the title, its ``\\Title`` default ("No Title Given") is none; a title
    page's line break with its space (``\\\\[0.25cm]``) is a space."""
    default = MacroDef("\\Title", "No Title Given", 0, source="class")
    assert read_front_matter("\\SetTitle{Design of Interferometers}", [default]).title == "Design of Interferometers"
    assert read_front_matter("text", [default]).title is None
    page = "\\begin{titlepage}\\huge \\textbf{Multistability and Dynamics \\\\[0.25cm] in Networks}\\end{titlepage}"
    assert read_front_matter(page).title == "Multistability and Dynamics in Networks"


def test_a_title_page_set_in_a_font_size_and_a_title_macro_in_a_path():
    """A title page in ``\\fontsize{36}{40}\\selectfont`` (its largest size), the colour's name no word of it; INFORMS'
    ``\\TITLE`` used in a path (``{\\PATH/\\TITLE/fig00/}``) gives no title."""
    page = (
        "\\begin{titlepage}\\fontsize{36}{40}\\selectfont\\par\\noindent\\textcolor{darkgray}{\\centering"
        "\\uppercase{Perceptual Assessment \\\\ of Sound Field Synthesis\\\\}}\\vspace{1.6cm}"
        "\\fontsize{18}{20}\\selectfont vorgelegt von Hagen Wierstorf\\end{titlepage}"
    )
    assert read_front_matter("\\graphicspath{{\\PATH/\\TITLE/fig00/}}" + page).title == (
        "Perceptual Assessment of Sound Field Synthesis"
    )
    assert read_front_matter("\\title[Short]\n  {The Long One}").title == "The Long One"  # the group after a space


def test_a_journal_templates_title_set_by_hand_before_the_first_section():
    """PLOS's template has no ``\\title``: ``{\\Large \\textbf\\newline{..}}`` in a ``flushleft``, before the
    abstract."""
    text = r"""\documentclass{article}\begin{document}\vspace*{0.2in}
\begin{flushleft}
{\Large
\textbf\newline{Adaptive dating and fast proposals: revisiting the relaxed clock model}
}
\newline
A. Author\textsuperscript{1}
\end{flushleft}
\section*{Abstract} Text."""
    assert read_front_matter(text).title == "Adaptive dating and fast proposals: revisiting the relaxed clock model"
    assert read_front_matter(r"\begin{document}\section{Introduction} {\Large big words here}").title is None


def test_a_thesis_classs_own_title_command_and_a_title_page_in_large():
    assert read_front_matter(r"\thesistitle{\bf The upper-level turbulence of tropical cyclones }").title == (
        "The upper-level turbulence of tropical cyclones"
    )
    assert read_front_matter(r"\covertitle{Extreme diffusion and photons}\begin{document}").title == (
        "Extreme diffusion and photons"
    )
    page = r"\begin{titlepage}\center\large\textsc{Complex multiplication of elliptic curves}\vspace{1cm}"
    assert read_front_matter(page + r"\center\textsc{A. Z.}\end{titlepage}").title == (
        "Complex multiplication of elliptic curves"
    )
