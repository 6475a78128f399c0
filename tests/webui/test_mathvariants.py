"""``mathvariant`` written as Unicode letters (`webui/mathvariants.py`): the sanitiser's use of it on KaTeX's MathML,
each style's letters, digits and Greek where the Mathematical Alphanumeric Symbols block has them, the letters that
were in Unicode before the block, and what stays as it is."""

from __future__ import annotations

from eqsearch.webui.mathvariants import styled
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
