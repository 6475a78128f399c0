"""The commands the pinned KaTeX implements itself (engine/latex/katexnames.py), checked against KaTeX."""

from __future__ import annotations

from eqsearch.engine.latex.install import DEFAULT_KATEX_DIR
from eqsearch.engine.latex.katexnames import katex_commands, parse_katex_commands

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
