"""Diagrams and pictures told apart from equations, and replaced inside formulas; an overlay through KaTeX."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.diagrams import Picture, diagram_kind, drop_overlays, replace_diagrams
from eqsearch.engine.latex.macros import MacroDef


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


def test_overlay_pictures_are_no_diagram():
    """A TikZ overlay (a margin note a macro puts beside a display) takes no room: the formula is read without it;
    an overlay ``\\tikz`` goes with its braced picture or its path up to ``;``."""
    note = r"\begin{tikzpicture}[remember picture,overlay] \node at (0,0) {\begin{oddnote}Euler\end{oddnote}};"
    latex = note + r"\end{tikzpicture} \nabla P = -i\omega\rho V"
    assert diagram_kind(latex) is None
    assert replace_diagrams(latex) == (r" \nabla P = -i\omega\rho V", [])
    assert drop_overlays(r"a \tikz[overlay] \draw (0,0) -- (1,1); = b \tikz[overlay]{\node{x};} + c") == "a  = b  + c"
    drawn = r"\begin{tikzpicture}[scale=2] \draw (0,0) -- (1,1); \end{tikzpicture}"
    assert diagram_kind(drawn) == "tikzpicture"  # a picture drawn in place is still a diagram
    assert drop_overlays(drawn) == drawn


def test_a_display_with_an_overlay_note_converts_as_an_equation(converter):
    """A thesis's ``\\SideNote{#2}``: a ``remember picture,overlay`` picture beside each display, through the real
    KaTeX: the equation, not a diagram."""
    side_note = MacroDef(
        "\\SideNote",
        "\\begin{tikzpicture}[remember picture,overlay]\\node at (0,0) {\\textit{#2}};\\end{tikzpicture}",
        2,
        "",
        source="newcommand",
    )
    result = converter.convert("\\SideNote{Euler equation} \\nabla P = -i \\omega \\rho_0 V", macros=[side_note])
    assert result.status == "ok", result.message
    assert "ω" in result.mathml and "Euler" not in result.mathml
