"""How much of an approximate display survived (`engine.latex.outcome`)."""

from __future__ import annotations

from eqsearch.engine.latex.outcome import PLACEHOLDER_TEXT, kept_symbols, survival, unknown_text

_MATHML = (
    "<math><mrow><mi>x</mi><mo>+</mo><mtext>foo</mtext><mo>\u2062</mo><mtext> </mtext>"
    "<mn>2</mn><mtext>[diagram]</mtext></mrow></math>"
)


def test_unknown_text_is_the_name_without_the_backslash_and_odd_characters():
    assert unknown_text("\\foo") == "foo"
    assert unknown_text("\\my@cmd*") == "my@cmd"
    assert unknown_text("\\{") == "?"


def test_stand_ins_are_counted_lost_and_spacing_left_out():
    assert kept_symbols(_MATHML, ()) == (5, 5)
    assert kept_symbols(_MATHML, {"foo"}) == (4, 5)
    assert kept_symbols(_MATHML, {"foo", PLACEHOLDER_TEXT}) == (3, 5)
    assert kept_symbols("<math><mi>foo</mi></math>", {"foo"}) == (1, 1)  # only text stands in


def test_survival_says_what_share_was_kept():
    assert survival(_MATHML, unknown=["\\foo"], placeholders=1) == "3 of 5 symbols kept (60%)"
    assert survival(_MATHML) == "5 of 5 symbols kept (100%)"
    assert survival("<math></math>") == "0 of 0 symbols kept (100%)"


def test_an_unknown_command_is_counted_through_real_katex(converter):
    result = converter.convert("a + \\nosuchcommandhere + b", "equation")
    assert result.status == "approximate", result.message
    assert result.message.endswith(survival(result.mathml, unknown=["\\nosuchcommandhere"]))
    assert "4 of 5 symbols kept (80%)" in result.message
