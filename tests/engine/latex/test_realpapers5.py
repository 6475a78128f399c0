"""Constructs of the fifth set of unseen real papers (benchmarks/history/ingest.md, "Real arXiv papers V"), through the
real KaTeX: semantic brackets after ``\\left``/``\\right`` and the ``\\big`` family, amsmath's root-index placement, and
cancel's ``\\CancelColor`` redefined in a macro."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        # stmaryrd's brackets sized by \left/\right: KaTeX 0.19 rejects them as delimiters ("Invalid delimiter type")
        ("\\left\\llbracket \\frac{a}{b} \\right\\rrbracket = c", ("⟦</mo>", "⟧</mo>", "<mfrac>")),
        # unicode-math's names, a pair mixed with an ordinary delimiter, and \middle
        ("\\left\\lBrack x \\middle\\llbracket y \\right)", ("⟦</mo>", ")</mo>")),
        ("\\bigl\\lBrack f \\bigr\\rBrack + \\Bigl\\lBrace g \\Bigr\\rBrace", ("⟦</mo>", "⟧</mo>", "⦃</mo>")),
        # the characters themselves after \left/\right
        ("\\left\u27e6 x \\right\u27e7", ("⟦</mo>", "⟧</mo>")),
        # amsmath's placement of a root's index: dropped, the root and its index stay
        ("\\sqrt[\\leftroot{-2}\\uproot{2} n]{x} + \\sqrt[\\uproot3 3]{y}", ("<mroot>", "<mi>n</mi>", "<mn>3</mn>")),
        # cancel's colour redefined inside a display: a no-op, the strike stays
        ("\\renewcommand\\CancelColor{\\color{red}} \\cancel{x} + y", ("updiagonalstrike", "<mi>y</mi>")),
    ],
)
def test_round_five_constructs_convert_exactly(converter, latex, expected):
    result = converter.convert(latex, "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    for part in expected:
        assert part in result.mathml, (part, result.mathml)


def test_macros_with_cancel_colour_and_semantic_brackets(converter):
    # schuller's coloured cancel and a semantic-bracket macro, as the paper's preamble defines them
    ccancel = MacroDef("\\Ccancel", "\\renewcommand\\CancelColor{\\color{#1}}\\cancel{#2}", 2, "black", "newcommand")
    sem = MacroDef("\\sem", "\\left\\llbracket #1 \\right\\rrbracket", 1, None, "newcommand")
    result = converter.convert("\\Ccancel[red]{a} b = \\sem{\\frac{p}{q}}", "equation", macros=[ccancel, sem])
    assert (result.status, result.reason) == ("ok", None), result.message
    assert "updiagonalstrike" in result.mathml and "⟦</mo>" in result.mathml
