"""Which parts of a hit's formula matched a query (`engine/model/highlights.py`): a pattern's match and its variables'
bindings, the largest sub-expression shared with a query without variables (exact before generalised, of two symbols
at least), one query's sub-expressions reused for many hits, and bindings written back as LaTeX-like text. KaTeX
runs for real where MathML is needed."""

from __future__ import annotations

import pytest
from eqsearch.engine.model.highlights import (
    SharedSubexpressions,
    layout_text,
    pattern_highlight,
    shared_subexpression,
)
from eqsearch.engine.model.layout import parse_layout, parse_layout_latex
from eqsearch.engine.model.patterns import mark_variables, match_pattern, read_query_variables, variables_as_letters

from .conftest import elements_text

PYTHAGORAS = "?a^2 + ?b^2 = ?c^2"


def test_a_pattern_highlight_points_at_the_matched_elements(katex):
    pattern = read_query_variables(PYTHAGORAS)
    query_mathml = katex.convert(pattern.katex_latex).mathml
    layout = mark_variables(parse_layout(query_mathml), pattern)
    assert variables_as_letters(query_mathml, pattern).count("<mi>a</mi>") == 1  # what the embedding reads
    mathml = katex.convert(r"1 + x^2 + y^2 = z^2").mathml
    match = match_pattern(layout, parse_layout(mathml, positions=True))
    assert match is not None
    highlight = pattern_highlight(match)
    assert highlight.kind == "pattern"
    assert elements_text(mathml, highlight.nodes) == "x2+y2=z2"  # the "1 +" before it is not part of the match
    assert {name: b.text for name, b in highlight.bindings.items()} == {"?a": "x", "?b": "y", "?c": "z"}
    assert elements_text(mathml, highlight.bindings["?b"].nodes) == "y"


def test_without_variables_the_largest_shared_sub_expression_is_highlighted(katex):
    query = parse_layout(katex.convert(r"x^2 + y^2").mathml)
    mathml = katex.convert(r"a = x^2 + y^2 + 1").mathml
    highlight = shared_subexpression(query, parse_layout(mathml, positions=True))
    assert highlight is not None and highlight.kind == "shared" and not highlight.bindings
    assert elements_text(mathml, highlight.nodes) == "x2+y2"
    general = shared_subexpression(query, parse_layout(katex.convert(r"u^2 + v^2").mathml, positions=True))
    assert general is not None and len(general.nodes) == 5  # the same shape in other letters
    assert shared_subexpression(query, parse_layout(katex.convert(r"\frac{1}{2}").mathml, positions=True)) is None


def test_an_exact_shared_run_wins_over_a_generalised_one_of_the_same_size(katex):
    query = parse_layout(katex.convert("a + b").mathml)
    mathml = katex.convert("x + y + a + b").mathml  # "x + y" is "a + b" in other letters, met first
    highlight = shared_subexpression(query, parse_layout(mathml, positions=True))
    assert highlight is not None and elements_text(mathml, highlight.nodes) == "a+b"


def test_a_larger_generalised_run_wins_over_a_smaller_exact_one(katex):
    query = parse_layout(katex.convert("a + b = c").mathml)
    mathml = katex.convert("x + y = c").mathml  # exact: "= c" alone; generalised: the whole formula
    highlight = shared_subexpression(query, parse_layout(mathml, positions=True))
    assert highlight is not None and elements_text(mathml, highlight.nodes) == "x+y=c"


def test_one_querys_subexpressions_highlight_many_hits_as_the_function_does(katex):
    query = parse_layout(katex.convert("a + b = c").mathml)
    shared = SharedSubexpressions(query)
    for latex in ("x + y = z", "1 + a + b = c", r"\frac{a + b}{2} = c", "u"):
        hit = parse_layout(katex.convert(latex).mathml, positions=True)
        assert shared.highlight(hit) == shared_subexpression(query, hit), latex
    assert shared.highlight(parse_layout(katex.convert("u").mathml, positions=True)) is None  # one symbol: too small


def test_runs_are_cut_at_max_run_and_a_tree_without_positions_marks_nothing(katex):
    query = parse_layout(katex.convert("a + b = c").mathml)
    mathml = katex.convert("x + y = z").mathml
    highlight = shared_subexpression(query, parse_layout(mathml, positions=True), max_run=2)
    assert highlight is not None and elements_text(mathml, highlight.nodes) == "x+"
    assert shared_subexpression(query, parse_layout_latex("a + b = c")) is None  # read from LaTeX: no elements
    single = parse_layout(katex.convert("x").mathml)  # a query of one symbol may share that one symbol
    one = shared_subexpression(single, parse_layout(katex.convert("x + 1").mathml, positions=True))
    assert one is not None and len(one.nodes) == 1


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        (r"\frac{a+1}{b}", r"\frac{a+1}{b}"),
        (r"\sqrt{x}", r"\sqrt{x}"),
        ("x_i^2", "x_{i}^{2}"),
        (r"\sin x", r"\sin x"),
        (r"\cos\theta", r"\cos θ"),
        (r"\alpha + 1", "α+1"),
        ("f(x)", "f(x)"),
    ],
)
def test_bindings_are_written_back_as_latex_like_text(latex, text):
    assert layout_text(parse_layout_latex(latex)) == text


def test_the_relations_a_variable_consumed_are_left_out_of_its_last_symbol(katex):
    assert layout_text(parse_layout_latex("x_i^2"), frozenset({"sup"})) == "x_{i}"
    assert layout_text(parse_layout_latex("x^2 + y^2"), frozenset({"sup"})) == "x^{2}+y"  # the last symbol only
    root = parse_layout(katex.convert(r"\sqrt[3]{x}").mathml)
    assert layout_text(root) == r"\sqrt[3]{x}"
    assert layout_text([]) == ""
