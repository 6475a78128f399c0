"""TeX idioms in a document's macro bodies given their meaning (`engine.latex.idioms`), through the real KaTeX."""

from __future__ import annotations

from eqsearch.engine.latex.idioms import rewrite_idioms
from eqsearch.engine.latex.macros import MacroDef


def test_ifnextchar_becomes_an_optional_token():
    macro = rewrite_idioms(MacroDef("\\D", "\\@ifnextchar^{\\mathrm{D}}{\\mathrm{D}^{1}}", source="def"))
    assert (macro.nargs, macro.spec) == (1, "t^")
    assert macro.body == "\\IfBooleanTF{#1}{\\mathrm{D} ^}{\\mathrm{D}^{1}}"


def test_spacing_only_lookahead_and_state_tests_are_dropped():
    assert rewrite_idioms(MacroDef("\\dd", "\\futurelet\\next\\ddchoice", source="def")).body == ""
    spaced = rewrite_idioms(MacroDef("\\d", "\\ifnum\\lastnodetype>0 \\mskip\\thinmuskip\\fi\\mathrm{d}", source="def"))
    assert spaced.body == "\\mathrm{d}"
    kept = "\\ifnum\\value{x}>0 a\\fi"  # a test of something else: left as it is
    assert rewrite_idioms(MacroDef("\\k", kept)).body == kept


def test_latex_internals_and_an_ordinary_macro():
    assert rewrite_idioms(MacroDef("\\op", "\\mathop{\\operator@font op}\\m@th")).body == "\\mathop{\\rm op}"
    plain = MacroDef("\\R", "\\mathbb{R}")
    assert rewrite_idioms(plain) == plain


def test_the_average_integral_and_the_next_token_convert_with_real_katex(converter):
    macros = [
        MacroDef("\\dashint", "\\Xint-", source="def"),
        MacroDef("\\D", "\\@ifnextchar^{\\mathrm{D}}{\\mathrm{D}^{1}}", source="def"),
    ]
    result = converter.convert("\\dashint_B f = \\D^2 g + \\D h", "equation", macros=macros)
    assert (result.status, result.reason) == ("ok", None), result.message
    assert "⨍" in result.mathml and result.mathml.count('<mi mathvariant="normal">D</mi>') == 2


def test_settings_of_latex_internals_for_the_bodys_group_are_dropped(converter):
    """A double hat that sets amsmath's accent internals for its own group (``\\let\\macc@kerna\\z@``): the settings
    only tune the typesetting, the rest is the formula, through the real KaTeX (it was withheld: TeX internals)."""
    body = (
        "\\begingroup\\let\\macc@kerna\\z@\\let\\macc@kernb\\z@\\let\\macc@nucleus\\@empty"
        "\\hat{\\raisebox{.4ex}{\\vphantom{\\ensuremath{#1}}}\\smash{\\hat{#1}}}\\endgroup"
    )
    hathat = MacroDef("\\hathat", body, 1, source="newcommand")
    assert "@" not in rewrite_idioms(hathat).body
    result = converter.convert("t/\\log(N)^2 = \\hathat{t}", macros=[hathat])
    assert result.status == "ok", result.message
    assert result.mathml.count("<mo>^</mo>") == 2
