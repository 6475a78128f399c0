"""Constructs of the fourth set of unseen real papers (benchmarks/history/ingest.md, "Real arXiv papers IV"), through
the real KaTeX: references inside ``\\shortintertext``, paragraph columns of an array, nicematrix, inline code and
xy-pic arrows brought by macros, textcomp's symbols."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.arrays import rewrite_array_specs
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.preprocess import clean_latex


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        # cleveref inside amsmath's \shortintertext: the label's underscore must not reach text mode
        (
            "a &= b \\\\ \\shortintertext{by \\cref{eq:cond_mean} and \\eqref{eq:L_c},} c &= d",
            "(?),</mtext>",
        ),
        # array's paragraph column with its alignment code: the cells are text, $..$ inside them math
        (
            "\\begin{array}{r@{\\hspace{1.5mm}}l@{\\hspace{2.5mm}}>{\\raggedright\\arraybackslash}p{4cm}}"
            " \\mathbf{x} & = x_1 & le vecteur des $x_i$ \\\\ c & = c_1 & \\text{les co\\^uts} \\end{array}",
            "vecteur",  # one text run: in math it would be letters <mi>v</mi><mi>e</mi>..
        ),
        # nicematrix, a first row of labels and its dotted line
        (
            "B^{-1}A = \\begin{bNiceMatrix}[first-row, last-row] x & y \\\\ 1/4 & \\Cdots \\\\ a & b "
            "\\end{bNiceMatrix} + \\begin{NiceArray}{cc}[hvlines] 1 & 0 \\end{NiceArray}",
            "⋯</mo>",
        ),
        # textcomp in a formula
        ("A_{12}(p) = \\textpm \\frac{p^k}{g(p)}", "<mtext>±</mtext>"),
    ],
)
def test_round_four_constructs_convert_exactly(converter, latex, expected):
    result = converter.convert(latex, "align")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert expected in result.mathml


def test_commands_inside_an_unwrapped_argument_are_cleaned():
    assert clean_latex("\\intertext{see \\cref{a_b}\\label{x}}") == "\\text{see \\text{(?)}}"
    assert clean_latex("\\condition{for \\ref{s_1}}") == ",\\quad \\text{for \\text{(?)}}"


def test_paragraph_columns_become_text_and_layout_code_goes():
    out = rewrite_array_specs("\\begin{array}{l>{\\centering\\arraybackslash}m{2cm}} a & b c \\\\ d & \\end{array}")
    assert out == "\\begin{array}{ll} a  & \\text{ b c }\\\\ d  &  \\end{array}"  # an empty cell stays empty


def test_macros_bringing_inline_code_and_xy_arrows(converter):
    """tymfgg's preamble: ``\\newcommand{\\hs}{\\mintinline{haskell}}`` and a labelled arrow drawn with xy-pic."""
    hs = MacroDef("\\hs", "\\mintinline{haskell}", 0, None, "newcommand")
    arrow = MacroDef("\\longrarrow", "\\xymatrix{ #1 \\ar[rr]^-{#2} && #3 }", 3, None, "def")
    code, drawn = converter.convert_many(
        [
            ("\\hs{Matrix { matrix = [[1,0],[0,1]], dimensions = (4,4) }}", "equation"),
            ("\\longrarrow R {sprinkler} S = \\begin{bmatrix} 0.6 & 0.4 \\end{bmatrix}", "equation"),
        ],
        macros=[hs, arrow],
    )
    assert (code.status, code.reason) == ("ok", None), code.message
    assert '<mtext mathvariant="monospace">[[1,0],[0,1]],</mtext>' in code.mathml
    assert (drawn.status, drawn.reason) == ("diagram", "diagram"), drawn.message  # an arrow drawn as a picture


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        # youngtab: a diagram of empty boxes, a tableau whose \hfil cells are empty boxes
        ("\\bar{15}=\\yng(1,1)\\rightarrow(\\yng(1,1),\\yng(2))", '<menclose notation="box">'),
        ("(2,1)\\otimes(2,1)= \\young(\\hfil\\hfil\\hfil aaa,\\hfil b)\\oplus \\young(aa,b)", "<mi>b</mi>"),
        # ytableau: its setup, the environment, \ydiagram and \ytableaushort
        (
            "(n,m)\\otimes(1,1)=\\ytableausetup{mathmode, boxsize=1.3em} \\begin{ytableau} k_1 & \\dots & k_m \\\\ "
            "l_1 & \\none \\\\ \\end{ytableau} \\otimes \\ydiagram{2+1,3} \\oplus \\ytableaushort{ab,c}",
            "<msub><mi>k</mi><mn>1</mn></msub>",
        ),
        # a spanning cell of an array, and a minipage holding a display beside a matrix
        ("\\begin{array}{ccc} \\multicolumn{2}{c}{\\overbrace{a\\,b}^{x_B}} & c \\\\ 1 & 2 & 3 \\end{array}", "x"),
        (
            "\\begin{minipage}{0.20\\textwidth} \\begin{align*} & \\text{Min } z \\notag \\\\ & \\text{s.a.} "
            "\\end{align*} \\end{minipage} \\begin{bmatrix} 1 & 2 \\end{bmatrix}",
            "s.a.",
        ),
    ],
)
def test_young_tableaux_spanning_cells_and_minipages_convert_exactly(converter, latex, expected):
    result = converter.convert(latex, "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert expected in result.mathml


def test_multicolumn_keeps_the_columns_it_spans():
    assert clean_latex("\\multicolumn{3}{|c|}{\\label{x}A} & B") == "A & & & B"
    assert clean_latex("\\multicolumn{#1}{c}{#2}") == "\\multicolumn{#1}{c}{#2}"  # a macro body: left as it is


def test_plain_tex_idioms_in_macros_and_positioned_arrays(converter):
    """Old preambles: ``\\lsim`` drawn with box shifts, a bold vector through ``\\mathpalette``; an inner array whose
    position comes before an ``@{}`` specification; an inline ``\\xymatrix@R=..`` is a diagram."""
    lsim = MacroDef(
        "\\lsim",
        "\\mathrel{\\rlap{\\lower4pt\\hbox{\\hskip1pt$\\sim$}}\\raise1pt\\hbox{$<$}}",
        0,
        None,
        "newcommand",
    )
    vec = MacroDef("\\Vec", "\\mathpalette{\\VVec}{#1}", 1, None, "def")
    vvec = MacroDef("\\VVec", "\\mbox{\\boldmath$#1#2$\\unboldmath}", 2, None, "def")
    shifted, bold, positioned, diagram = converter.convert_many(
        [
            ("M \\lsim 40~M_\\odot", "$"),
            ("{\\Vec P}_{1\\perp} \\cdot {\\Vec P}_{2\\perp}", "$"),
            ("\\begin{array}[t]{@{}l@{}} \\hat{g} = A g \\\\ + C \\end{array}", "$"),
            ("\\xymatrix@R=.4in{B\\ar[r]^(.25){q} & A}", "$"),
        ],
        macros=[lsim, vec, vvec],
    )
    for result in (shifted, bold, positioned):
        assert (result.status, result.reason) == ("ok", None), result.message
    assert "∼" in shifted.mathml and "<mo>&lt;</mo>" in shifted.mathml
    assert "<mi>P</mi>" in bold.mathml
    assert diagram.status == "diagram", diagram.message


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        # xcolor: a name with a digit (\definecolor{color2}), a mix, the rgb and HTML models
        ("\\textcolor{color2}{\\mathit{inv}}\\ t = \\color{red!50!black} x", "<mi>x</mi>"),
        ("\\textcolor[rgb]{1,0.5,0}{y} + \\colorbox[HTML]{FF00AA}{$z$} + \\fcolorbox{a1}{b-2}{w}", "#ff8000"),
        # siunitx's abbreviations inside a unit argument
        ("K_T \\geq \\SI{1e-5}{\\m\\squared\\per\\s}", '<mi mathvariant="normal">s</mi>'),
        ("E = \\SI{3}{\\GeV}, \\; d = \\SIrange{1}{2}{\\um}, \\; R = \\si{\\kohm}", '<mi mathvariant="normal">Ω</mi>'),
    ],
)
def test_colours_and_unit_abbreviations_convert_exactly(converter, latex, expected):
    result = converter.convert(latex, "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert expected in result.mathml


def test_mhchem_in_math_and_in_text_and_tikzit_figures_are_diagrams(converter):
    text, math, figure = converter.convert_many(
        [
            (
                "\\Delta G_\\textrm{(aq)} = \\Delta G^\\textrm{\\ce{BH+}}_\\textrm{sol} - E_\\textrm{\\ce{B_{(g)}}}",
                "equation",
            ),
            ("\\ce{H2O ->[\\Delta] H2 + 1/2 O2}, \\quad \\pu{123 kJ/mol}", "equation"),
            ("\\iltikzfig{strings/monoid/unit}[colour=comb] \\reduction \\tikzfig{id}", "equation"),
        ]
    )
    for result in (text, math):
        assert (result.status, result.reason) == ("ok", None), result.message
    assert ">BH</mi>" in text.mathml or '<mi mathvariant="normal">B</mi>' in text.mathml
    assert "<mn>123</mn>" in math.mathml
    assert figure.status == "diagram", figure.message


@pytest.mark.parametrize(
    "latex",
    [
        # mathtools' layout commands: the material kept
        "\\begin{aligned} \\MoveEqLeft[3] f(x) \\\\ &= \\adjustlimits\\lim_{n} \\sup_{m} a \\\\ \\vdotswithin{=} "
        "\\\\ &\\Aboxed{= b} \\end{aligned}",
        "\\frac{\\splitfrac{a+b+c}{+d+e}}{f} + \\overunderset{a}{b}{=} + \\cramped{x^2} \\udots \\lsem x \\rsem",
        "\\begin{gathered} a \\\\ \\shoveleft[1cm]{b} \\end{gathered} + \\wideparen{AB} + {\\mit x}",
        # a centring environment inside a display is layout only
        "\\begin{center} a = b \\end{center}",
    ],
)
def test_mathtools_layout_commands_and_layout_environments_convert_exactly(converter, latex):
    result = converter.convert(latex, "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
