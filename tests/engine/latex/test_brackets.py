"""stmaryrd's semantic brackets after ``\\left``/``\\right``/``\\big`` and amsmath's root placement
(`engine.latex.brackets`)."""

from __future__ import annotations

from eqsearch.engine.latex.brackets import rewrite_brackets


def test_rewrite_brackets_leaves_other_text_alone():
    for text in ("\\left[ x \\right]", "\\llbracket x \\rrbracket", "\\sqrt[3]{x}", "\\lBracket", "\\uprootx"):
        assert rewrite_brackets(text) == text
    assert rewrite_brackets("\\left\\llbracket x\\right\\rrbracket") == (
        "\\left.\\mathopen{\\llbracket} x\\mathclose{\\rrbracket}\\right."
    )
    assert rewrite_brackets("\\bigl\\llparenthesis a \\bigr\\rrparenthesis") == "\\llparenthesis a \\rrparenthesis"


def test_root_placement_is_dropped_and_the_unicode_math_names_renamed():
    assert rewrite_brackets("\\sqrt[\\leftroot{-2}\\uproot{2} n]{x}") == "\\sqrt[ n]{x}"
    assert rewrite_brackets("\\lBrack x \\rBrack") == "\\llbracket x \\rrbracket"


def test_sized_semantic_brackets_convert_with_real_katex(converter):
    result = converter.convert("\\Bigl\\llbracket \\frac{a}{b} \\Bigr\\rrbracket", "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert "⟦</mo>" in result.mathml and "⟧</mo>" in result.mathml and "<mfrac>" in result.mathml
