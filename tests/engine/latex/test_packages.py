"""Every command of the package table converts with the real KaTeX (skipped without Node.js and KaTeX)."""

from __future__ import annotations

from eqsearch.engine.latex.packages import PACKAGE_MACROS
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
