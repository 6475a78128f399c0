"""Constructs of the sixth unseen set (benchmarks/history/ingest.md, "Real arXiv papers VI"), through the real
KaTeX: operators declared with spacing inside, type-theory rule arrays and the plain TeX their macros use."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.preprocess import clean_latex


@pytest.mark.parametrize(
    "name_body",
    ["arg\\,min", "arg\\;min", "arg\\!\\min", "arg\\ min", "arg~min", "arg\\hspace{0.1em}min", "\\mathrm{arg\\,min}",
     "arg\\kern 0.1em min", "\\arg\\,\\min", "arg\\,min\\,", "\\textrm{arg\\,min}", "{arg\\,min}"],
)  # fmt: skip
def test_operators_declared_with_spacing_inside(converter, name_body):
    """``\\DeclareMathOperator*{\\argmin}{arg\\,min}`` as extraction records it."""
    macros = [
        MacroDef("\\argmin", f"\\operatorname*{{{name_body}}}", source="DeclareMathOperator*"),
        MacroDef("\\Argmin", f"\\operatorname{{{name_body}}}", source="DeclareMathOperator"),
    ]
    result = converter.convert("\\argmin_{x \\in X} f(x) = \\Argmin\\limits_{y} g(y)", macros=macros)
    assert result.status == "ok", result.message
    assert "<munder>" in result.mathml  # the starred operator takes its subscript below


def test_type_theory_rule_arrays(converter):
    """A rule array of a type-theory paper: a bold heading made with ``\\noindent{\\bf ..}``, ``\\par``, rows set
    apart with ``\\noalign``, a definition sign drawn with negative spacing, plain TeX's ``\\mapstochar``."""
    macros = [
        MacroDef("\\defeq", "\\mathrel{:}\\mkern-1.2mu\\joinrel=", source="newcommand"),
        MacroDef("\\mapchar", "\\mathrel{\\mapstochar\\rightarrow}", source="newcommand"),
        MacroDef("\\coloneq", "\\mathrel{\\vcenter{\\baselineskip0.5ex \\lineskiplimit0pt"
                 "\\hbox{\\scriptsize.}\\hbox{\\scriptsize.}}}=", source="def"),
    ]  # fmt: skip
    latex = (
        "\\begin{array}{c} \\noindent{\\bf Typing}\\par \\\\ \\noalign{\\smallskip}"
        "\\dfrac{\\Gamma \\vdash t : A \\quad x \\mapchar y}{\\Gamma \\vdash \\lambda x.t : A} \\\\ \\noalign{\\hrule}"
        "f \\defeq g \\coloneq h \\\\ \\mathrel{\\vbox{\\hbox{:}}} \\mapstochar\\longrightarrow \\end{array}"
    )
    result = converter.convert(latex, "\\[", macros=macros)
    assert result.status == "ok", result.message
    assert "↦" in result.mathml and "⟼" in result.mathml


def test_plain_tex_in_rule_arrays_is_cleaned():
    assert clean_latex("a \\\\ \\noalign{\\vskip 2pt} b \\\\ \\noalign{\\hrule} c") == "a \\\\  b \\\\ \\hline  c"
    assert clean_latex("\\mapstochar \\to x \\mapstochar y") == "\\mapsto x \\mathrel{\\shortmid} y"
    assert clean_latex("\\baselineskip=2pt x \\hspace{0.5\\baselineskip}") == " x \\hspace{0.5\\baselineskip}"
    assert clean_latex("\\nonscript\\: a\\par b") == "\\: a b"


def test_pictures_drawn_by_macros_make_the_display_a_diagram_unless_a_symbol(converter):
    """The blob complex paper's ``\\mathfig`` (an ``\\includegraphics`` in an array) and ZX spiders by ``\\tikzfig``."""
    figure = MacroDef(
        "\\mathfig",
        "\\ensuremath{\\hspace{-3pt}\\begin{array}{c}\\raisebox{-2.5pt}{\\includegraphics[width=#1\\textwidth]{#2}}"
        "\\end{array}\\hspace{-3pt}}",
        2,
    )
    spider = MacroDef("\\spider", "\\tikzfig{spider-#1}", 1)
    skein, spiders, symbol = converter.convert_many(
        [
            ("\\mathfig{.3}{a} = q \\mathfig{.3}{b} + q^{-1} \\mathfig{.3}{c}", "equation"),
            ("\\left\\{ \\spider{1}, \\spider{2} \\right\\}", "equation"),
            ("a \\mathbin{\\mathfig{.1}{x}} b", "equation"),
        ],
        macros=[figure, spider],
    )
    assert (skein.status, skein.message) == ("diagram", skein.message) and skein.message.startswith("3 pictures")
    assert spiders.status == "diagram" and "tikzfig" in spiders.message
    assert (symbol.status, symbol.reason) == ("approximate", "diagram-placeholder")
    assert symbol.message.endswith("2 of 3 symbols kept (66%)")


def test_plain_tex_boxes_and_overlays_in_operators(converter):
    """A sum-integral drawn with ``\\ooalign`` inside ``\\mathchoice``, spaced arguments, shifts by ``\\height``."""
    sumint = MacroDef(
        "\\SumInt",
        "\\operatorname*{\\mathchoice\n"
        "  {\\ooalign{$\\displaystyle\\sum$\\cr\\hidewidth$\\displaystyle\\int$\\hidewidth\\cr}}"
        "\n  {\\ooalign{\\raisebox{.14\\height}{\\scalebox{.7}{$\\textstyle\\sum$}}\\cr$\\textstyle\\int$\\cr}}"
        "\n  {x}\n  {x}\n}",
        source="DeclareMathOperator*",
    )
    circled = MacroDef("\\acirc", " {\\stackrel{\\mbox{\\circle{2}}}{a}} ")
    text = MacroDef("\\text", "\\mbox", source="renewcommand")  # \mbox is KaTeX's \text: no loop
    result = converter.convert(
        "G = \\SumInt_g e^{-iEt} + \\acirc_f \\text{ab} + \\medmuskip=0mu a \\\\[\\medskipamount] "
        "\\begin{multlined}[t] b \\\\ c \\end{multlined}",
        "align*",
        macros=[sumint, circled, text],
    )
    assert result.status == "ok", result.message
    assert "∑" in result.mathml and "∫" in result.mathml and "○" in result.mathml


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        ("\\mathup{Perv} \\mathbfcal{L} \\mathbfsfit{x}", '<mi mathvariant="script">L</mi>'),
        ("P[\\text{\\b{S}}_{t-1}] \\alert{x}", "<munder"),
    ],
)
def test_package_commands_of_round_six(converter, latex, expected):
    result = converter.convert(latex)
    assert (result.status, result.reason) == ("ok", None), result.message
    assert expected in result.mathml
