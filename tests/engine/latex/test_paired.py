"""mathtools' paired delimiters in every call form, and definitions a body makes for itself (engine/latex/paired.py),
through the real KaTeX."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef, build_katex_macros, expand_macros
from eqsearch.engine.latex.paired import delimsize, local_definitions, xpp_definition

# mathtools' manual: \providecommand\given{} \DeclarePairedDelimiterX\Set[1]\{\}{\renewcommand\given{..}#1}
SET = MacroDef(
    "\\Set",
    "\\renewcommand\\given{\\SetSymbol[\\delimsize]}#1",
    1,
    source="DeclarePairedDelimiterX",
    delimiters=("\\{", "\\}"),
)
SET_SYMBOL = MacroDef("\\SetSymbol", "\\nonscript\\:#1\\vert\\allowbreak\\nonscript\\:\\mathopen{}", 1, "")
GIVEN = MacroDef("\\given", "", source="providecommand")


def test_local_definitions_are_carried_out_on_what_follows():
    assert local_definitions("\\renewcommand\\given{\\;|\\;}x \\given y \\givenx") == "x \\;|\\; y \\givenx"
    assert local_definitions("\\def\\g{:}a\\g b") == "a: b"
    assert local_definitions("\\newcommand{\\g}{A}\\let\\h=\\g \\h\\g").split() == ["A", "A"]
    assert local_definitions("\\def\\g{x}\\alpha\\g") == "\\alpha x"  # no \\alphax
    assert local_definitions("\\def\\f#1{[#1]}\\f{x}") == "\\def\\f#1{[#1]}\\f{x}"  # with parameters: KaTeX's


def test_delimsize_takes_the_size_of_the_call():
    assert delimsize("a \\delimsize\\vert b", "\\middle") == "a \\middle\\vert b"
    assert delimsize("a \\delimsize \\vert b", "") == "a \\vert b"


def test_xpp_declarations_have_three_forms():
    body, spec = xpp_definition(["\\mathbb{P}", "[", "]", "", "#1 \\delimsize| #2"], 2)
    assert spec == "s o m m"
    assert "\\IfBooleanTF{#1}{\\left[ #3 \\middle| #4 \\right]}" in body
    assert "{\\mathopen{[} #3 | #4 \\mathclose{]}}" in body
    assert "{\\mathopen{#2l[} #3 #2| #4 \\mathclose{#2r]}}" in body


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("\\Set{x \\given x > 0}", "\\mathopen{\\{} x \\:\\vert\\allowbreak\\:\\mathopen{} x > 0 \\mathclose{\\}}"),
        ("\\Set*{x \\given y}", "\\left\\{ x \\:\\middle\\vert\\allowbreak\\:\\mathopen{} y \\right\\}"),
        (
            "\\Set[\\big]{x \\given y}",
            "\\mathopen{\\bigl\\{} x \\:\\big\\vert\\allowbreak\\:\\mathopen{} y \\mathclose{\\bigr\\}}",
        ),
    ],
)
def test_set_with_given_redefined_inside_its_body(call, expected):
    macros = build_katex_macros([GIVEN, SET_SYMBOL, SET])
    assert expand_macros(call, macros) == expected


def test_paired_delimiters_convert_in_every_form(converter):
    prob_body, prob_spec = xpp_definition(
        ["\\mathbb{P}", "(", ")", "", "\\renewcommand\\given{\\nonscript\\:\\delimsize\\vert\\nonscript\\:}#1"], 1
    )
    macros = [
        GIVEN,
        SET_SYMBOL,
        SET,
        MacroDef("\\inner", "#1,#2", 2, source="DeclarePairedDelimiterX", delimiters=("\\langle", "\\rangle")),
        MacroDef("\\floor", "#1", 1, source="DeclarePairedDelimiter", delimiters=("\\lfloor", "\\rfloor")),
        MacroDef("\\Prob", prob_body, 3, source="DeclarePairedDelimiterXPP", spec=prob_spec),
    ]
    latex = (
        "\\Set{x \\given x > 0} \\Set*{x \\given \\frac{x}{2}} \\Set[\\Big]{x \\given y} \\inner{a}{b} "
        "\\floor*{\\frac{x}{2}} \\floor[\\bigg]{y} \\Prob{A \\given B} \\Prob*{\\frac{A}{2} \\given B} "
        "\\Prob[\\big]{A \\given B} P(a \\given b)"
    )
    result = converter.convert(latex, macros=macros)
    assert result.status == "ok", result.message
    assert result.mathml.count("∣") == 4 and "⟨" in result.mathml and "⌊" in result.mathml  # \given, \inner, \floor
    assert result.mathml.count('<mo fence="true" lspace="0.05em" rspace="0.05em">|</mo>') == 2  # \middle\vert
    assert 'maxsize="1.8em">∣</mo>' in result.mathml  # \Big\vert
