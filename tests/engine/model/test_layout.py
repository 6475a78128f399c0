"""The symbol layout tree (`engine/model/layout.py`): read from MathML (labels, relations, the normalisations that make
one formula typed two ways alike, the elements each node came from) or from LaTeX, and the walks over it (pre-order
nodes and baselines, sizes, canonical strings). MathML is written by hand here, or by KaTeX run for real."""

from __future__ import annotations

import pytest
from eqsearch.engine.model.layout import (
    MAX_LABEL,
    CanonicalText,
    LayoutNode,
    canonical,
    generalised_label,
    layout_baselines,
    layout_nodes,
    layout_size,
    mathml_elements,
    parse_layout,
    parse_layout_latex,
)
from eqsearch.engine.model.structure import formula_structure
from lxml import etree

from .conftest import elements_text


def test_layout_nodes_remember_their_elements_only_when_asked(katex):
    mathml = katex.convert(r"\frac{a}{b} + \sin x").mathml
    plain, placed = parse_layout(mathml), parse_layout(mathml, positions=True)
    assert plain == placed and all(not node.elements for node in plain)
    assert [elements_text(mathml, node.elements) for node in placed[1:]] == ["+", "sin", "x"]
    assert formula_structure(mathml) == formula_structure(mathml)  # the index's terms do not depend on it


M = '<math xmlns="http://www.w3.org/1998/Math/MathML">'


def labels(mathml_body: str) -> list[str]:
    return [canonical(node) for node in parse_layout(M + mathml_body + "</math>")]


def test_symbols_get_their_kind_and_scripts_hang_on_them_by_relation():
    assert labels("<msubsup><mi>x</mi><mi>i</mi><mn>2</mn></msubsup><mo>=</mo><mn>1</mn>") == [
        "V:x{sub:V:i,sup:N:2}", "O:=", "N:1",
    ]  # fmt: skip
    assert labels("<munderover><mo>∑</mo><mi>k</mi><mi>n</mi></munderover><mi>k</mi>") == [
        "O:∑{sub:V:k,sup:V:n}",
        "V:k",
    ]
    assert labels("<mfrac><mi>a</mi><mi>b</mi></mfrac>") == ["S:frac{den:V:b,num:V:a}"]
    assert labels("<msqrt><mi>x</mi></msqrt>") == ["S:sqrt{in:V:x}"]
    assert labels("<mtext>" + "w" * 100 + "</mtext>") == ["T:" + "w" * MAX_LABEL]  # cut: the index keeps it whole


def test_one_formula_typed_two_ways_reads_alike():
    # invisible operators dropped, single letters that spell a function name merged
    assert labels("<mi>s</mi><mi>i</mi><mi>n</mi><mo>&#x2061;</mo><mi>x</mi>") == ["F:sin", "V:x"]
    assert labels("<mi>sin</mi><mi>x</mi>") == ["F:sin", "V:x"]
    assert labels("<mi>𝑑</mi><mi>ℝ</mi><mo>−</mo><mn>2</mn>") == ["V:d", "V:R", "O:-", "N:2"]  # compatibility forms
    assert labels("<mi>x</mi><mo>&#x2062;</mo><mi>y</mi>") == ["V:x", "V:y"]
    binomial = '<mrow><mo fence="true">(</mo><mfrac linethickness="0"><mi>n</mi><mi>k</mi></mfrac><mo>)</mo></mrow>'
    assert labels(binomial) == labels("<mo>(</mo><mfrac><mi>n</mi><mi>k</mi></mfrac><mo>)</mo>")
    semantics = '<semantics><mrow><mi>x</mi></mrow><annotation encoding="application/x-tex">x</annotation></semantics>'
    assert labels(semantics) == ["V:x"]  # the annotation is not part of the formula


def test_malformed_mathml_is_a_value_error_and_comments_are_not_elements():
    with pytest.raises(ValueError, match="not well-formed MathML"):
        parse_layout("<math><mi>x</mi>")
    root = etree.fromstring(f"{M}<!-- a note --><mi>x</mi><mo>+</mo></math>".encode())
    assert [etree.QName(e).localname for e in mathml_elements(root)] == ["math", "mi", "mo"]
    placed = parse_layout(f"{M}<!-- a note --><mi>x</mi><mo>+</mo></math>", positions=True)
    assert [node.elements for node in placed] == [(1,), (2,)]  # numbered like mathml_elements


def test_latex_gives_the_labels_mathml_gives_for_common_formulas(katex):
    for latex in (r"x_i^2 = 1", r"\frac{a}{b} + \sin x", r"\sum_{k=0}^{n} k", r"\alpha \le 2.5"):
        assert parse_layout_latex(latex) == parse_layout(katex.convert(latex).mathml), latex
    assert all(not node.elements for node in layout_nodes(parse_layout_latex("x + 1")))
    assert parse_layout_latex(r"\frac{1}{") == [LayoutNode("S:frac", {"num": [LayoutNode("N:1")], "den": []})]


def test_walks_visit_every_node_and_baseline_in_pre_order():
    tree = parse_layout_latex(r"\frac{a}{b^2} + c_1")
    assert [node.label for node in layout_nodes(tree)] == ["S:frac", "V:a", "V:b", "N:2", "O:+", "V:c", "N:1"]
    baselines = [[node.label for node in line] for line in layout_baselines(tree)]
    assert baselines == [["S:frac", "O:+", "V:c"], ["V:a"], ["V:b"], ["N:2"], ["N:1"]]
    assert layout_size(tree) == 7 and layout_size([]) == 0


def test_canonical_strings_are_equal_for_equal_subtrees_and_generalise_letters_and_numbers():
    assert [generalised_label(label) for label in ("V:x", "N:2.5", "O:+", "F:sin")] == ["V:*", "N:*", "O:+", "F:sin"]
    one, other = parse_layout_latex(r"\frac{a}{b^2}")[0], parse_layout_latex(r"\frac{x}{y^3}")[0]
    assert canonical(one) == "S:frac{den:V:b{sup:N:2},num:V:a}" != canonical(other)
    assert canonical(one, general=True) == canonical(other, general=True) == "S:frac{den:V:*{sup:N:*},num:V:*}"
    for general in (False, True):
        memo = CanonicalText(general)
        for node in layout_nodes(parse_layout_latex(r"\frac{a}{b^2} + \sqrt{c_1}")):
            assert memo(node) == canonical(node, general=general)
