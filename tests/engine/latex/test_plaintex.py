"""Plain TeX constructs rewritten as the LaTeX KaTeX has (engine/latex/plaintex.py); the converter tests check that
KaTeX takes the result."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.plaintex import rewrite_plain_tex


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        (r"\root 3 \of x + \root n+1 \of {y^2}", r"\sqrt[3]{x} + \sqrt[n+1]{y^2}"),
        (r"a \buildrel \rm def \over = b", r"a \overset{\rm def}{=} b"),
        (r"{n \overwithdelims() k}", r"{\genfrac{(}{)}{}{}{n }{ k}}"),
        (r"x^{a \atopwithdelims [ ] b} + 1", r"x^{\genfrac{[}{]}{0pt}{}{a }{ b}} + 1"),
        (r"{a \abovewithdelims \{ . 2pt b}", r"{\genfrac{\{}{}{2pt}{}{a }{ b}}"),
        (r"\cases{a & b \cr c & d}", r"\begin{cases}a & b \\ c & d\end{cases}"),
        (r"\cases{x & if $x>0$ \cr 0 & }", r"\begin{cases}x &\text{if $x>0$} \\ 0 &\end{cases}"),
        (r"\eqalign{a &= b \cr}", r"\begin{aligned}a &= b \\\end{aligned}"),
        (r"\eqalignno{a &= b & (1) \cr}", r"\begin{aligned}a &= b \\\end{aligned}"),
        (r"\displaylines{a \cr b}", r"\begin{gathered}a \\ b\end{gathered}"),
        (r"\bordermatrix{ & x \cr y & 1}", r"\begin{pmatrix} & x \\ y & 1\end{pmatrix}"),
        (r"{a \over b} + {n \choose k}", r"{a \over b} + {n \choose k}"),  # KaTeX's own: untouched
    ],
)
def test_plain_tex_constructs(latex: str, expected: str):
    assert rewrite_plain_tex(latex) == expected


def test_nested_delimited_fractions_are_rewritten_innermost_first():
    assert rewrite_plain_tex(r"{{a \overwithdelims() b} \overwithdelims[] c}") == (
        r"{\genfrac{[}{]}{}{}{{\genfrac{(}{)}{}{}{a }{ b}} }{ c}}"
    )
