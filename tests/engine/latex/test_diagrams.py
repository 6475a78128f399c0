"""Diagrams and pictures told apart from equations, and replaced inside formulas (no KaTeX needed)."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.diagrams import diagram_kind, replace_diagrams


@pytest.mark.parametrize(
    ("latex", "kind"),
    [
        (r"\begin{tikzcd} A \arrow[r] & B \end{tikzcd}", "tikzcd"),
        (r"\begin{tikzpicture}\draw (0,0) -- (1,1);\end{tikzpicture}", "tikzpicture"),
        (r"\xymatrix{A \ar[r] & B}", "xymatrix"),
        (r"\begin{CD} A @>>> B \end{CD}", None),  # amscd: KaTeX draws it
        (r"a + b", None),
    ],
)
def test_diagram_kind(latex, kind):
    assert diagram_kind(latex) == kind


def test_diagrams_inside_a_formula_become_placeholders():
    text, kinds = replace_diagrams(r"\dfrac{a}{b} \; \begin{tikzcd} {} \ar[u] \end{tikzcd}")
    assert text == r"\dfrac{a}{b} \; \text{[diagram]}" and kinds == ["tikzcd"]
