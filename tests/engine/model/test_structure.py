"""The structural terms of formulas: what the tokens and spans are, and the normalisations that make the same
formula typed two ways look alike (KaTeX runs for real where MathML is needed)."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model.layout import parse_layout, parse_layout_latex
from eqsearch.engine.model.structure import FormulaStructure, formula_structure, structure_of_layout

MSUP = "<math><msup><mi>x</mi><mn>2</mn></msup></math>"


def test_a_superscript_gives_symbols_pairs_and_generalised_pairs():
    structure = formula_structure(MSUP)
    assert structure.tokens == ("V:x", "N:2", "V:x|N:2|sup", "V:*|N:*|sup")
    assert structure.text == "V:x N:2 V:x|N:2|sup V:*|N:*|sup"
    assert structure.size == 2
    assert sorted(span[0] for span in structure.spans) == ["g", "g", "r", "r"]  # x^2 and 2; generalised alike
    assert max(structure.spans.values()) == 2  # the whole formula is the largest span


def test_pairs_follow_paths_of_up_to_three_relations():
    tokens = set(formula_structure(None, r"a + \frac{b}{c}").tokens)
    assert {"V:a|O:+|n", "O:+|S:frac|n", "S:frac|V:b|num", "V:a|S:frac|n.n", "O:+|V:b|n.num"} <= tokens
    assert "V:a|V:b|n.n.num" in tokens  # three steps
    deep = set(formula_structure(None, r"a + b + c + d").tokens)
    assert "V:a|V:c|n.n.n.n" not in deep and "V:a|O:+|n.n.n" in deep  # four steps is too far


def test_the_same_formula_from_mathml_and_from_latex_has_the_same_terms():
    with KatexConverter() as converter:
        for latex in (r"x^2 + \frac{a}{b}", r"\sum_{k=0}^{n} k", r"\sqrt{\alpha_1} = 3"):
            mathml = converter.convert(latex, "equation", ()).mathml
            assert mathml is not None
            assert formula_structure(mathml).tokens == formula_structure(None, latex).tokens, latex


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (r"\binom{n}{k}", r"\left( \frac{n}{k} \right)"),  # a binomial is a fraction in parentheses
        (r"\sin x", r"sin x"),  # a function name typed without its backslash
        (r"\dfrac{1}{2}", r"\frac{1}{2}"),  # display sizes
        (r"\int_0^1 f(x)\, dx", r"∫_0^1 f(x) 𝑑x"),  # Unicode compatibility forms, spacing
        (r"\mathbb{R}", r"ℝ"),
    ],
)
def test_two_spellings_of_one_formula_give_the_same_terms(one, other):
    with KatexConverter() as converter:
        first, second = (converter.convert(latex, "equation", ()).mathml for latex in (one, other))
    assert first is not None and second is not None
    assert formula_structure(first).tokens == formula_structure(second).tokens


def test_broken_latex_still_has_a_structure_and_never_raises():
    for latex in (r"\frac{1}{", r"x^{^}", "}}{{", "", r"\left& a \right;", "a_" * 50):
        structure = formula_structure(None, latex)
        assert isinstance(structure, FormulaStructure)
    assert formula_structure(None, r"\frac{1}{").text == "S:frac N:1 S:frac|N:1|num S:frac|N:*|num"
    assert formula_structure(None, "").tokens == ()


def test_malformed_mathml_falls_back_on_the_latex():
    assert formula_structure("<math><mi>x</math>", "y").tokens == ("V:y",)
    with pytest.raises(ValueError, match="not well-formed"):
        parse_layout("<math><mi>x</math>")


def test_long_symbols_are_cut_so_that_the_index_keeps_them_whole():
    structure = formula_structure(None, r"\text{" + "w" * 300 + "}")
    assert all(len(token) < 255 for token in structure.tokens)


def test_spans_are_contiguous_runs_with_everything_attached():
    small = structure_of_layout(parse_layout_latex("a+b"), span_kinds=("e", "r", "g"))
    exact = {s for s in small.spans if s.startswith("e")}
    renamed = {s for s in small.spans if s.startswith("r")}
    general = {s for s in small.spans if s.startswith("g")}
    assert len(exact) == 6  # a, +, b, a+, +b, a+b
    assert len(renamed) == 5  # a and b both the first variable of their own run: two of them alike
    assert len(general) == 5  # the same with a and b both a variable: two of them alike
    other = structure_of_layout(parse_layout_latex("x+y"), span_kinds=("e", "r", "g")).spans
    assert general <= set(other) and renamed <= set(other)  # x+y is a+b in other letters
    assert exact & set(other) == {s for s in exact if small.spans[s] == 1 and s in other}  # only "+" in common
    assert len(exact & set(other)) == 1
    capped = structure_of_layout(parse_layout_latex("a+b+c+d"), span_lengths=(1, 2))
    assert max(capped.spans.values()) == 2


def test_span_lengths_climb_a_ladder_so_a_long_match_is_credited_whole():
    from eqsearch.engine.model.structure import SPAN_LENGTHS

    # 12 baseline symbols: a run of 12 is on the ladder, so the whole formula is one span, matched in other letters
    query = structure_of_layout(parse_layout_latex("2a^2+b^2+c^2+d^2=e^2+f^2"))
    other = structure_of_layout(parse_layout_latex("2p^2+q^2+r^2+s^2=t^2+u^2"))
    assert 12 in SPAN_LENGTHS and 13 not in SPAN_LENGTHS
    shared = set(query.spans) & set(other.spans)
    assert max(query.spans[s] for s in shared if s.startswith("r")) == query.size == 18
    # a run of 7 symbols is not hashed (between 6 and 8 on the ladder): the runs of 6 in a+b+c+d are
    seven = structure_of_layout(parse_layout_latex("a+b+c+d"))
    assert 7 not in SPAN_LENGTHS and max(seven.spans.values()) == 6


def test_renamed_spans_match_the_same_expression_in_other_letters_only_when_consistent():
    from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, SPAN_KINDS, renamed_variables

    assert renamed_variables("V:y O:+ V:x{sup:V:y}") == "V:#0 O:+ V:#1{sup:V:#0}"

    def largest(a: str, b: str, kind: str) -> int:
        one = structure_of_layout(parse_layout_latex(a), span_kinds=QUERY_SPAN_KINDS).spans
        two = formula_structure(None, b).spans
        return max((size for span, size in one.items() if span[0] == kind and span in two), default=0)

    assert largest("a^2 + b^2 = c^2", "x^2 + y^2 = z^2", "r") == 8  # the whole formula
    assert largest("a^2 + b^2 = c^2", "x^2 + x^2 = z^2", "r") < 8  # a and b are two, not one
    assert largest("a^2 + b^2 = c^2", "x^2 + y^2 = z^2", "e") == 0  # an index holds no spans with letters kept
    assert {span[0] for span in formula_structure(None, "x + 1").spans} == set(SPAN_KINDS)
