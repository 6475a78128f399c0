"""A document's macros made ready for KaTeX: xparse argument types, paired delimiters, the package fallback table,
and the definitions no converter can expand, and what a macro's body runs (`\\let`) as the expansion goes."""

from dataclasses import replace

from eqsearch.engine.latex.macros import MacroDef, build_katex_macros, expand_macros
from eqsearch.engine.latex.packages import KNOWN_PACKAGES, PACKAGE_MACROS
from eqsearch.engine.latex.xparse import parse_argument_spec, resolve_conditionals


def test_xparse_command_reads_its_arguments_by_type_and_decides_its_conditionals():
    norm = MacroDef(
        "\\norm",
        "\\IfBooleanTF{#1}{\\left\\|#3\\right\\|}{\\IfNoValueTF{#2}{\\|#3\\|}{#2\\|#3#2\\|}}",
        3,
        source="NewDocumentCommand",
        spec="s o m",
    )
    macros = build_katex_macros([norm])
    assert "\\norm" in macros.expanded and "\\norm" not in macros.katex
    assert expand_macros("\\norm{x}", macros) == "\\|x\\|"
    assert expand_macros("\\norm*{x}", macros) == "\\left\\|x\\right\\|"
    assert expand_macros("\\norm[\\big]{x}", macros) == "\\big\\|x\\big\\|"


def test_paired_delimiters_plain_starred_and_sized():
    macros = build_katex_macros(
        [
            MacroDef("\\abs", "#1", 1, source="DeclarePairedDelimiter", delimiters=("\\lvert", "\\rvert")),
            MacroDef(
                "\\inner",
                "#1 \\delimsize\\vert #2",
                2,
                source="DeclarePairedDelimiterX",
                delimiters=("\\langle", "\\rangle"),
            ),
        ]
    )
    assert expand_macros("\\abs{y}", macros) == "\\mathopen{\\lvert} y \\mathclose{\\rvert}"
    assert expand_macros("\\abs*{y}", macros) == "\\left\\lvert y \\right\\rvert"
    assert expand_macros("\\abs[\\Big]{y}", macros) == "\\mathopen{\\Bigl\\lvert} y \\mathclose{\\Bigr\\rvert}"
    assert expand_macros("\\inner*{a}{b}", macros) == "\\left\\langle a \\middle\\vert b \\right\\rangle"


def test_a_katex_macro_using_an_expanded_one_is_expanded_too():
    macros = build_katex_macros(
        [
            MacroDef("\\abs", "#1", 1, source="DeclarePairedDelimiter", delimiters=("|", "|")),
            MacroDef("\\dist", "\\abs{x - y}"),
        ]
    )
    assert "\\dist" in macros.expanded
    assert expand_macros("\\dist", macros) == "\\mathopen{|} x - y \\mathclose{|}"


def test_package_table_is_a_fallback_the_document_overrides():
    assert "\\uppi" in build_katex_macros([]).katex
    own = build_katex_macros([MacroDef("\\abs", "|#1|", 1)])
    assert own.katex["\\abs"] == "|#1|" and "\\abs" not in own.expanded
    assert "\\abs" in build_katex_macros([]).expanded  # physics' \abs from the table otherwise


def test_tex_internals_are_dropped_or_replaced_by_the_table():
    macros = build_katex_macros(
        [
            MacroDef("\\qty", "{\\ifnum\\z@=`}\\fi\\@quantity", 0, source="DeclareDocumentCommand", spec=""),
            MacroDef("\\weird", "\\expandafter\\foo\\csname bar\\endcsname"),
        ]
    )
    assert macros.expanded["\\qty"] == PACKAGE_MACROS["\\qty"]
    assert "\\weird" not in macros.katex and "\\weird" not in macros.expanded
    assert expand_macros("\\qty(\\frac12)", macros) == "\\left(\\frac12\\right)"
    assert expand_macros("\\qty{3}{m}", macros) == "3\\,\\mathrm{m}"  # siunitx's \qty


def test_ifmmode_in_a_body_keeps_the_math_branch_and_gapped_parameters_are_expanded_here():
    macros = build_katex_macros(
        [MacroDef("\\R", "\\ifmmode\\mathbb{R}\\else$\\mathbb{R}$\\fi"), MacroDef("\\second", "#2", 2)]
    )
    assert macros.katex["\\R"] == "\\mathbb{R}"
    assert expand_macros("\\second{a}{b}", macros) == "b"


def test_every_table_entry_is_well_formed():
    assert {"physics", "siunitx", "upgreek"} <= KNOWN_PACKAGES
    for name, macro in PACKAGE_MACROS.items():
        assert macro.name == name and macro.source == "package"
        if macro.spec is not None:
            assert len(parse_argument_spec(macro.spec)) == macro.nargs


def test_an_ifx_test_on_an_argument_keeps_the_general_branch():
    macros = build_katex_macros(
        [
            MacroDef("\\app", "\\ifx#1~ \\else \\left( #1 \\right)\\fi", 1),
            MacroDef("\\opt", "\\ifx#1\\empty x\\else y_{#1}\\fi", 1),
            MacroDef("\\only", "\\ifx#1\\relax z\\fi", 1),
        ]
    )
    mine = {name: macros.katex.get(name, macros.expanded.get(name)) for name in ("\\app", "\\opt", "\\only")}
    bodies = {name: getattr(body, "body", body) for name, body in mine.items()}
    assert bodies == {"\\app": " \\left( #1 \\right)", "\\opt": " y_{#1}", "\\only": ""}


def test_ifthen_tests_on_substituted_arguments_are_decided():
    expectation = MacroDef("\\EE", "\\ifthenelse{\\equal{#1}{}}{\\mathbb{E}}{\\mathbb{E}_{#1}}", 1, "")
    macros = build_katex_macros([expectation])
    assert "\\EE" in macros.expanded
    assert expand_macros("\\EE X + \\EE[t] Y", macros) == "\\mathbb{E} X + \\mathbb{E}_{t} Y"
    assert resolve_conditionals("\\ifthenelse{\\equal{#1}{}}{a}{b}") == "\\ifthenelse{\\equal{#1}{}}{a}{b}"


def test_a_let_run_by_a_macro_switches_what_a_macro_means_for_the_rest_of_the_formula():
    """lhs2tex's forall dot: ``\\hsforall`` runs ``\\global\\let\\hsdot=\\hsperiodonce``, which prints its second
    argument once and lets ``\\hsdot`` back to ``\\hscompose`` (its first)."""
    macros = build_katex_macros(
        [
            MacroDef("\\hsforall", "\\global\\let\\hsdot=\\hsperiodonce"),
            MacroDef("\\hsperiodonce", "#2\\global\\let\\hsdot=\\hscompose", 2),
            MacroDef("\\hscompose", "#1", 2),
            MacroDef("\\hsdot", "#1", 2),
        ]
    )
    latex = "\\forall x \\hsforall \\hsdot{\\circ}{\\mathpunct{.}} f \\hsdot{\\circ}{.} g"
    assert expand_macros(latex, macros) == "\\forall x  \\mathpunct{.} f \\circ g"
    # a \let of names nobody expands here is left to KaTeX
    plain = build_katex_macros([MacroDef("\\hsdot", "#1", 2)])
    assert expand_macros("\\let\\a=\\b \\a", plain) == "\\let\\a=\\b \\a"


def test_an_argument_after_a_control_word_stays_a_token_of_its_own(converter):
    """``\\Lam x {..}`` with ``\\Lam`` = ``\\lambda#1 \\rightarrow #2``: TeX reads ``\\lambda`` then ``x``."""
    lam = MacroDef("\\Lam", "\\lambda#1 \\rightarrow #2", 2)
    assert expand_macros("\\Lam x {y}", build_katex_macros([replace(lam, spec="m m")])) == "\\lambda x \\rightarrow y"
    result = converter.convert("\\Lam x {x + 1}", macros=[lam])
    assert (result.status, result.reason) == ("ok", None), result.message
    assert "λ" in result.mathml and "lambdax" not in result.mathml
