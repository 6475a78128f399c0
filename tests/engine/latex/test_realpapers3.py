"""Constructs of the third set of unseen real papers (benchmarks/history/ingest.md, "Real arXiv papers III"), through
the real KaTeX: graphicx boxes holding ``$..$``, T1 glyphs, Euler script, case changes after expansion, and an inline
TikZ node."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.plaintex import change_case, stagger_indices
from eqsearch.engine.latex.textmode import resolve_ensuremath


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        # \def\asym{\scalebox{.9}[1]{$\bigwedge$}}: a graphicx box is text; the math inside it is written $..$
        ("\\scalebox{.9}[1]{$\\bigwedge$}^k V", "<mo>⋀</mo>"),
        ("\\resizebox{2cm}{!}{$\\sum_i x_i$} + \\rotatebox{90}{\\(y\\)}", "∑"),
        # \newcommand{\sr}{\text{\normalfont\dh}}: the spin-raising eth of CMB papers (a T1 glyph)
        ("\\text{\\normalfont\\dh}^2 (Q + iU)", "<mtext>ð</mtext>"),
        ("K[t] = \\bigcap_{\\EuScript{O} \\in E} \\EuScript{O}", '<mi mathvariant="script">O</mi>'),
        ("\\mathfrak{\\MakeLowercase{G}}_0 \\oplus \\uppercase{x}", '<mi mathvariant="fraktur">g</mi>'),
        # a case table written as a tabular inside the display: an array of text cells
        (
            "V(r) = \\left\\{ \\begin{tabular}{ccc} \\hline 0 & & r<a, \\\\ $\\infty$ & & r>a. \\end{tabular} \\right.",
            '<mi mathvariant="normal">∞</mi>',
        ),
        # a footnote inside a display is set apart from the formula
        ("\\mu(C) \\geq 1 - p .\\footnote{Corollary 4.3 gives a weaker bound for non-simple $E$.}", "≥"),
        # AASTeX's units, which the class defines
        ("v = 150~\\kms, \\quad \\theta = 0.2\\arcsec", '<mi mathvariant="normal">k</mi>'),
    ],
)
def test_boxes_glyphs_and_case_changes_convert_exactly(converter, latex, expected):
    result = converter.convert(latex, "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert expected in result.mathml


def test_a_text_box_without_dollars_stays_text(converter):
    result = converter.convert("\\scalebox{0.8}{if} x", "equation")
    assert result.status == "ok" and "<mtext>if</mtext>" in result.mathml


def test_case_changes_keep_control_words():
    assert change_case("\\mathfrak{\\MakeLowercase{GL}}") == "\\mathfrak{{gl}}"
    assert change_case("\\MakeUppercase{a\\alpha b}") == "{A\\alpha B}"
    assert change_case("x_{\\lowercase{\\Lambda}}") == "x_{{\\Lambda}}"
    assert change_case("no case here") == "no case here"


def test_a_macro_drawing_a_lone_tikz_node_shows_the_node_and_a_picture_is_a_diagram(converter):
    bullet = MacroDef(
        "\\sbt",
        "\\tikz[baseline]{\\node[scale=.7,inner\n sep=0, outer sep=0, circle, anchor=base]\n {$\\bullet$};}",
        0,
        None,
        "newcommand",
    )
    base = MacroDef("\\base", "\\mathord{\\sbt}", 0, None, "newcommand")
    boxed = MacroDef("\\pt", "\\tikz{\\node[draw, circle]{$x$};}", 0, None, "newcommand")
    node, drawn = converter.convert_many(
        [("b : T(\\base)", "equation"), ("a \\pt b", "equation")], macros=(bullet, base, boxed)
    )
    assert (node.status, node.reason) == ("ok", None), node.message
    assert "∙" in node.mathml or "•" in node.mathml
    assert (drawn.status, drawn.reason) == ("diagram", "diagram")


def test_a_relation_set_over_a_single_token_moves_behind_the_tab(converter):
    result = converter.convert("0\\overset!&= \\exp(x) \\\\ &\\overset{(a)}= y", "align*")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert result.mathml.count("<mover>") == 2


def test_the_tex_faq_average_integral_and_a_box_register_macro(converter):
    xint = MacroDef(
        "\\Xint",
        "\\mathchoice{\\XXint\\displaystyle\\textstyle{#1}}{\\XXint\\textstyle\\scriptstyle{#1}}"
        "{\\XXint\\scriptstyle\\scriptscriptstyle{#1}}{\\XXint\\scriptscriptstyle\\scriptscriptstyle{#1}}\\!\\int",
        1,
        None,
        "def",
    )
    boxes = MacroDef(
        "\\XXint", "{\\setbox0=\\hbox{$#1{#2#3}{\\int}$}\\vcenter{\\hbox{$#2#3$}}\\kern-.5\\wd0}", 3, None, "def"
    )
    dint = MacroDef("\\dint", "\\Xint-", 0, None, "def")
    ddint = MacroDef("\\ddint", "\\Xint=", 0, None, "def")
    uses_box = MacroDef("\\wide", "\\setbox0\\hbox{$x$}\\copy0", 0, None, "def")
    average, double, box = converter.convert_many(
        [("\\dint_\\Sigma \\omega", "equation"), ("\\ddint f", "equation"), ("\\wide + y", "equation")],
        macros=(xint, boxes, dint, ddint, uses_box),
    )
    assert (average.status, double.status) == ("ok", "ok"), (average.message, double.message)
    assert "\u2a0d" in average.mathml and "\u2a0e" in double.mathml
    assert (box.status, box.reason) == ("approximate", "undefined-macro")  # not a parse error: its name as text


def test_staggered_tensor_indices_and_a_control_space_at_the_end(converter):
    tensor, space = converter.convert_many(
        [
            ("\\tensor{R}{_{ia}_{jb}} = K(h_{ij}h_{ab}-h_{aj}h_{bi})", "equation"),
            ("D \\coloneqq X^q Z^p,\\ ", "equation"),
        ]
    )
    assert (tensor.status, space.status) == ("ok", "ok"), (tensor.message, space.message)
    assert tensor.mathml.count("<msub><mrow></mrow>") == 2  # two index columns, not a double subscript
    assert stagger_indices("\\tensor{T}{^a_b}") == "\\tensor{T}{^{a}{}_{b}}"
    assert stagger_indices("\\tensor{T}{^a}") == "\\tensor{T}{^a}"  # one index: nothing to stagger


def test_a_picture_file_inside_a_formula_is_a_diagram(converter):
    result = converter.convert(
        "\\vcenter{\\hbox{\\includegraphics[width=0.4\\linewidth]{mps-gauge}}} \\Rightarrow \\sum_i A_i", "equation"
    )
    assert (result.status, result.reason, result.mathml) == ("diagram", "diagram", None), result.message
    assert result.message.startswith("1 picture (includegraphics)")


def test_the_differential_d_idiom_with_ifnextchar_a_delimited_def_and_futurelet(converter):
    from eqsearch.ingest.macros import extract_macros

    preamble = r"""\providecommand*{\diff}{\@ifnextchar^{\DIfF}{\DIfF^{}}}
\def\DIfF^#1{\mathop{\mathrm{\mathstrut d}}\nolimits^{#1}\gobblespace}
\def\gobblespace{\futurelet\diffarg\opspace}
\def\opspace{\let\DiffSpace\!\ifx\diffarg(\let\DiffSpace\relax\fi\DiffSpace}"""
    macros = tuple(extract_macros(preamble).definitions())
    first, second = converter.convert_many(
        [("\\sigma = \\frac{\\diff E_1}{\\diff E_2}", "equation"), ("\\int f \\diff^2 x", "equation")], macros=macros
    )
    assert (first.status, second.status) == ("ok", "ok"), (first.message, second.message)
    assert first.mathml.count('<mi mathvariant="normal">d</mi>') == 2 and "<mn>2</mn>" in second.mathml


def test_ensuremath_is_a_group_in_math_and_math_inside_a_text_box(converter):
    assert resolve_ensuremath("\\breve\\ensuremath{\\mathfrak{g}}") == "\\breve{\\mathfrak{g}}"
    # \newcommand{\config}[2]{\ensuremath \genfrac{[}{]}{0pt}{}{#1}{#2}}: the argument given back, no group
    assert resolve_ensuremath("\\ensuremath \\genfrac{[}{]}{0pt}{}{a}{b}") == "\\genfrac{[}{]}{0pt}{}{a}{b}"
    assert resolve_ensuremath("\\mbox{\\ensuremath{\\diamond} or $\\ensuremath{x}$}") == "\\mbox{$\\diamond$ or $x$}"
    quant = MacroDef("\\quant", "\\mbox{\\ensuremath{\\mathrlap{\\diamond}\\square}}", 0, None, "newcommand")
    lie = MacroDef("\\LieG", "\\ensuremath{\\mathfrak{\\MakeLowercase{G}}}", 0, None, "NewDocumentCommand", spec="")
    box, accent = converter.convert_many(
        [("\\quant{\\overline{k}}.[T]", "equation"), ("\\breve\\LieG = \\LieG_0", "equation")], macros=(quant, lie)
    )
    assert (box.status, box.reason) == ("ok", None), box.message
    assert (accent.status, accent.reason) == ("ok", None), accent.message
    assert "◊" in box.mathml or "⋄" in box.mathml


def test_agda_aspects_math_spaces_text_boxes_circuits_and_a_spacing_test(converter):
    controlled = (
        "\\AgdaFunction{controlled} &:& \\forall a.~ (a \\leftrightarrow a) \\\\ \\AgdaBound{f} &=& \\mspace{1mu} x"
    )
    d = MacroDef("\\d", "\\relax\\ifnum\\lastnodetype>0\\mskip\\thinmuskip\\fi\\textnormal{d}", 0, None, "renewcommand")
    agda, rule, integral, circuit = converter.convert_many(
        [
            (f"\\begin{{array}}{{rcll}} {controlled} \\end{{array}}", "equation"),
            ("\\makebox{{\\rm R} $\\displaystyle \\frac{a}{b}$}", "equation"),
            ("U = \\int_\\Omega u(x) \\d x", "equation"),
            ("\\Qcircuit @C=1em @R=1em { & \\gate{H} & \\qw }", "equation"),
        ],
        macros=(d,),
    )
    assert [r.status for r in (agda, rule, integral)] == ["ok", "ok", "ok"], [agda.message, rule.message]
    assert '<mtext mathvariant="sans-serif">controlled</mtext>' in agda.mathml or "controlled" in agda.mathml
    assert "<mtext>d</mtext>" in integral.mathml
    assert circuit.status == "diagram"  # qcircuit draws with Xy-pic: kept as LaTeX


def test_proof_sty_rules_and_xfrac(converter):
    rule, fraction = converter.convert_many(
        [
            ("\\infer[\\mathrm{R}]{A \\land B}{A & \\infer{B}{C & D}}", "equation"),
            ("\\sigma_v = \\sqrt{\\sfrac{3}{2}\\, s : s}", "equation"),
        ]
    )
    assert (rule.status, fraction.status) == ("ok", "ok"), (rule.message, fraction.message)
    assert rule.mathml.count("<mfrac>") == 2 and "<mfrac>" in fraction.mathml


def test_ensuremath_before_a_command_in_macros_katex_expands(converter):
    config = MacroDef("\\config", "\\ensuremath \\genfrac{[}{]}{0pt}{}{#1}{#2}", 2, None, "newcommand")
    opluseq = MacroDef("\\opluseq", "\\ensuremath\\mathrel{\\oplus}=", 0, None, "newcommand")
    lie = MacroDef("\\LieG", "\\ensuremath{\\mathfrak{g}}", 0, None, "newcommand")
    results = converter.convert_many(
        [("w(\\config{q}{\\gamma}) = 1", "equation"), ("d \\opluseq e", "equation"), ("\\breve\\LieG", "equation")],
        macros=(config, opluseq, lie),
    )
    assert [r.status for r in results] == ["ok", "ok", "ok"], [r.message for r in results]
