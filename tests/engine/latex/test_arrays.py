"""Array column specifications and starred cases KaTeX lacks (engine/latex/arrays.py), also through KaTeX."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.arrays import rewrite_array_specs, rewrite_starred_cases


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        (  # material between columns becomes a column of its own, in every row
            r"\begin{array}{l@{{}::={}}l} e & x \\ v & \lambda x.e \end{array}",
            r"\begin{array}{lcl} e  & {}::={} &  x \\ v  & {}::={} &  \lambda x.e \end{array}",
        ),
        (r"\begin{array}{@{}l@{}} a \\ b \end{array}", r"\begin{array}{l} a \\ b \end{array}"),  # padding only
        (  # code before a column's cells, a repeated column, a rule kept
            r"\begin{array}{>{\displaystyle}c|*{2}{r}} \sum x & 1 & 2 \end{array}",
            r"\begin{array}{c|rr}\displaystyle \sum x  &  1  &  2 \end{array}",
        ),
        # a paragraph column holds text, as in LaTeX
        (r"\begin{array}{p{3cm}l} a & b \end{array}", r"\begin{array}{ll}\text{ a } &  b \end{array}"),
        (r"\begin{array}{lcr} a & b & c \end{array}", r"\begin{array}{lcr} a & b & c \end{array}"),  # untouched
    ],
)
def test_array_specs(latex: str, expected: str):
    assert rewrite_array_specs(latex) == expected


def test_nested_arrays_and_inner_groups_keep_their_cells():
    latex = r"\begin{array}{l@{:}l} \begin{array}{cc} 1 & 2 \end{array} & {a & b} \end{array}"
    assert rewrite_array_specs(latex) == (
        r"\begin{array}{lcl} \begin{array}{cc} 1 & 2 \end{array}  & : &  {a & b} \end{array}"
    )


def test_starred_cases_set_their_second_column_as_text():
    assert rewrite_starred_cases(r"\begin{dcases*} a & if $x<0$, \\ b & otherwise \end{dcases*}") == (
        r"\begin{dcases} a &\text{if $x<0$,}\\ b &\text{otherwise}\end{dcases}"
    )
    assert rewrite_starred_cases(r"\begin{cases*} > 0 \\ = 0 \end{cases*}") == r"\begin{cases} > 0 \\ = 0 \end{cases}"
    assert rewrite_starred_cases(r"\begin{cases*} a & b") == r"\begin{cases*} a & b"  # unclosed: left for KaTeX


@pytest.mark.parametrize("name", ["cases*", "dcases*", "rcases*", "drcases*"])
def test_starred_cases_through_katex(converter, name):
    """mathtools' starred cases, which KaTeX lacks (``No such environment: dcases*``), with math inside the text."""
    latex = (
        f"(\\beta \\circ_1 \\alpha) = \\begin{{{name}}} \\alpha(2x,y) & if $0 \\leq x \\leq \\frac{{1}}{{2}}$, \\\\ "
    )
    result = converter.convert(latex + f"\\beta(2x-1,y) & otherwise \\end{{{name}}}")
    assert result.status == "ok", result.message
    assert "otherwise" in result.mathml and "<mfrac>" in result.mathml


def test_siunitx_number_columns_through_katex(converter):
    """``\\begin{array}{@{}*{3}{S[round-mode=places]}@{}}``: siunitx's ``S`` columns, which KaTeX refuses
    (``Unknown column alignment: S``), as centred columns."""
    latex = r"\begin{bmatrix}\begin{array}{ @{}*{3}{S[round-mode=places, round-precision=2]} @{} }"
    result = converter.convert(latex + r" 1.25 & 0 & 3 \\ 4 & 5.5 & 6 \end{array}\end{bmatrix}")
    assert result.status == "ok", result.message
    assert "<mn>5.5</mn>" in result.mathml
