"""The templates' macros (`webui/templates/macros.html`) rendered by the app's own Jinja environment: how a formula
is shown whatever its conversion's status."""

from __future__ import annotations

import pytest

from .conftest import dead_app

MATHML = '<math xmlns="http://www.w3.org/1998/Math/MathML"><mi>x</mi></math>'


@pytest.fixture(scope="module")
def formula():
    app = dead_app()
    with app.app_context():
        macros = app.jinja_env.get_template("macros.html").module
        yield lambda *args: str(macros.formula(*args))


def test_a_diagram_is_shown_as_its_latex_and_says_it_is_a_diagram(formula):
    shown = formula(None, r"\begin{tikzcd} A \arrow[r] & B \end{tikzcd}", None, "diagram")
    assert '<code class="formula-source" title="a diagram or picture, kept as its LaTeX">' in shown
    assert "\\begin{tikzcd}" in shown and 'class="badge status-diagram"' in shown and ">diagram</span>" in shown


def test_an_approximate_formula_is_drawn_and_says_so_and_a_failed_one_is_its_latex(formula):
    approximate = formula(MATHML, "x", None, "approximate")
    assert '<span class="formula">' in approximate and 'class="badge status-approximate"' in approximate
    failed = formula(None, r"\frac{", None, "failed")
    assert "KaTeX could not draw it" in failed and 'class="badge status-failed"' in failed


def test_an_exact_formula_carries_no_badge_and_latex_is_escaped(formula):
    assert "badge" not in formula(MATHML, "x", None, "ok") and "badge" not in formula(MATHML, "x")
    assert "<script>" not in formula(None, "<script>alert(1)</script>", None, "failed")
