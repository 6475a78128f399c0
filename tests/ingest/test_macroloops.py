"""Macros a preamble makes in loops and with ``\\csname``-built names (`eqsearch.ingest.macroloops`), read by
`eqsearch.ingest.macros.extract_macros` like any other definition."""

from __future__ import annotations

from eqsearch.ingest.macroloops import delimited_spec, named_definitions, unrolled_loops
from eqsearch.ingest.macros import extract_macros


def test_a_for_loop_over_a_list_macro_runs_a_definer_per_item():
    text = r"""\NewDocumentCommand\Lie{m}{\ensuremath{\mathfrak{\MakeLowercase{#1}}}}
\NewDocumentCommand\MakeLie{m}{\expandafter\def\csname Lie#1\endcsname{\Lie{#1}}}
\def\lst{B,G,H}
\makeatletter
\@for\i:=\lst\do{\expandafter\MakeLie \i}
\makeatother"""
    made = {m.name: m.body for m in extract_macros(text).definitions()}
    assert made["\\LieB"] == "\\Lie{B}" and made["\\LieG"] == "\\Lie{G}" and made["\\LieH"] == "\\Lie{H}"
    assert "\\Liei" not in made and "\\csname" not in made


def test_foreach_over_a_letter_range_and_a_definer_with_a_csname_name():
    text = r"""\foreach \x in {A,...,D}{\expandafter\xdef\csname c\x\endcsname{\noexpand\mathcal{\x}}}
\def\mk#1{\expandafter\newcommand\csname bb#1\endcsname{\mathbb{#1}}}
\mk{R} \mk{Z}"""
    made = {m.name: m.body for m in extract_macros(text).definitions()}
    assert [made[f"\\c{c}"] for c in "ABCD"] == ["\\mathcal{A}", "\\mathcal{B}", "\\mathcal{C}", "\\mathcal{D}"]
    assert made["\\bbR"] == "\\mathbb{R}" and made["\\bbZ"] == "\\mathbb{Z}"


def test_names_still_made_of_a_variable_define_nothing_and_no_loop_means_nothing():
    assert named_definitions(r"\expandafter\def\csname Lie\i\endcsname{x}") == r"\relax {x}"
    assert named_definitions(r"\expandafter\let\csname foo\endcsname\relax") == r"\let\foo\relax"
    assert unrolled_loops(r"\newcommand{\R}{\mathbb{R}}") == ""
    assert unrolled_loops(r"\@for\i:=\undefinedlist\do{\x}") == ""  # a list the text never defines: nothing


def test_declared_math_alphabets_become_the_closest_katex_alphabet():
    text = r"""\DeclareMathAlphabet{\mathpzc}{OT1}{pzc}{m}{it}
\DeclareMathAlphabet{\mybb}{U}{BOONDOX-ds}{m}{n}
\DeclareMathAlphabet\mathbfcal{OMS}{cmsy}{b}{n}
\DeclareMathAlphabet{\mathbold}{OML}{txr}{b}{it}
\DeclareMathAlphabet{\mathbf}{OT1}{ptm}{bx}{n}
\DeclareMathAlphabet{\mathsfit}{OT1}{cmss}{m}{sl}"""
    made = {m.name: m.body for m in extract_macros(text).definitions()}
    assert made["\\mathpzc"] == "\\mathscr{#1}" and made["\\mybb"] == "\\mathbb{#1}"
    assert made["\\mathbfcal"] == "\\mathcal{#1}" and made["\\mathbold"] == "\\boldsymbol{#1}"
    assert made["\\mathsfit"] == "\\mathsf{#1}"
    assert "\\mathbf" not in made  # KaTeX's own alphabet is kept


def test_a_preambles_own_list_iterator_applies_its_macro_to_each_item():
    """The blob complex paper: ``\\applytolist{calc}QWERTY...;`` in TeX's ``\\csname``/``\\next`` idiom."""
    text = r"""\def\semicolon{;}
\def\applytolist#1{
    \expandafter\def\csname multi#1\endcsname##1{
        \def\multiack{##1}\ifx\multiack\semicolon
            \def\next{\relax}
        \else
            \csname #1\endcsname{##1}
            \def\next{\csname multi#1\endcsname}
        \fi
        \next}
    \csname multi#1\endcsname}
\def\calc#1{\expandafter\def\csname c#1\endcsname{{\mathcal #1}}}
\applytolist{calc}QWC;
\def\declaremathop#1{\expandafter\DeclareMathOperator\csname #1\endcsname{#1}}
\applytolist{declaremathop}{im}{gl}{Maps};"""
    made = {m.name: m.body for m in extract_macros(text).definitions()}
    assert made["\\cC"] == "{\\mathcal C}" and made["\\cQ"] == "{\\mathcal Q}" and made["\\cW"] == "{\\mathcal W}"
    assert made["\\Maps"] == "\\operatorname{Maps}" and made["\\gl"] == "\\operatorname{gl}"


def test_a_parameter_text_of_tokens_alone_reads_them_as_optional_tokens():
    assert delimited_spec("/", "\\wedge") == ("t/", "\\wedge")  # \def\meet/{\wedge}, used as \meet/
    assert delimited_spec("^#1", "x") == ("t^ m", "x")
    assert delimited_spec("#1/x", "y") is None  # a delimiter of two tokens after a parameter: not read
