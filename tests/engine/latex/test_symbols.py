"""The symbol fallback table (engine/latex/symbols.py) read from the pinned latex2mathml, used by real KaTeX."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.packages import PACKAGE_MACROS
from eqsearch.engine.latex.symbols import parse_symbol_table, symbol_table


def test_the_table_is_read_from_the_pinned_package_with_classes() -> None:
    table = symbol_table()
    assert len(table) > 2000
    assert table["\\multimapinv"] == "\\mathrel{⟜}"  # txfonts
    assert table["\\boxbar"] == "\\mathbin{◫}"  # stmaryrd
    assert table["\\Lbag"] == "\\mathopen{⟅}"
    assert table["\\sqint"] == "\\mathop{⨖}"  # esint
    assert "\\mathbb" not in table and "\\hat" not in table  # alphabets and accents take arguments
    assert "\\mathds" not in table  # "= \\mathds{C} (dsfont)": an alias with an argument is not a symbol's name


def test_a_letters_other_names_read_as_latex_spells_it(converter: KatexConverter) -> None:
    table = symbol_table()
    assert table["\\BbbR"] == "\\mathbb{R}" and table["\\mitalpha"] == "\\alpha"  # unicode-math's names
    assert converter.convert("\\BbbR^n").mathml == converter.convert("\\mathbb{R}^n").mathml


def test_parse_keeps_aliases_and_prefers_a_record_without_conflicts() -> None:
    text = "\n".join(
        [
            "# comment",
            "02255^≕^\\eqcolon^^R^mathrel^mathabx -txfonts^= \\Eqcolon (other), EQUALS COLON",
            "02239^∹^\\eqcolon^^R^mathrel^txfonts^",
            "021A4^↤^\\mapsfrom^\\mapsfrom^R^mathrel^stmaryrd^= \\mappedfrom (kpfonts), maps to",
            "00302^̂^\\hat^^D^mathaccent^^COMBINING CIRCUMFLEX",
            "0007B^{^\\{^\\lbrace^O^mathopen^^LEFT CURLY BRACKET",
        ]
    )
    table = parse_symbol_table(text)
    assert table["\\eqcolon"] == "\\mathrel{∹}"  # the record where no package uses the name otherwise
    assert table["\\Eqcolon"] == "\\mathrel{≕}"
    assert table["\\mappedfrom"] == table["\\mapsfrom"] == "\\mathrel{↤}"
    assert "\\hat" not in table and "\\lbrace" not in table  # an accent; a TeX special character


@pytest.mark.parametrize(
    ("latex", "symbol"),
    [
        ("a \\multimapinv b", "⟜"),  # txfonts
        ("a \\multimapboth b", "⧟"),  # txfonts
        ("x \\mapsfrom y", "↤"),  # stmaryrd
        ("a \\boxbar b", "◫"),  # stmaryrd
        ("\\llparenthesis x \\rrparenthesis", "⦇"),  # stmaryrd
        ("a \\drsh b", "↳"),  # mathabx
        ("a \\updownarrows b", "⇅"),  # mathabx
        ("\\diameter + \\leftmoon", "⌀"),  # wasysym
        ("\\sqint_S f", "⨖"),  # esint
    ],
)
def test_package_symbols_convert_exactly(converter: KatexConverter, latex: str, symbol: str) -> None:
    result = converter.convert(latex)
    assert result.status == "ok", result.message
    assert symbol in (result.mathml or "")


def test_spacing_follows_the_class(converter: KatexConverter) -> None:
    relation = converter.convert("a \\multimapinv b").mathml or ""
    binary = converter.convert("a \\boxbar b").mathml or ""
    opening = converter.convert("\\Lbag x \\Rbag").mathml or ""
    assert "<mo>⟜</mo>" in relation  # a relation: <mo> with the relation's default spacing
    assert '<mo lspace="0.22em" rspace="0.22em">◫</mo>' in binary  # a binary operator's medium space
    assert '<mo lspace="0em" rspace="0em">⟅</mo>' in opening  # an opening delimiter: no space


def test_a_documents_own_definition_wins(converter: KatexConverter) -> None:
    mine = converter.convert("a \\multimapinv b", macros=[MacroDef("\\multimapinv", "\\multimap", 0, source="def")])
    assert mine.status == "ok" and "⊸" in (mine.mathml or "") and "⟜" not in (mine.mathml or "")
    # defined through TeX internals no converter can expand: the name stays unknown, never the table's symbol
    internal = converter.convert(
        "a \\multimapinv b", macros=[MacroDef("\\multimapinv", "\\@mmapinv\\relax", 0, source="def")]
    )
    assert internal.status == "approximate" and internal.reason == "undefined-macro"
    assert "⟜" not in (internal.mathml or "")


def test_katex_and_package_table_commands_are_never_replaced(converter: KatexConverter) -> None:
    # \leq is in the table (≤ as a relation) and in KaTeX: KaTeX's own rendering, the same symbol
    assert "\\leq" in symbol_table()
    assert "<mo>≤</mo>" in (converter.convert("a \\leq b").mathml or "")
    # \coloneq: the table says ≔ ; KaTeX's mathtools-style \coloneq (:-) is what comes out
    coloneq = converter.convert("a \\coloneq b").mathml or ""
    assert "≔" not in coloneq and ":" in coloneq
    # \sun is in both the table (☼) and engine/latex/packages.py (⊙): the package table wins
    assert "\\sun" in PACKAGE_MACROS and symbol_table().get("\\sun") == "\\mathord{☼}"
    sun = converter.convert("a \\sun b").mathml or ""
    assert "☼" not in sun


def test_unknown_names_outside_the_table_stay_approximate(converter: KatexConverter) -> None:
    result = converter.convert("a \\leftrightblackspoon b \\multimapinv c")  # MnSymbol: not in the source table
    assert result.status == "approximate" and "leftrightblackspoon" in (result.message or "")
    assert "⟜" in (result.mathml or "")


def test_every_table_entry_renders_in_katex(converter: KatexConverter) -> None:
    table = symbol_table()
    names = sorted(table)
    # 25 names an equation (the worker resolves up to 32 an equation), each after an operand so that binary and
    # relation classes apply
    chunks = [names[i : i + 25] for i in range(0, len(names), 25)]
    results = converter.convert_many([(" ".join(f"x {name}" for name in chunk) + " x", "equation") for chunk in chunks])
    wrong = [(chunk[0], r.status, r.message) for chunk, r in zip(chunks, results, strict=True) if r.status != "ok"]
    assert not wrong


def test_a_symbol_that_breaks_the_formula_falls_back_to_the_name(converter: KatexConverter) -> None:
    # in text mode a class command is an error: the equation comes out as it did without the table
    in_text = converter.convert("a \\text{5 \\cent} b")
    assert in_text.status == "approximate" and "\\cent" in (in_text.message or "")
    both = converter.convert("a \\multimapinv b + \\text{\\cent}")
    assert both.status == "approximate" and "⟜" not in (both.mathml or "")
