"""KaTeX's MathML adjusted to draw like TeX in MathML Core (`eqsearch.webui.typeset`), on KaTeX's real output."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.converter import KatexConfig, KatexConverter
from eqsearch.webui.sanitize import sanitize_mathml


@pytest.fixture(scope="module")
def typeset():
    converter = KatexConverter(KatexConfig(workers=1))
    yield lambda latex: str(sanitize_mathml(converter.convert(latex).mathml))
    converter.close()


def test_hat_is_an_accent_that_does_not_stretch_but_widehat_does(typeset):
    assert '<mover accent="true"><mi>y</mi><mo stretchy="false">^</mo></mover>' in typeset(r"\hat{y}_i")
    assert '<mo stretchy="true">^</mo>' in typeset(r"\widehat{xy}")


def test_delimiter_bars_have_no_relation_spacing_but_mid_keeps_it(typeset):
    assert typeset(r"\lvert K \rvert").count('lspace="0em" rspace="0em"') == 2
    assert 'lspace="0em"' not in typeset(r"P(A \mid B)")


def test_operator_names_get_tex_thin_spaces(typeset):
    assert '<mo rspace="0.1667em">\u2061</mo><mi>p</mi>' in typeset(r"\log p")
    assert "<mo>\u2061</mo><mo" in typeset(r"\exp(x)")  # none before a parenthesis
    assert '<mspace width="0.1667em"/><mi>exp</mi>' in typeset(r"\sigma^2 \exp(x)")


def test_primes_sit_beside_their_letter(typeset):
    out = typeset(r"x' + f''(x) + y^{\prime 2}")
    assert "<mrow><mi>x</mi><mo" in out and "<mrow><mi>f</mi><mrow><mo" in out
    assert "<msup><mi>y</mi>" in out  # a prime with an exponent stays a superscript


def test_operator_names_typed_as_letters_are_set_upright(typeset):
    assert "<mi>var</mi><mo" in typeset(r"var(X) = E[X^2]")
    assert "<mi>cov</mi>" in typeset(r"cov(x, y)")
    assert "<mi>a</mi><mi>v</mi><mi>a</mi><mi>r</mi>" in typeset("avar")  # a longer word is left alone


def test_a_match_mark_on_a_letter_marks_the_joined_name():
    mathml = "<math><mrow><mi>v</mi><mi>a</mi><mi>r</mi><mo>(</mo><mi>x</mi><mo>)</mo></mrow></math>"
    assert '<mi class="eqsearch-match">var</mi><mo>(</mo>' in str(sanitize_mathml(mathml, marked=[3]))  # the "a"
    assert "<mi>v</mi>" in str(sanitize_mathml(mathml.replace("<mo>(</mo>", "<mi>x</mi>")))  # "varx": no name


def test_left_right_fences_stretch_only_around_tall_content(typeset):
    short = typeset(r"f\left(x^2;A,B\right)")
    assert short.count('<mo fence="true" stretchy="false">') == 2
    for tall in (
        r"\left(\frac{a}{b}\right)",
        r"\left(\sum_{i=1}^n x_i\right)",
        r"\left(\begin{matrix}a\end{matrix}\right)",
    ):
        assert 'stretchy="false"' not in typeset(tall), tall
