"""Query variables (`engine/model/patterns.py`): reading them (and refusing malformed ones), the structural terms that
leave them out, and matching a pattern by unification on hand-built layout trees. (The highlights a match makes:
test_highlights.py.)"""

from __future__ import annotations

import pytest
from eqsearch.engine.model.highlights import layout_text
from eqsearch.engine.model.layout import parse_layout_latex
from eqsearch.engine.model.patterns import (
    MAX_VARIABLES,
    QueryVariableError,
    mark_variables,
    match_pattern,
    pattern_structure,
    read_query_variables,
)
from eqsearch.engine.model.structure import formula_structure

PYTHAGORAS = "?a^2 + ?b^2 = ?c^2"


def pattern_of(latex: str):
    """A query's layout tree read from its LaTeX (the placeholders as characters), variables marked."""
    pattern = read_query_variables(latex)
    return mark_variables(parse_layout_latex(pattern.fallback_latex), pattern)


def bindings(pattern: str, candidate: str) -> dict[str, str] | None:
    match = match_pattern(pattern_of(pattern), parse_layout_latex(candidate))
    if match is None:
        return None
    return {name: layout_text(list(nodes), consumed) for name, (nodes, consumed) in match.bindings.items()}


# --- reading --------------------------------------------------------------------------------------------------


def test_variables_become_placeholders_numbered_by_first_appearance():
    pattern = read_query_variables(r"?a^2 + ?b1^2 = ?a \? x")
    assert pattern.variables == ("a", "b1")
    assert pattern.katex_latex == '{\\char"E000}^2 + {\\char"E001}^2 = {\\char"E000} ? x'  # \? is a question mark
    assert pattern.fallback_latex == "{\ue000}^2 + {\ue001}^2 = {\ue000} ? x"
    assert pattern.name_of("\ue001") == "b1" and pattern.name_of("x") is None


def test_a_formula_without_variables_is_left_as_it_is():
    for latex in (r"\frac{a}{b} = c", r"\sum_k x_k = ?", r"x ? y", r"\text{why?}"):  # a question mark stays one
        pattern = read_query_variables(latex)
        assert not pattern.has_variables
        assert pattern.katex_latex == latex


@pytest.mark.parametrize(
    ("latex", "where", "why"),
    [
        ("?", "character 1", "has no name"),
        ("x + ?1x", "character 5", "starts with a digit"),
        ("??a", "character 1", "has no name"),
        ("?{a} + 1", "character 1", "has no name"),
        (r"?\alpha", "character 1", "has no name"),
        (r"x + \text{?a}", "character 11", "inside text"),
        (r"\begin{?a} x \end{?a}", "character 8", "environment's name"),
    ],
)
def test_malformed_variables_say_where_and_what_to_write(latex, where, why):
    with pytest.raises(QueryVariableError) as caught:
        read_query_variables(latex)
    assert where in caught.value.message and why in caught.value.message
    assert "?x" in (caught.value.hint or "")


def test_a_variable_in_a_command_argument_that_is_math_is_fine():
    assert read_query_variables(r"\textcolor{red}{?a} + \frac?a?b").variables == ("a", "b")
    with pytest.raises(QueryVariableError, match="one too many"):
        read_query_variables(" + ".join(f"?v{i}" for i in range(MAX_VARIABLES + 1)))


# --- structural terms ------------------------------------------------------------------------------------------


def test_terms_touching_a_variable_are_left_out():
    tokens = pattern_structure(pattern_of(r"?a^2 + 1")).tokens
    assert set(tokens) == {"N:2", "O:+", "N:1", "O:+|N:1|n", "O:+|N:*|n"}
    # nothing starts at, reaches or passes through the variable: its extent is unknown
    assert not any("\ue000" in token for token in tokens)
    spans = pattern_structure(pattern_of(r"?a^2 + 1")).spans
    assert set(formula_structure(None, "+ 1").spans) < set(spans)  # "+ 1", "+", "1", and the exponent "2" alone
    assert max(spans.values()) == 2


def test_without_variables_the_terms_are_those_of_the_index():
    for latex in (r"x^2 + y^2 = z^2", r"\sum_{i=1}^n x_i ? y"):
        pattern = read_query_variables(latex)
        layout = mark_variables(parse_layout_latex(pattern.fallback_latex), pattern)
        query, index = pattern_structure(layout), formula_structure(None, latex)
        assert (query.tokens, query.size) == (index.tokens, index.size)
        # a query also makes spans with the letters kept, for an index made before renamed spans
        assert {span: size for span, size in query.spans.items() if not span.startswith("e")} == index.spans


# --- matching --------------------------------------------------------------------------------------------------


def test_pythagoras_matches_any_letters_or_numbers():
    assert bindings(PYTHAGORAS, "x^2 + y^2 = z^2") == {"a": "x", "b": "y", "c": "z"}
    assert bindings(PYTHAGORAS, "3^2+4^2=5^2") == {"a": "3", "b": "4", "c": "5"}
    assert bindings(PYTHAGORAS, r"(a+b)^2 + c_1^2 = d^2") == {"a": "(a+b)", "b": "c_{1}", "c": "d"}
    assert bindings(PYTHAGORAS, "x^3 + y^2 = z^2") is None
    assert bindings(PYTHAGORAS, "x^2 + y^2") is None


def test_a_repeated_variable_binds_equal_subtrees_and_distinct_ones_may_too():
    assert bindings(PYTHAGORAS, "x^2 + y^2 = x^2") == {"a": "x", "b": "y", "c": "x"}  # different names, same x
    assert bindings("?a^2 + ?b^2 = ?a^2", "x^2 + y^2 = z^2") is None
    assert bindings("?a^2 + ?b^2 = ?a^2", "(x+1)^2 + y^2 = (x+1)^2") == {"a": "(x+1)", "b": "y"}
    assert bindings("?a^2 + ?b^2 = ?a^2", "(x+1)^2 + y^2 = (x+2)^2") is None


def test_the_pattern_may_match_a_sub_expression_anywhere():
    assert bindings(PYTHAGORAS, r"f\left(x^2+y^2=z^2\right)") == {"a": "x", "b": "y", "c": "z"}
    assert bindings(r"\frac{?a}{?b}", r"1 + \sqrt{\frac{x+1}{2}}") == {"a": "x+1", "b": "2"}
    assert bindings("?x + 1", "y = x_1 + 1") == {"x": "x_{1}"}  # a binding never crosses the "="


def test_attached_baselines_match_wholly_and_a_variable_may_be_one():
    assert bindings(r"\sum_{?i}^{?n} ?f", r"\sum_{k=0}^{n} k^2") == {"i": "k=0", "n": "n", "f": "k^{2}"}
    assert bindings("x^{?n}", "x^{2k}") == {"n": "2k"}
    assert bindings("x^2", "x^{2k}") is None  # no variable: the exponent must be exactly 2
    assert bindings(r"\sum_{?i=1}^{?n} ?a_{?i}^2", r"\sum_{i=1}^n x_i^2 \ge 0") == {"i": "i", "n": "n", "a": "x"}
    assert bindings(r"\sum_{?i=1}^{?n} ?a_{?i}^2", r"\sum_{i=1}^n x_j^2") is None


def test_bindings_keep_their_brackets_balanced():
    assert bindings("?a + ?b", "f(x + y)") == {"a": "x", "b": "y"}  # not "y)"
    assert bindings("?a + ?b", "(x + y) + z") == {"a": "(x + y)".replace(" ", ""), "b": "z"}


def test_a_variable_with_scripts_binds_one_symbol_or_one_bracketed_group():
    assert bindings("?a^2 = 1", "1 + x^2 = 1") == {"a": "x"}
    assert bindings("?a^2", "(a+b)(c+d)^2") == {"a": "(c+d)"}
    assert bindings(r"\sin^2 ?x", r"\sin^2 x") == {"x": "x"}


def test_the_work_per_candidate_is_bounded():
    pattern = pattern_of(" ".join(f"?v{i}" for i in range(12)) + " = 0")
    candidate = parse_layout_latex(" + ".join("x" for _ in range(60)) + " = 1")
    assert match_pattern(pattern, candidate, max_steps=1_000) is None  # gives up instead of searching 10^14 ways
