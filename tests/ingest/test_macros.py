import pytest
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.ingest.displaymacros import expand_display_macros
from eqsearch.ingest.macros import expand_environments, extract_macros


def test_every_definition_kind():
    table = extract_macros(
        r"""
        \newcommand{\R}{\mathbb{R}}
        \newcommand*\norm[1]{\|#1\|}
        \renewcommand{\vec}[1]{\mathbf{#1}}
        \providecommand{\R}{ignored}
        \providecommand{\abs}[1]{|#1|}
        \newcommand{\E}[2][\mathbb{P}]{\mathbb{E}_{#1}[#2]}
        \def\ip#1#2{\langle #1,#2\rangle}
        \gdef\one{1}
        \let\eps\varepsilon
        \let\RR=\R
        \DeclareMathOperator{\tr}{tr}
        \DeclareMathOperator*{\argmax}{arg\,max}
        """
    )
    m = table.macros
    assert m["\\R"] == MacroDef("\\R", "\\mathbb{R}", 0, None, "newcommand")
    assert m["\\norm"].nargs == 1 and m["\\norm"].body == "\\|#1\\|"
    assert m["\\vec"].source == "renewcommand"
    assert m["\\abs"].source == "providecommand"
    assert (m["\\E"].nargs, m["\\E"].default) == (2, "\\mathbb{P}")
    assert (m["\\ip"].nargs, m["\\ip"].source) == (2, "def")
    assert m["\\one"].body == "1"
    assert m["\\eps"] == MacroDef("\\eps", "\\varepsilon", 0, None, "let")
    assert m["\\RR"].body == "\\mathbb{R}"  # \let copies a user macro's definition
    assert m["\\tr"] == MacroDef("\\tr", "\\operatorname{tr}", 0, None, "DeclareMathOperator")
    assert m["\\argmax"].body == "\\operatorname*{arg\\,max}" and m["\\argmax"].source == "DeclareMathOperator*"
    assert not table.issues


def test_later_definition_wins_except_provide():
    table = extract_macros(r"\newcommand{\x}{a}\renewcommand{\x}{b}\providecommand{\x}{c}")
    assert table.macros["\\x"].body == "b"


def test_self_recursive_and_mutually_recursive_macros_are_dropped_and_recorded():
    table = extract_macros(r"\def\a{\a x}\newcommand{\b}{\c}\newcommand{\c}{\b}\newcommand{\ok}{\b}")
    assert "\\a" not in table.macros and "\\b" not in table.macros and "\\c" not in table.macros
    assert "\\ok" in table.macros
    assert sorted(i.reason for i in table.issues) == ["recursive_macro"] * 3


def test_let_of_builtin_then_redefinition_keeps_both():
    # the alias holds the built-in \sqrt (engine.latex.aliases), so the redefinition closes no circle
    table = extract_macros(r"\let\oldsqrt\sqrt \renewcommand{\sqrt}[1]{\oldsqrt{#1}}")
    assert table.macros["\\oldsqrt"].body == "\\sqrt"
    assert table.macros["\\sqrt"].body == "\\oldsqrt{#1}"
    assert not table.issues


def test_copies_of_macros_keep_their_arguments_and_forms():
    table = extract_macros(
        r"\newcommand{\x}[2][0]{#1_{#2}}\DeclarePairedDelimiter\abs\lvert\rvert\providecommand{\p}{P}"
        r"\let\y\x \LetLtxMacro{\absolute}{\abs}\NewCommandCopy\q\p \global\let\mid=\vert"
        r"\RenewCommandCopy{\z}{\y}"
    )
    made = table.macros
    assert (made["\\y"].nargs, made["\\y"].default, made["\\y"].body) == (2, "0", "#1_{#2}")
    assert made["\\absolute"].delimiters == ("\\lvert", "\\rvert")
    assert made["\\q"].source == "newcommand"  # a copy of a provided command is a definition of its own
    assert (made["\\mid"].body, made["\\mid"].source) == ("\\vert", "let")
    assert made["\\z"].body == "#1_{#2}"


def test_delimited_def_is_read_as_an_argument_spec_or_recorded_not_kept():
    table = extract_macros(r"\def\pair(#1,#2){(#1;#2)}\def\opt[#1]#2{#2_{#1}}\def\d^#1{d^{#1}}")
    made = {m.name: (m.spec, m.body) for m in table.definitions()}
    assert made["\\pair"] == ("t( u{,} u{)}", "(#2;#3)") and made["\\opt"] == ("r[] m", "#2_{#1}")
    assert made["\\d"] == ("t^ m", "d^{#2}") and not table.issues
    table = extract_macros(r"\def\skip#2{x}\def\tail#1#2 end{y}")
    assert not table.macros and [i.reason for i in table.issues] == ["delimited_macro", "delimited_macro"]


def test_display_shortcuts_and_environment_aliases():
    table = extract_macros(
        r"\def\be{\begin{equation}}\def\ee{\end{equation}}\newcommand{\beq}{\begin{align*}}"
        r"\newenvironment{eqn}{\begin{equation}}{\end{equation}}"
    )
    assert set(table.display) == {"\\be", "\\ee", "\\beq"} and not table.macros
    assert table.environment_aliases == {"eqn": "equation"}
    assert expand_display_macros(r"\be x \ee \bee", table.display) == r"\begin{equation} x \end{equation} \bee"


def test_definition_cut_off_by_the_end_of_the_text_is_skipped():
    table = extract_macros("\\newcommand{\\a}{x}\\newcommand\\")  # a lone backslash where the name would be
    assert list(table.macros) == ["\\a"] and not table.issues


def test_modern_definers():
    table = extract_macros(
        r"""
        \DeclareRobustCommand{\vect}[1]{\boldsymbol{#1}}
        \NewDocumentCommand{\norm}{s O{2} m}{\IfBooleanTF{#1}{|#3|_{#2}}{\|#3\|_{#2}}}
        \ProvideDocumentCommand{\vect}{m}{ignored}
        \RenewDocumentCommand\grad{}{\nabla}
        \DeclarePairedDelimiter{\abs}{\lvert}{\rvert}
        \DeclarePairedDelimiterX{\inner}[2]{\langle}{\rangle}{#1,#2}
        \NewDocumentEnvironment{eqs}{o}{\begin{align}}{\end{align}}
        """
    )
    m = table.macros
    assert (m["\\vect"].body, m["\\vect"].nargs, m["\\vect"].source) == ("\\boldsymbol{#1}", 1, "DeclareRobustCommand")
    assert (m["\\norm"].spec, m["\\norm"].nargs, m["\\norm"].source) == ("s O{2} m", 3, "NewDocumentCommand")
    assert (m["\\grad"].spec, m["\\grad"].body) == ("", "\\nabla")
    assert (m["\\abs"].delimiters, m["\\abs"].body, m["\\abs"].nargs) == (("\\lvert", "\\rvert"), "#1", 1)
    assert (m["\\inner"].body, m["\\inner"].nargs, m["\\inner"].source) == ("#1,#2", 2, "DeclarePairedDelimiterX")
    assert table.environment_aliases == {"eqs": "align"} and not table.issues
    assert MacroDef.from_json(m["\\inner"].to_json()) == m["\\inner"]


def test_definition_spans_are_recorded_for_masking():
    text = r"a \newcommand{\R}{\mathbb{R}} b \def\x{1} c"
    table = extract_macros(text)
    assert [text[a:b] for a, b in table.spans] == [r"\newcommand{\R}{\mathbb{R}}", r"\def\x{1}"]


def test_robust_knowledge_and_pre_post_paired_definers():
    text = r"""\newrobustcmd{\R}{\mathbb{R}}
\knowledgenewrobustcmd \Nodes [1] {\cmdkl{\mathrm{Nodes}}(#1)}
\DeclarePairedDelimiterXPP\trunc[2]{}\lVert\rVert{_{#1}}{#2}"""
    made = {m.name: m for m in extract_macros(text).definitions()}
    assert made["\\R"].body == "\\mathbb{R}" and made["\\Nodes"].nargs == 1
    trunc = made["\\trunc"]  # \trunc*[\big]{k}{x}: star and size first, then the declared arguments
    assert (trunc.spec, trunc.nargs) == ("s o m m", 4) and trunc.body.endswith("_{#3}")
    assert "{\\left\\lVert #4 \\right\\rVert}" in trunc.body and "\\mathopen{#2l\\lVert}" in trunc.body
    assert "{\\mathopen{\\lVert} #4 \\mathclose{\\rVert}}" in trunc.body  # neither star nor size: as they are


def test_math_environments_the_document_defines_are_replaced_inside_displays():
    text = r"""\newenvironment{grammar}{\begin{array}{l@{{}::={}}l}}{\end{array}}
\newenvironment{note}{\par\textbf{Note.}}{\par}
\newenvironment{rows}[1]{\begin{array}{#1}}{\end{array}}"""
    table = extract_macros(text)
    assert table.environments == {"grammar": ("\\begin{array}{l@{{}::={}}l}", "\\end{array}")}  # no text, no arguments
    body = r"\begin{grammar} e & x \end{grammar}"
    assert expand_environments(body, table.environments) == r"\begin{array}{l@{{}::={}}l} e & x \end{array}"


# -- a preamble's definitions through extraction and the real KaTeX --------------------------------------------------

PREAMBLE = r"""
\usepackage{mathtools,mleftright}
\let\left\mleft \let\right\mright
\providecommand\given{}
\newcommand\SetSymbol[1][]{\nonscript\:#1\vert\allowbreak\nonscript\:\mathopen{}}
\DeclarePairedDelimiterX\Set[1]\{\}{\renewcommand\given{\SetSymbol[\delimsize]}#1}
\DeclarePairedDelimiterX\Setb[1]{\lbrace}{\rbrace}{\def\given{\;\delimsize\vert\;}#1}
\DeclarePairedDelimiterXPP\Prob[1]{\mathbb{P}}{[}{]}{}{\renewcommand\given{\nonscript\:\delimsize\vert\nonscript\:}#1}
\DeclarePairedDelimiter\floor\lfloor\rfloor
\DeclareMathOperator*{\argmin}{arg\,min}
\providecommand{\tr}{\mathrm{X}}
\providecommand{\frac}[2]{#1/#2}
\let\oldsqrt\sqrt \renewcommand{\sqrt}[1]{\oldsqrt{#1}\,}
"""
DISPLAYS = [
    r"f\left( x \right) = \left[ \frac{1}{2} \right]",
    r"\Set{x \given x > 0} \Set*{x \given \frac{x}{2} > 0} \Set[\big]{x \given y}",
    r"\Setb{x \given x > 0} \Setb*{x \given \frac{x}{2}} \Prob{A \given B} \Prob*{\frac{A}{2} \given B} \Prob[\Big]{A}",
    r"\floor{x} \floor*{\frac{x}{2}} \floor[\bigg]{x} \argmin_{x} \sqrt{x} \tr A",
]


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.latex.install import KatexNotInstalledError, check_installed

    try:
        check_installed()
    except KatexNotInstalledError as error:
        pytest.skip(str(error))
    with KatexConverter() as conv:
        yield conv


def test_aliases_paired_delimiters_and_operators_of_a_preamble_convert_exactly(converter):
    macros = extract_macros(PREAMBLE).definitions()
    results = converter.convert_many([(latex, "equation") for latex in DISPLAYS], macros=macros)
    assert [(r.status, r.message) for r in results] == [("ok", None)] * len(DISPLAYS)
    # \providecommand of a command of KaTeX or the package table defines nothing; the alias holds the built-in
    assert "<msqrt>" in results[3].mathml and "X" not in results[3].mathml and "<mfrac>" in results[1].mathml


def test_newif_switches_and_font_families():
    table = extract_macros(
        r"\newif\ifthesis \thesistrue \newif\ifdraft \newfontfamily\cyrillicfont[Script=Cyrillic]{XITS}"
    )
    made = {m.name: m.body for m in table.definitions()}
    assert made["\\ifthesis"] == "\\iftrue" and made["\\ifdraft"] == "\\iffalse" and made["\\cyrillicfont"] == ""


def test_a_documents_switches_decide_its_conditionals(converter):
    macros = extract_macros(r"\newif\ifthesis \thesistrue \newcommand{\N}{\ifthesis\mathbb{N}\else N\fi}")
    result = converter.convert(r"\N + \ifthesis a \else b \fi", macros=macros.definitions())
    assert result.status == "ok" and '<mi mathvariant="double-struck">N</mi>' in result.mathml
    assert "<mi>a</mi>" in result.mathml and "<mi>b</mi>" not in result.mathml


def test_siunitx_units_a_document_declares_and_pdf_only_meanings_left_out():
    """``\\DeclareSIUnit \\amphour {Ah}`` (braced or not, options first) is what the unit prints; a definition inside
    hyperref's ``\\pdfstringdefDisableCommands`` is for PDF bookmarks only, never the formula's meaning."""
    text = r"""\pdfstringdefDisableCommands{\def\varepsilon{\textepsilon}\def\x{{a}}}
\DeclareSIUnit \amphour {Ah}
\DeclareSIUnit[per-mode = symbol]{\pixel}{px}
\newcommand{\R}{\mathbb{R}}"""
    table = extract_macros(text)
    assert {m.name: (m.body, m.source) for m in table.definitions()} == {
        "\\amphour": ("Ah", "DeclareSIUnit"),
        "\\pixel": ("px", "DeclareSIUnit"),
        "\\R": ("\\mathbb{R}", "newcommand"),
    }


def test_declared_units_convert_inside_siunitx_quantities(converter):
    """A unit exists only inside a unit argument: one named like a command KaTeX has (``\\bar``) never replaces it."""
    table = extract_macros(r"\DeclareSIUnit\amphour{Ah} \DeclareSIUnit\watthour{Wh} \DeclareSIUnit\bar{bar}")
    latex = r"C = \SI{60000}{\milli\amphour} = \si{\kilo\watthour}, \quad \bar{N}"
    result = converter.convert(latex, "equation", macros=table.definitions())
    assert (result.status, result.reason) == ("ok", None), result.message
    assert "Ah" in result.mathml.replace('<mi mathvariant="normal">', "").replace("</mi>", "")
    assert '<mover accent="true"><mi>N</mi>' in result.mathml


def test_a_name_ended_by_its_own_token_and_a_display_environment_of_its_own(converter):
    """``\\def\\meet/{\\wedge}`` is used as ``\\meet/`` (a parameter text of a token alone); ``\\renewenvironment``
    whose begin is ``\\[`` (algorithm2e's ``algomathdisplay``) is a display, whatever its end code adds."""
    table = extract_macros(
        r"\def\meet/{\wedge}\def\bigjoin/{\bigvee}"
        r"\renewenvironment{algomathdisplay}{\[}{\@endalgocfline\vspace{-\baselineskip}\]{\DontPrintSemicolon\;}}"
    )
    assert table.environment_aliases == {"algomathdisplay": "displaymath"} and not table.issues
    result = converter.convert(r"a \meet/ \bigjoin/\limits_{i \in I} b_{i}", macros=table.definitions())
    assert result.status == "ok", result.message
    assert "∧" in result.mathml and "<munder><mo>⋁</mo>" in result.mathml and "<mo>/</mo>" not in result.mathml


def test_xargs_optional_arguments_by_position(converter):
    """xargs' ``\\newcommandx*\\P[2][1=i, 2=0]{..}``: both arguments optional with their defaults (``O{i} O{0}``);
    ``[2={a,b}]`` a default holding a comma; through the real KaTeX, ``\\P``, ``\\P[j]`` and ``\\P[j][n]``."""
    table = extract_macros(
        r"\newcommandx*\P[2][1=i, 2=0]{\widetilde{P_{#1}}^{\left(#2\right)}}\newcommandx\f[3][2={a,b}]{#1#2#3}"
    )
    made = {m.name: (m.source, m.spec) for m in table.definitions()}
    assert made == {"\\P": ("newcommand", "O{i} O{0}"), "\\f": ("newcommand", "m O{a,b} m")}
    result = converter.convert(r"\P + \P[j] + \P[j][n]", macros=table.definitions())
    assert result.status == "ok", result.message
    assert [result.mathml.count(f"<mi>{x}</mi>") for x in "ijn"] == [1, 2, 1]


def test_algorithm2e_keywords_print_their_text(converter):
    """algorithm2e's ``\\SetKwFunction{structDataSym}{structDataSym}`` (``\\SetKwData``, ``\\SetKw``): the command
    prints its text, also inside a formula."""
    table = extract_macros(r"\SetKwFunction{structDataSym}{structDataSym}\SetKwData{Left}{left}")
    assert {m.name: m.body for m in table.definitions()} == {
        "\\structDataSym": "\\text{structDataSym}",
        "\\Left": "\\text{left}",
    }
    result = converter.convert(r"x_i = \structDataSym(\Left, k)", macros=table.definitions())
    assert result.status == "ok", result.message
    assert "<mtext>structDataSym</mtext>" in result.mathml
