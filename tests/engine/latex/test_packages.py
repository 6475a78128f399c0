"""Every command of the package table converts with the real KaTeX (skipped without Node.js and KaTeX)."""

from __future__ import annotations

from eqsearch.engine.latex.packages import LOADED_PACKAGE_MACROS, PACKAGE_MACROS
from eqsearch.engine.latex.xparse import parse_argument_spec

_ARGUMENT = {"m": "{x}", "g": "{y}", "a": "(x)", "x": "(x & y)", "o": "", "O": "", "s": "", "t": "", "r": "", "u": ""}


def use(name: str) -> str:
    macro = PACKAGE_MACROS[name]
    if macro.spec is not None:
        return name + "".join(_ARGUMENT[kind] for kind, _ in parse_argument_spec(macro.spec))
    if macro.delimiters is not None:
        return name + "{x}"
    inside = "{\\kilogram}" if name in ("\\si", "\\unit") else "{3mu}" if name == "\\mspace" else ""
    before = "\\sum" if name == "\\displaylimits" else ""  # limit placement follows an operator
    if name in ("\\mleft", "\\mmiddle", "\\mright"):  # delimiters, used as a whole
        return "\\mleft( z \\mmiddle| z \\mright)"
    return before + name + (inside or "{x}" * macro.nargs) + " z"


def test_every_package_command_renders(converter):
    names = sorted(PACKAGE_MACROS)
    results = converter.convert_many([(use(name), "equation") for name in names])
    bad = {name: (r.status, r.message) for name, r in zip(names, results, strict=True) if r.status != "ok"}
    assert not bad


def test_forms_of_the_physics_commands(converter):
    forms = ("\\pdv{x}", "\\pdv{f}{x}{y}", "\\dv[2]{f}{x}", "\\dd[3]{x}", "\\vb*{v}", "\\ev{A}{\\psi}", "\\qty|x|")
    for latex in forms:
        assert converter.convert(latex).status == "ok", latex


def test_symbols_of_stmaryrd_wasysym_and_latex_text_in_math_and_in_text(converter):
    latex = "A \\binampersand B \\bindnasrepma C \\lightning {\\ocircle}A \\mathrel{\\filleddiamond} \\textexclamdown"
    result = converter.convert(latex + " \\mbox{$x$ \\lightning}")
    assert (result.status, result.reason) == ("ok", None), result.message
    for glyph in ("&amp;", "⅋", "↯", "○", "◆", "¡"):
        assert glyph in result.mathml, glyph


def test_commands_that_stand_in_only_for_the_documents_loading_their_package(converter):
    """commath's ``\\od``, diffcoeff's ``\\diff`` and chemformula's ``\\ch`` are common names of a document's own: they
    are no fallback for every document, only for one whose preamble loads the package."""
    loaded = [m for package in LOADED_PACKAGE_MACROS.values() for m in package.values()]
    assert not {m.name for m in loaded} & PACKAGE_MACROS.keys()
    forms = ["\\od{y}{x}", "\\pd[2]{f}{t}", "\\dif x", "\\diff{y}{x}", "\\diffp*{c}{z}[z=0]", "\\diff[2]{f}{t}"]
    results = converter.convert_many([(f, "equation") for f in [*forms, "\\ch{H2O + CO2}"]], macros=loaded)
    for latex, result in zip([*forms, "ch"], results, strict=True):
        assert (result.status, result.reason) == ("ok", None), (latex, result.message)
    assert "∂" in results[1].mathml and "<mfrac>" in results[3].mathml and "∣" in results[4].mathml
    assert converter.convert("\\od{y}{x}").status != "ok"  # not loaded: not defined


def test_physics_variation_only_for_a_document_loading_physics(converter):
    """physics' ``\\var{f}`` (``\\variation``) is a delta, read as ``\\dd`` reads its arguments; ``\\var`` is a common
    name of a document's own (a variance), so it stands in only where physics is loaded."""
    physics = list(LOADED_PACKAGE_MACROS["physics"].values())
    result = converter.convert("\\var{\\mathrm{Max}_t} + \\var[2]{S} + \\variation", macros=physics)
    assert result.status == "ok", result.message
    assert result.mathml.count("δ") == 3
    assert converter.convert("\\var{x}").status != "ok"  # not loaded: not defined


def test_accents_accentset_through_katex(converter):
    result = converter.convert("\\accentset{\\star}{x} + \\accentset{\\circ}{A}_{k}")
    assert result.status == "ok", result.message
    assert "⋆" in result.mathml and "∘" in result.mathml
