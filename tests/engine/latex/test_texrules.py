"""Plain TeX's registers, boxes and alignments inside a formula (`engine.latex.texrules`), through the real KaTeX."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.preprocess import clean_latex
from eqsearch.engine.latex.texrules import (
    assignment,
    discretionary,
    mapsto_char,
    mathchoice_rule,
    multlined,
    noalign,
    raisebox,
    row_gaps,
    sets_before_tabs,
    skip_glue,
)


def _at(command: str, rest: str) -> tuple[str, int]:
    return command + rest, len(command)


def test_registers_and_skips_are_dropped_with_their_glue():
    assert skip_glue(*_at("\\vskip", " 2pt plus 1fil x")) == ("", len("\\vskip 2pt plus 1fil"))
    assert assignment(*_at("\\baselineskip", "0.5ex x")) == ("", len("\\baselineskip0.5ex"))
    assert assignment(*_at("\\baselineskip", " x")) == ("\\baselineskip", len("\\baselineskip"))


def test_box_shifts_rows_and_arrows():
    assert raisebox(*_at("\\raisebox", "{.2\\height}{x}")) == ("\\raisebox{0.2em}", len("\\raisebox{.2\\height}"))
    assert raisebox(*_at("\\raisebox", "{2pt}{x}")) == ("\\raisebox", len("\\raisebox"))
    assert noalign(*_at("\\noalign", "{\\hrule} a")) == ("\\hline ", len("\\noalign{\\hrule}"))
    assert noalign(*_at("\\noalign", "{\\smallskip} a")) == ("", len("\\noalign{\\smallskip}"))
    assert mapsto_char(*_at("\\mapstochar", "\\rightarrow x")) == ("\\mapsto", len("\\mapstochar\\rightarrow"))
    assert mapsto_char(*_at("\\mapstochar", " x")) == ("\\mathrel{\\shortmid}", len("\\mapstochar"))
    rule = mathchoice_rule(str.strip)
    assert rule(*_at("\\mathchoice", " {a} {b} { c} {d}")) == ("\\mathchoice{a}{b}{c}{d}", 28)


def test_whole_display_rules():
    assert row_gaps("a \\\\[\\medskipamount] b \\\\[2\\jot] c") == "a \\\\[6pt] b \\\\[6pt] c"
    assert multlined("\\begin{multlined}[t][5cm] a \\end{multlined}") == "\\begin{gathered} a \\end{gathered}"
    assert sets_before_tabs("x \\overset{(a)}&= y") == "x &\\overset{(a)}{=} y"
    assert sets_before_tabs("\\overset{a}{b}") == "\\overset{a}{b}"


@pytest.mark.parametrize(
    ("latex", "environment", "expected"),
    [
        ("x \\overset{(a)}&{=} y \\\\[\\smallskipamount] &\\le z", "align*", "<mover>"),
        ("\\begin{multlined} a + b \\\\ c \\end{multlined}", "equation", "<mtable"),
        ("f \\colon A \\mapstochar\\rightarrow B", "equation", "↦"),
        ("\\begin{array}{c} a \\\\ \\noalign{\\hrule} b \\end{array}", "equation", "<mtable"),
    ],
)
def test_plain_tex_constructs_convert_with_real_katex(converter, latex, environment, expected):
    result = converter.convert(latex, environment)
    assert (result.status, result.reason) == ("ok", None), result.message
    assert expected in result.mathml


def test_a_discretionary_is_set_unbroken():
    """``\\discretionary{pre}{post}{whole}``: a display never breaks, so TeX sets ``whole``; ``\\mathsurround=0pt``
    is dropped with its value. Through KaTeX: a macro that repeats an operator after a line break sets it once."""
    assert discretionary(*_at("\\discretionary", "{}{\\hbox{$+$}}{} b")) == (
        "",
        len("\\discretionary{}{\\hbox{$+$}}{}"),
    )
    assert clean_latex("\\discretionary{a}{b}{c} \\mathsurround=0pt x") == "c  x"


def test_a_discretionary_through_katex(converter):
    op = MacroDef("\\z", "#1\\nobreak\\discretionary{}{\\hbox{$\\mathsurround=0pt #1$}}{}", 1, source="newcommand")
    result = converter.convert("a \\z{=} b", macros=[op])
    assert result.status == "ok", result.message
    assert result.mathml.count("<mo>=</mo>") == 1
