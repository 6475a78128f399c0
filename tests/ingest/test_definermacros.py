"""Macros that define macros, defined at each use (`eqsearch.ingest.definermacros`, through `extract_macros`)."""

from __future__ import annotations

from eqsearch.ingest.macros import extract_macros


def test_macros_that_define_macros_define_them_at_each_use():
    text = r"""\def\newbfop#1#2{\def#1{\mathbf{#2}}}
\newcommand{\defop}[1]{\DeclareMathOperator{#1}{\mathrm{op}}}
\newbfop\Number{N} \newbfop{\Top}{T} \defop{\Foo}
\newcommand{\twice}[1]{\newcommand{#1}[1]{##1 ##1}}\twice{\dup}"""
    table = extract_macros(text)
    made = {m.name: (m.body, m.nargs) for m in table.definitions()}
    assert made["\\Number"] == ("\\mathbf{N}", 0) and made["\\Top"] == ("\\mathbf{T}", 0)
    assert made["\\Foo"] == ("\\operatorname{\\mathrm{op}}", 0)
    assert made["\\dup"] == ("#1 #1", 1)  # ## in the definer's body is the new macro's parameter
