"""Array column specifications KaTeX lacks (engine/latex/arrays.py); the converter tests check KaTeX takes them."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.arrays import rewrite_array_specs


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
