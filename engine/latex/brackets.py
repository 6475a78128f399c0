"""Brackets and root indices KaTeX cannot size or place, made into what it parses (same glyphs, fixed size).

KaTeX 0.19 has stmaryrd's semantic brackets ``\\llbracket``/``\\rrbracket`` (and ``\\lBrace``/``\\rBrace``) only as
symbols defined through ``\\html@mathml``, so after ``\\left``/``\\right``/``\\middle`` it rejects them ("Invalid
delimiter type"), the characters ⟦ ⟧ ⦃ ⦄ too, and it lacks the names ``\\lBrack``/``\\rBrack`` (unicode-math,
fourier). `rewrite_brackets` renames those to KaTeX's, sets a bracket after ``\\left`` as ``\\left.\\mathopen{..}``
(after ``\\right`` as ``\\mathclose{..}\\right.``, after ``\\middle`` as itself: the ``\\left``/``\\right`` pairs stay
balanced, the bracket keeps its glyph but not its height), drops a ``\\big``-family size before one, and drops
amsmath's ``\\leftroot{..}``/``\\uproot{..}`` (where a root's index sits) keeping the root. Applied to display
bodies (`engine.latex.preprocess.preprocess_latex`) and macro bodies (`engine.latex.macros`).
"""

from __future__ import annotations

import re

__all__ = ["rewrite_brackets"]

_NAMES = {"lBrack": "\\llbracket", "rBrack": "\\rrbracket"}
_RENAME = re.compile(r"\\([lr]Brack)(?![A-Za-z@])")
_BRACKET = (
    r"(\\(?:llbracket|rrbracket|llparenthesis|rrparenthesis|lBrace|rBrace)(?![A-Za-z@])|[\u27e6\u27e7\u2983\u2984])"
)
_SIZED = re.compile(r"\\(left|right|middle|big|Big|bigg|Bigg)([lrm]?)(?![A-Za-z@])\s*" + _BRACKET)
_ROOT_PLACEMENT = re.compile(r"\\(?:leftroot|uproot)\s*(?:\{\s*-?\s*\d+\s*\}|-?\d)")


def _sized(m: re.Match[str]) -> str:
    size, bracket = m.group(1), m.group(3)
    if size == "left":
        return f"\\left.\\mathopen{{{bracket}}}"
    if size == "right":
        return f"\\mathclose{{{bracket}}}\\right."
    return bracket  # \middle, \bigl..: the bracket alone


def rewrite_brackets(text: str) -> str:
    """``text`` with the brackets and root placements of the module docstring rewritten; unchanged without them."""
    if "Brack" in text:
        text = _RENAME.sub(lambda m: _NAMES[m.group(1)], text)
    if (
        "bracket" in text
        or "parenthesis" in text
        or "Brace" in text
        or any(c in text for c in "\u27e6\u27e7\u2983\u2984")
    ):
        text = _SIZED.sub(_sized, text)
    if "root" in text:
        text = _ROOT_PLACEMENT.sub("", text)
    return text
