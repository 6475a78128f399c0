"""Contexts with their math drawn (`eqsearch.webui.contexts`), with real KaTeX where formulas are converted."""

from __future__ import annotations

from eqsearch.engine.latex.converter import KatexConfig, KatexConverter
from eqsearch.webui.contexts import (
    ContextMath,
    aligned_fragment,
    context_snippet,
    inline_formulas,
    render_context,
    trim_cut_formulas,
)


def test_inline_math_is_found_once_without_highlight_marks():
    fragments = ["setting both $<em>b_j</em>$ and $d_j$ to zero, we get [math]", "again $d_j$ and a stray $ sign"]
    assert inline_formulas(fragments) == ["b_j", "d_j"]


def test_words_are_escaped_math_is_sanitised_and_displays_are_marked():
    mathml = {
        "b_j": '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><msub><mi>b</mi><mi>j</mi></msub>'
        "<script>alert(1)</script></math>",
        "d_j": None,
    }
    out = str(render_context("<em>setting</em> both $b_j$ and $d_j$ <b>to</b> zero, we get [math] with a<b", mathml))
    assert out.startswith("<mark>setting</mark> both ")
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline"><msub><mi>b</mi>' in out
    assert "<script" not in out and "alert" not in out
    assert '<code class="formula-source">d_j</code>' in out  # refused by KaTeX: its LaTeX, as code
    assert "&lt;b&gt;to&lt;/b&gt;" in out and "a&lt;b" in out
    assert 'class="display-marker"' in out and "[math]" not in out.replace(">[display]<", "")


def test_a_fragment_cut_inside_a_formula_drops_the_cut_formula():
    context = r"the set $y_s := \{(s, l) \in y\}$ the subset of $y$ with label $l$ and $\hat{y}_l$ too"
    fragment = r"\in y\}$ the <em>subset</em> of $y$ with label $l$ and $\hat{y"  # starts and ends inside formulas
    assert aligned_fragment(fragment, context) == " the <em>subset</em> of $y$ with label $l$ and "
    whole = "the <em>subset</em> of $y$ with"
    assert aligned_fragment(whole, context) == whole
    assert inline_formulas([aligned_fragment(fragment, context)]) == ["y", "l"]


def test_a_stored_context_that_ingest_cut_inside_a_formula_loses_the_cut_formula():
    cut_start = r"\left\{(s', l) \in y\right\}$ the subset of $y$ with label $l$ and more"
    assert trim_cut_formulas(cut_start) == " the subset of $y$ with label $l$ and more"
    cut_end = r"the subset of $y$ with label $l$ and $\hat{y}_"
    assert trim_cut_formulas(cut_end) == "the subset of $y$ with label $l$ and "
    both = r"x_{i}^{2}$ is the sum and $y$ is $\frac{a}{"
    assert trim_cut_formulas(both) == " is the sum and $y$ is "
    whole = "the word noise_level and $x$ stay"
    assert trim_cut_formulas(whole) == whole
    assert inline_formulas([context_snippet(cut_start)]) == ["y", "l"]


def test_a_snippet_never_cuts_a_formula():
    context = "words " * 30 + "$x^2 + y^2$ and more words " * 10
    cut = context_snippet(context, 185)
    assert len(cut) < 185 and cut.count("$") % 2 == 0 and not cut.endswith(" ")
    assert context_snippet("short", 240) == "short"


def test_context_math_converts_with_katex_and_remembers():
    converter = KatexConverter(KatexConfig(workers=1))
    try:
        math = ContextMath(converter, size=2)
        found = math.mathml_of(["x^2", r"\frac{a"])
        assert "<msup>" in found["x^2"] and found[r"\frac{a"] is None
        math.mathml_of(["y", "z"])
        assert list(math._known) == ["y", "z"]  # the oldest are forgotten past `size`
    finally:
        converter.close()
