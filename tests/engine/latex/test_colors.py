"""xcolor's models, mixes and names made into colours KaTeX takes (`engine.latex.colors`)."""

from __future__ import annotations

from eqsearch.engine.latex.colors import color_rule
from eqsearch.engine.latex.preprocess import clean_latex


def test_colour_specifications_katex_takes():
    assert clean_latex("\\textcolor[gray]{0.5}{q} \\color{blue}x") == "\\textcolor{#808080}{q} \\color{blue}x"
    assert clean_latex("\\textcolor{#1}{#2}") == "\\textcolor{#1}{#2}"  # a macro body: left as it is
    assert clean_latex("\\color{-!}") == "\\color{black}"


def test_the_rule_reads_its_model_and_each_colour_and_says_where_to_resume():
    text = "\\fcolorbox[rgb]{1,0,0}{0,0,1}{x} + y"
    assert color_rule(2)(text, len("\\fcolorbox")) == ("\\fcolorbox{#ff0000}{#0000ff}", text.index("{x}"))
    html = "\\color[HTML]{00FF7f}"
    assert color_rule(1)(html + " z", len("\\color")) == ("\\color{#00FF7f}", len(html))
    assert color_rule(1)("\\color", len("\\color")) == ("\\color", len("\\color"))  # no argument: left as it is


def test_a_mix_and_a_name_with_digits_convert_with_real_katex(converter):
    result = converter.convert("\\color{blue!40!white} a + \\textcolor{col3}{b}", "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert 'mathcolor="blue"' in result.mathml and 'mathcolor="col"' in result.mathml
