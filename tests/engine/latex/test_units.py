"""siunitx's unit abbreviations inside unit arguments, and its quantities (`engine.latex.units`), also through KaTeX."""

from __future__ import annotations

from eqsearch.engine.latex.macros import MacroDef
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


def test_a_documents_own_unit_before_a_token_is_not_siunitx():
    """``\\newcommand{\\unit}{\\mathbf{1}}`` (the unit type) before ``:`` or ``$``: siunitx's ``\\unit`` takes a braced
    unit, so the token after it is left alone."""
    assert clean_latex("\\unit : \\UU") == "\\unit : \\UU"
    assert clean_latex("\\text{$\\unit$-Form}") == "\\text{$\\unit$-Form}"
    assert clean_latex("\\unit{\\m\\per\\s}") == "\\unit{m\\per\\,s}"


def test_a_documents_own_unit_through_katex(converter):
    unit = MacroDef("\\unit", "\\mathbf{1}", 0, source="newcommand")
    result = converter.convert("f_\\unit(A) : A \\to \\unit \\to A", macros=[unit])
    assert result.status == "ok", result.message
    assert result.mathml.count('<mn mathvariant="bold">1</mn>') == 2, result.mathml
