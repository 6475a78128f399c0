"""siunitx's unit abbreviations inside unit arguments, and its quantities (`engine.latex.units`)."""

from __future__ import annotations

from eqsearch.engine.latex.preprocess import clean_latex
from eqsearch.engine.latex.units import unit_rule


def test_unit_abbreviations_only_inside_unit_arguments():
    assert clean_latex("\\si{\\kg\\m\\per\\s\\squared} \\pm \\s") == "\\si{kg\\,m\\per\\,s\\squared} \\pm \\s"
    assert clean_latex("\\SI[per-mode=symbol]{3}{\\pm}") == "\\SI[per-mode=symbol]{3}{pm}"


def test_physics_qty_is_not_read_as_a_quantity():
    rule = unit_rule("qty")
    for text in ("(\\frac{a}{b})", "{x} + 1", "[a]"):
        assert rule(text, 0) == ("\\qty", 0)
    assert rule("{3}{\\nm} + 1", 0) == ("\\qty{3}{nm}", 8)


def test_prefixed_units_and_powers_convert_with_real_katex(converter):
    result = converter.convert("P = \\SI{5}{\\milli\\watt\\per\\cm\\tothe{2}}", "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert '<mi mathvariant="normal">W</mi>' in result.mathml
    assert '<msup><mi mathvariant="normal">m</mi><mn>2</mn></msup>' in result.mathml
