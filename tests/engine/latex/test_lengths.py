"""Lengths TeX reads and KaTeX refuses, written as lengths KaTeX reads (`engine.latex.lengths`)."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.lengths import katex_lengths, register_spacing


@pytest.mark.parametrize(
    "space",
    ["\\hspace{0.05\\textwidth}", "\\hspace{.2\\linewidth}", "\\hspace*{0.1\\columnwidth}", "\\hspace{\\hsize}",
     "\\hspace{,5cm}", "\\hspace{-0,3em}", "\\kern 1,5mm", "\\rule{0.3\\linewidth}{0,4pt}", "\\hspace{0.5\\textwidth}"],
)  # fmt: skip
def test_lengths_relative_to_the_page_or_with_a_comma(converter, space):
    """A thesis's ``&\\hspace{0.05\\textwidth} = ...`` rows, and ``\\hspace{,5cm}`` (TeX reads the comma as a point)."""
    result = converter.convert(f"a {space} b \\\\ c", "align*")
    assert result.status == "ok", result.message
    assert "<mspace" in result.mathml or "<mpadded" in result.mathml or "<mrow" in result.mathml


def test_lengths_are_rewritten_only_where_a_dimension_stands():
    assert katex_lengths("f(1,5cm) \\hspace{2,5cm}") == "f(1,5cm) \\hspace{2.5cm}"
    assert katex_lengths("\\hspace{0.05\\textwidth}") == "\\hspace{17.25pt}"
    assert katex_lengths("\\vspace{-\\textheight}") == "\\vspace{-550pt}"


def test_multiples_of_spacing_registers_become_mu():
    assert register_spacing("a\\mskip.3\\thinmuskip b") == "a\\mskip0.9mu  b"
    assert register_spacing("\\kern-2\\thickmuskip") == "\\mkern-10mu "
    assert register_spacing("\\mskip\\medmuskip") == "\\mskip4mu "
    assert register_spacing("\\thinmuskip") == "\\thinmuskip"  # not after a spacing command: left as it is


def test_a_register_multiple_converts_with_real_katex(converter):
    result = converter.convert("a \\mskip 2\\thinmuskip b", "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert "<mspace" in result.mathml
