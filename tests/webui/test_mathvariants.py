"""``mathvariant`` written as Unicode letters (`webui/mathvariants.py`): the sanitiser's use of it on KaTeX's MathML,
each style's letters, digits and Greek where the Mathematical Alphanumeric Symbols block has them, the letters that
were in Unicode before the block, and what stays as it is."""

from __future__ import annotations

import unicodedata

import pytest
from eqsearch.webui.mathvariants import STYLES, styled
from eqsearch.webui.sanitize import sanitize_mathml


def test_mathvariants_become_styled_letters_chromium_draws():
    mathml = (
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><mi mathvariant="double-struck">R</mi>'
        '<mi mathvariant="bold">x</mi><mi mathvariant="normal">var</mi><mi mathvariant="script">L</mi></math>'
    )
    out = str(sanitize_mathml(mathml))
    assert "<mi>ℝ</mi>" in out and "<mi>𝐱</mi>" in out and "<mi>ℒ</mi>" in out
    assert '<mi mathvariant="normal">var</mi>' in out  # MathML Core draws "normal": kept
    assert styled("h", "italic") == "ℎ" and styled("Ω9", "bold") == "𝛀𝟗" and styled("∂", "bold") == "∂"


LATIN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
GREEK = "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩαβγδεζηθικλμνξοπρστυφχψω"


@pytest.mark.parametrize("style", sorted(STYLES))
def test_every_latin_letter_becomes_an_assigned_styled_letter_of_itself(style):
    out = styled(LATIN, style)
    assert len(out) == len(LATIN)
    for letter, styled_letter in zip(LATIN, out, strict=True):
        assert styled_letter != letter, (style, letter)
        assert unicodedata.name(styled_letter)  # an assigned character, not a hole of the block
        assert unicodedata.normalize("NFKC", styled_letter) == letter, (style, letter, styled_letter)


def test_digits_and_greek_only_in_the_styles_that_have_them():
    assert styled("0189", "bold") == "𝟎𝟏𝟖𝟗" and styled("0189", "double-struck") == "𝟘𝟙𝟠𝟡"
    assert styled("x2", "italic") == "𝑥2"  # no italic digits
    for style in ("bold", "italic", "bold-italic"):
        out = styled(GREEK.replace("\u03a2", ""), style)
        assert unicodedata.normalize("NFKC", out) == GREEK.replace("\u03a2", "") and out != GREEK, style
    assert styled("α", "fraktur") == "α" and styled("α", "double-struck") == "α"


def test_the_letters_older_than_the_block_are_used_and_what_has_no_style_stays():
    assert styled("CHNPQRZ", "double-struck") == "ℂℍℕℙℚℝℤ"
    assert styled("eo", "script") == "ℯℴ" and styled("RZ", "fraktur") == "ℜℨ" and styled("h", "italic") == "ℎ"
    assert styled("x+1", "normal") == "x+1" and styled("R", "stretched") == "R"  # not a style of the block
    assert styled("∂ + é", "bold") == "∂ + é"
