"""Constructs of round VIII's tuning set (benchmarks/ingest.md, "Real arXiv papers", round VIII), through the real
KaTeX: a change of case inside an operator's macro, siunitx 3's quantities, commands used as environments, physics'
matrices, words between quads and slashed fractions, a side-set prime on a sum, a display held in a scaled box."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef


def test_a_change_of_case_inside_an_operators_macro(converter):
    """``\\DeclareMathOperator{\\snr}{\\abbrev{SNR}}`` with ``\\abbrev[1]{\\textsc{\\MakeLowercase{#1}}}``: expanded
    here, where the case is changed, since KaTeX has no ``\\MakeLowercase``."""
    macros = [
        MacroDef("\\abbrev", "\\textsc{\\MakeLowercase{#1}}", 1, source="newcommand"),
        MacroDef("\\snr", "\\abbrev{SNR}", 0, source="DeclareMathOperator"),
    ]
    result = converter.convert("\\mathrm{D} \\le (1 + \\snr)^{n/k}", macros=macros)
    assert result.status == "ok", result.message
    assert "snr" in result.mathml and "MakeLowercase" not in result.mathml


@pytest.mark.parametrize(
    ("latex", "unit"),
    [("\\qty{441}{\\nm}", "nm"), ("\\qty[per-mode = symbol]{6.7}{\\uA \\per \\A}", "μA"),
     ("\\qty{-75}{\\MHz \\per \\hecto \\Pa}", "hPa"), ("\\qty{2}{\\pA \\Hz \\tothe{-0.5}}", "pA"),
     ("\\unit{\\deci\\bel}", "dB"), ("\\qty{1}{\\siemens}", "S"), ("\\qty{3}{\\mF}", "mF"),
     ("\\qtylist{1;2}{\\ms}", "ms")],
)  # fmt: skip
def test_siunitx_3_quantities_and_the_units_named_only_in_a_unit_argument(converter, latex, unit):
    result = converter.convert(f"x = {latex}")
    assert result.status == "ok", result.message
    assert all(letter in result.mathml for letter in unit), result.mathml


def test_commands_used_as_environments(converter):
    """``\\begin{mathcal}O\\end{mathcal}`` (LaTeX runs ``\\mathcal`` for it), also inside a macro's body, and
    ``\\begin{centering}`` around a matrix."""
    macros = [MacroDef("\\mcal", "\\begin{mathcal}#1\\end{mathcal}", 1, source="newcommand")]
    for latex in (
        "1+\\begin{mathcal}O\\end{mathcal}(\\varphi^4)",
        "\\mcal{L}_i = \\mcal{T}",
        "\\footnotesize \\begin{centering} \\begin{pmatrix} a & b \\end{pmatrix} \\end{centering}",
    ):
        result = converter.convert(latex, macros=macros)
        assert result.status == "ok", result.message
    assert 'mathvariant="script"' in converter.convert("\\begin{mathcal}O\\end{mathcal}").mathml


def test_layout_commands_inside_a_display(converter):
    result = converter.convert(
        "\\phantomsection x = 1 \\NiceMatrixOptions{cell-space-limits=1pt} \\ignorespaces "
        "\\begin{array}{cc} a & b \\\\ \\cline{1-2} c & d \\end{array}"
    )
    assert result.status == "ok", result.message


@pytest.mark.parametrize(
    "latex",
    ["\\ket{0} = \\mqty[1 \\\\ 0 ] \\quad M = \\mqty(a & (b) \\\\ c & d) \\quad \\mqty|x & y \\\\ z & w|",
     "a = b \\qif c \\qand d \\qelse e \\qcomma f \\qc g \\qq{for all} h",
     "\\op{\\psi} + \\op{a}{b} + \\matrixelement{j}{r}{i} + \\trace \\rho + \\flatfrac{\\pi}{2}",
     "\\ab[\\frac{a}{b}] + \\ab(\\int x)",
     "\\abs\\bigg{\\sum_a x} + \\abs\\Bigg{y} + \\norm[\\big]{v}",
     "\\numprint{12345} + \\numprint[m]{3} + \\parbox{3cm}{some text}"],
)  # fmt: skip
def test_physics_and_numprint_commands(converter, latex):
    result = converter.convert(latex)
    assert result.status == "ok", result.message


def test_physics_matrices_are_matrices(converter):
    mathml = converter.convert("\\mqty(a & b \\\\ c & d)").mathml
    assert "<mtable" in mathml and "(" in mathml and ")" in mathml


def test_a_side_set_prime_on_a_sum_with_limits(converter):
    """``\\sideset{}{'}\\sum_{n=0}^{\\infty}``: the prime on the sum, the limits under and over it."""
    result = converter.convert("\\Phi = k T \\sideset{}{'}\\sum_{n=0}^{\\infty} \\ln D", "equation")
    assert result.status == "ok", result.message
    assert "<munderover" in result.mathml and "′" in result.mathml


def test_a_display_held_in_a_scaled_box(converter):
    """``\\resizebox{\\textwidth}{!}{\\begin{minipage}..\\begin{align*}..}``, the box's text writing a sized brace as
    ``$\\bigg\\lbrace$`` (text mode there): the display, out of the box."""
    latex = (
        "\\resizebox{\\textwidth}{!}{ \\begin{minipage}{\\textwidth} \\begin{align*} c_1 &= C_F $\\bigg \\lbrace$ a"
        " \\\\ & b $\\bigg \\rbrace$ \\end{align*} \\end{minipage} }"
    )
    result = converter.convert(latex, "equation*")
    assert result.status == "ok", result.message
    assert "<mtable" in result.mathml


def test_siunitx_quantities_in_a_text_box(converter):
    """``\\intertext{.. a field of \\SI{4.5}{\\degree}, so $\\Omega = \\SI{2}{\\degree}$ ..}`` (round VIII's held-out
    factthesis, after its scoring): siunitx sets its quantities in text as in math; physics' ``\\qty(x)`` is not one."""
    latex = (
        "a &= b \\intertext{a field of \\SI{4.5}{\\degree}, so $\\Omega = 2\\cos{\\SI{2.25}{\\degree}}\\, \\si{sr}$"
        " and \\qty{3}{\\m} or \\num{5}} c &= d"
    )
    result = converter.convert(latex, "align*")
    assert result.status == "ok", result.message
    assert converter.convert("x = \\text{about \\SI{3}{\\GeV} or \\unit{\\meter}}").status == "ok"
