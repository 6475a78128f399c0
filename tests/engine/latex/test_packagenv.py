"""nicematrix, Young tableaux, inline code and mhchem in text mode (`engine.latex.packagenv`)."""

from __future__ import annotations

from eqsearch.engine.latex.packagenv import (
    chemistry_in_text,
    inline_code,
    rewrite_nicematrix,
    rewrite_small_matrices,
    rewrite_young_tableaux,
)


def test_nicematrix_environments_and_options():
    assert rewrite_nicematrix("\\begin{pNiceMatrix}[first-col] a \\end{pNiceMatrix}") == (
        "\\begin{pmatrix} a \\end{pmatrix}"
    )
    assert rewrite_nicematrix("\\begin{NiceArray}{c|c}[margin] a \\Iddots \\end{NiceArray}") == (
        "\\begin{array}{c|c} a \\mathinner{⋰} \\end{array}"
    )


def test_inline_code_becomes_escaped_typewriter_text():
    assert inline_code("\\mintinline{haskell}{f {x} = x_1 & ~y}") == (
        "\\texttt{f \\{x\\} = x\\_1 \\& \\textasciitilde{}y}"
    )
    assert inline_code("\\lstinline[language=C]|a^b| + \\verb!\\x!") == (
        "\\texttt{a\\textasciicircum{}b} + \\texttt{\\textbackslash{}x}"
    )
    assert inline_code("\\mintinline{haskell}") == "\\mintinline{haskell}"  # no code to read: left for KaTeX


def test_young_tableaux_rows_and_cells():
    assert rewrite_young_tableaux("\\yng(2,1)") == (
        "\\begin{array}{l}\\boxed{\\phantom{0}}\\boxed{\\phantom{0}} \\\\ \\boxed{\\phantom{0}}\\end{array}"
    )
    assert rewrite_young_tableaux("\\young(a\\alpha{bc},\\hfil)") == (
        "\\begin{array}{l}\\boxed{a}\\boxed{\\alpha}\\boxed{{bc}} \\\\ \\boxed{\\phantom{0}}\\end{array}"
    )
    assert rewrite_young_tableaux("\\yng no parenthesis") == "\\yng no parenthesis"


def test_chemistry_in_text_is_set_in_math():
    assert chemistry_in_text("\\text{a \\ce{H2O} b}") != "\\text{a \\ce{H2O} b}"
    assert chemistry_in_text("x + y") == "x + y"


def test_a_nice_matrix_and_a_tableau_convert_with_real_katex(converter):
    matrix, tableau = converter.convert_many(
        [("\\begin{bNiceMatrix} a & \\Cdots & b \\end{bNiceMatrix}", "equation"), ("\\yng(3,1)", "equation")]
    )
    assert (matrix.status, matrix.reason) == ("ok", None), matrix.message
    assert "<mtable" in matrix.mathml and "⋯" in matrix.mathml
    assert (tableau.status, tableau.reason) == ("ok", None), tableau.message
    assert tableau.mathml.count("<menclose") == 4


def test_mathtools_small_matrices_with_delimiters(converter):
    assert rewrite_small_matrices("\\begin{vsmallmatrix*}[r] a & -b \\end{vsmallmatrix*}") == (
        "\\left|\\begin{smallmatrix} a & -b \\end{smallmatrix}\\right|"
    )
    latex = (
        "A = \\begin{bsmallmatrix} 1 & 0 \\\\ 0 & 1 \\end{bsmallmatrix} + \\begin{Bsmallmatrix} x \\end{Bsmallmatrix}"
    )
    result = converter.convert(latex, "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert "[" in result.mathml and "{" in result.mathml and "<mtable" in result.mathml
