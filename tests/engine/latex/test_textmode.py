"""Math and text mode inside a formula (engine/latex/textmode.py); the converter tests check that KaTeX takes the
result."""

from __future__ import annotations

from eqsearch.engine.latex.textmode import dollars_in_math


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
