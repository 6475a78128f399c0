"""Aliases resolved against the package table without loops (engine/latex/aliases.py), through the real KaTeX."""

from __future__ import annotations

from eqsearch.engine.latex.aliases import PRIMITIVE, nodes_on_cycles, resolve_aliases
from eqsearch.engine.latex.macros import MacroDef, build_katex_macros, expand_macros
from eqsearch.engine.latex.packages import PACKAGE_MACROS

MLEFTRIGHT = [MacroDef("\\left", "\\mleft", source="let"), MacroDef("\\right", "\\mright", source="let")]


def _resolved(*macros: MacroDef) -> dict[str, MacroDef]:
    names = {m.name for m in macros}
    fallback = [m for n, m in PACKAGE_MACROS.items() if n not in names]
    return {m.name: m for m in resolve_aliases([*fallback, *macros], PACKAGE_MACROS)}


def test_an_alias_that_comes_back_to_its_builtin_is_no_definition():
    resolved = _resolved(*MLEFTRIGHT)
    assert "\\left" not in resolved and "\\right" not in resolved
    assert resolved["\\mleft"].body == "\\left"  # the table's \mleft is the built-in \left again


def test_an_alias_keeps_the_meaning_its_target_had():
    resolved = _resolved(
        MacroDef("\\oldsqrt", "\\sqrt", source="let"),
        MacroDef("\\sqrt", "\\oldsqrt{#1}\\,", 1, source="renewcommand"),
        MacroDef("\\oldabs", "\\abs", source="LetLtxMacro"),
        MacroDef("\\abs", "\\oldabs{#1}_{2}", 1, source="renewcommand"),
    )
    assert resolved["\\oldsqrt"].body == PRIMITIVE + "\\sqrt"  # KaTeX's \sqrt, not the redefinition
    assert resolved["\\oldabs"].delimiters == ("\\lvert", "\\rvert")  # a copy of the package table's \abs


def test_a_circle_through_the_table_marks_the_table_side():
    resolved = _resolved(MacroDef("\\left", "\\mathopen{}\\mleft", source="renewcommand"))
    assert resolved["\\mleft"].body == PRIMITIVE + "\\left"
    macros = build_katex_macros([MacroDef("\\left", "\\mathopen{}\\mleft", source="renewcommand")])
    assert expand_macros("\\left( x \\right)", macros) == "\\mathopen{}\\left( x \\right)"


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"a"}, "c": {"c"}, "d": {"a", "e"}, "e": set()}
    assert nodes_on_cycles(graph) == {"a", "b", "c"}


def test_mleftright_aliases_convert_without_a_loop(converter):
    """mleftright's ``\\let\\left\\mleft``: "too many expansions" on every display before."""
    result = converter.convert("f\\left( x \\right) = \\left[ \\frac{1}{2} \\right]", macros=MLEFTRIGHT)
    plain = converter.convert("f\\left( x \\right) = \\left[ \\frac{1}{2} \\right]")
    assert (result.status, result.mathml) == ("ok", plain.mathml)


def test_aliases_of_redefined_builtins_convert(converter):
    macros = [
        MacroDef("\\oldsqrt", "\\sqrt", source="let"),
        MacroDef("\\sqrt", "\\oldsqrt{#1}\\,", 1, source="renewcommand"),
        MacroDef("\\oldvec", "\\vec", source="NewCommandCopy"),
        MacroDef("\\vec", "\\oldvec{\\mathbf{#1}}", 1, source="renewcommand"),
    ]
    result = converter.convert("\\sqrt{x} + \\vec{v}", macros=macros)
    assert result.status == "ok", result.message
    assert "<msqrt><mi>x</mi></msqrt><mtext>\u2009</mtext>" in result.mathml  # the built-in \sqrt, then \,
    assert '<mover accent="true"><mi mathvariant="bold">v</mi><mo>⃗</mo></mover>' in result.mathml


def test_providecommand_defines_nothing_katex_or_the_table_has(converter):
    macros = [
        MacroDef("\\sqrt", "\\mathrm{X}", source="providecommand"),
        MacroDef("\\abs", "|#1|", 1, source="providecommand"),
        MacroDef("\\N", "\\mathcal{N}", source="providecommand"),  # a KaTeX convenience LaTeX lacks: provided
        MacroDef("\\given", "", source="providecommand"),
    ]
    result = converter.convert("\\sqrt{2} \\abs{x} \\N(0,1) a \\given b", macros=macros)
    assert result.status == "ok", result.message
    assert "<msqrt><mn>2</mn></msqrt>" in result.mathml and "X" not in result.mathml
    assert result.mathml.count("∣") == 2  # the table's \abs (\lvert, \rvert), not the provided |#1|
    assert '<mi mathvariant="script">N</mi>' in result.mathml


def test_a_documents_own_recursion_still_fails_fast(converter):
    result = converter.convert("\\a", macros=[MacroDef("\\a", "\\a x")])
    assert (result.status, result.reason) == ("failed", "too-many-expansions")
