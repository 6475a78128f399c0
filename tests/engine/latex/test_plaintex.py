"""Plain TeX constructs rewritten as the LaTeX KaTeX has (engine/latex/plaintex.py); the converter tests check that
KaTeX takes the result."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.plaintex import dollars_in_math, rewrite_plain_tex


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


def test_dollars_written_in_math_are_text():
    """``\\text{if } $f$ \\; \\text{is ..}`` in a ``cases`` cell: TeX leaves math at the ``$`` (a cell is ``$..$``
    itself) and sets ``f`` as text; a ``$`` inside a text box and an escaped ``\\$`` stay."""
    cell = r"\frac{k-1}{2} & \text{if } $f$ \; \text{is a cusp form}"
    assert dollars_in_math(cell) == r"\frac{k-1}{2} & \text{if } \text{f} \; \text{is a cusp form}"
    assert dollars_in_math(r"a = \text{for $x$ real} + \$ 5") == r"a = \text{for $x$ real} + \$ 5"
    assert dollars_in_math("a $ b") == "a $ b"  # a lone dollar: left for KaTeX


def test_dollars_written_in_math_through_katex(converter):
    latex = r"\kappa(f) = \begin{cases} \frac{k-1}{2} & \text{if } $f$ \; \text{is holomorphic}, \\ "
    result = converter.convert(latex + r"0 & \text{if } $f$ \; \text{is a Maass form} \end{cases}")
    assert result.status == "ok", result.message
    assert result.mathml.count("<mtext>if\u00a0f</mtext>") == 2  # KaTeX joins the adjacent text, a no-break space


def test_dollars_inside_a_box_are_the_boxs_own():
    assert dollars_in_math(r"\fbox{$(A^+)^\circ$} & = p") == r"\fbox{$(A^+)^\circ$} & = p"
    assert dollars_in_math(r"\ch{Li_{$x$} C <=> C + $x$ Li^+}") == r"\ch{Li_{$x$} C <=> C + $x$ Li^+}"
