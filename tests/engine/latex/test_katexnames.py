"""The commands the pinned KaTeX implements itself (engine/latex/katexnames.py), checked against KaTeX."""

from __future__ import annotations

from eqsearch.engine.latex.install import DEFAULT_KATEX_DIR
from eqsearch.engine.latex.katexnames import (
    katex_commands,
    katex_macro_uses,
    parse_katex_commands,
    parse_katex_macro_uses,
)
from eqsearch.engine.latex.macros import MacroDef

SOURCE = r"""
defineFunction({ type: "sqrt", names: ["\\sqrt"], props: {} });
defineFunction({ type: "genfrac", names: ["\\dfrac", "\\frac"] });
defineEnvironment({ type: "array", names: ["array", "darray"] });
defineSymbol(math, main, rel, "\u2261", "\\equiv");
defineSymbol(math, main, textord, "\u2018", "`");
defineMacro("\\N", "\\mathbb{N}");
"""


def test_functions_and_symbols_are_read_macros_are_not():
    assert parse_katex_commands(SOURCE) == {"\\sqrt", "\\dfrac", "\\frac", "\\equiv"}


def test_the_names_read_from_the_pinned_katex_are_all_defined(converter):
    names = katex_commands(DEFAULT_KATEX_DIR)
    if not names:  # KaTeX not installed: the converter fixture skipped already
        return
    assert {"\\sqrt", "\\frac", "\\left", "\\alpha", "\\mathbb", "\\text"} <= names
    assert not {"\\N", "\\R", "\\bra", "\\Set"} & names  # KaTeX's conveniences, not LaTeX's commands
    results = converter.convert_many([(name, "equation") for name in sorted(names)])
    undefined = [
        name
        for name, result in zip(sorted(names), results, strict=True)
        if result.reason == "undefined-macro" and name in (result.message or "")
    ]
    # text-mode symbols (\ss, \AE) and KaTeX's internal names are defined, but not in math mode
    assert len(undefined) < 50, undefined


def test_the_commands_katex_macros_use_are_read():
    source = SOURCE + 'defineMacro("\\\\neq", "\\\\html@mathml{\\\\mathrel{\\\\not=}}{\\\\mathrel{\\\\char`≠}}");\n'
    assert parse_katex_macro_uses(source) == {"\\mathbb", "\\html@mathml", "\\mathrel", "\\not", "\\char"}


def test_a_document_redefining_a_command_katex_macros_use_keeps_katex_working(converter):
    """``\\renewcommand{\\char}{\\text{char}}``: given to KaTeX, its ``\\neq`` (``\\mathrel{\\char`≠}``) would loop
    ("Too many expansions"); expanded here, the document's ``\\char`` is its word and ``\\ne`` the relation."""
    uses = katex_macro_uses(DEFAULT_KATEX_DIR)
    if not uses:
        return
    assert {"\\char", "\\mathrel", "\\html@mathml"} <= uses
    char = MacroDef("\\char", "\\text{char}", 0, source="renewcommand")
    result = converter.convert("a \\ne b, \\quad \\char k = p", macros=[char])
    assert result.status == "ok", result.message
    assert "≠" in result.mathml and "char" in result.mathml
