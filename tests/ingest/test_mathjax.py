"""The macros of a page's MathJax configuration (versions 2 and 3), bad entries skipped."""

from __future__ import annotations

from eqsearch.ingest.mathjax import mathjax_macros


def test_mathjax_macros_both_versions_and_bad_input():
    script = """MathJax.Hub.Config({TeX: {Macros: {
      R: "{\\\\mathbb R}", 'Q': '\\\\mathbb{Q}',
      norm: ["\\\\left\\\\| #1 \\\\right\\\\|", 1], opt: ["#1^{#2}", 2, "x"]
    }}});
    window.MathJax = {tex: {macros: {half: "\\\\frac12"}}};
    Macros: {broken: [1, 2]} Macros: {"""
    assert [(m.name, m.body, m.nargs, m.default) for m in mathjax_macros(script)] == [
        ("\\R", "{\\mathbb R}", 0, None),
        ("\\Q", "\\mathbb{Q}", 0, None),
        ("\\norm", "\\left\\| #1 \\right\\|", 1, None),
        ("\\opt", "#1^{#2}", 2, "x"),
        ("\\half", "\\frac12", 0, None),
    ]
