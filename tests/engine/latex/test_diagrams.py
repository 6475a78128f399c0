"""Diagrams and pictures told apart from equations, and replaced inside formulas (no KaTeX needed)."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.diagrams import Picture, diagram_kind, replace_diagrams


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
    text, pictures = replace_diagrams(r"\dfrac{a}{b} \; \begin{tikzcd} {} \ar[u] \end{tikzcd}")
    assert text == r"\dfrac{a}{b} \; \text{[diagram]}" and pictures == [Picture("tikzcd", False)]


@pytest.mark.parametrize(
    ("latex", "symbol"),
    [
        (r"\left\{ \tikz{\draw (0,0) circle (1);}, b \right\}", False),  # ZX spiders inside braces: pictures
        (r"\vcenter{\hbox{\includegraphics{skein}}} = A \vcenter{\hbox{\includegraphics{b}}}", False),
        (r"\omega \mathbin{\begin{tikzpicture}\draw (0,0) -- (1,1);\end{tikzpicture}} \eta", True),
        (r"x^{\tikz \draw (0,0) circle (1pt);}", True),  # a script
        (r"A \xrightarrow[\text{b}]{\tikz \fill (0,0) circle (1pt);} B", True),  # an arrow's label
        (r"\mathbin{a} \xymatrix{A \ar[r] & B}", False),  # the class command's group is closed
    ],
)
def test_pictures_standing_as_symbols_are_told_apart(latex, symbol):
    _, pictures = replace_diagrams(latex)
    assert pictures and all(p.symbol is symbol for p in pictures)
