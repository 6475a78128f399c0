"""What a conversion's status says: which part of a display was approximated, and how much of it survived.

An ``approximate`` result is MathML in which some symbols stand in for what KaTeX could not render: a command nobody
defines shown as its name (``\\foo`` -> the text "foo"), a picture drawn as a symbol shown as "[diagram]". Its
message names them and counts how much of the display survived: the symbols of the MathML (its ``mi``, ``mn``,
``mo``, ``mtext`` leaves, invisible operators and spacing left out) that are not such stand-ins, out of all of them.
"""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["PLACEHOLDER_TEXT", "kept_symbols", "survival", "unknown_text"]

#: The text a picture inside a formula is shown as (`engine.latex.diagrams.replace_diagrams`).
PLACEHOLDER_TEXT = "[diagram]"

_LEAF = re.compile(r"<(mi|mn|mo|mtext|ms)\b[^>]*>([^<]*)</\1>")
_INVISIBLE = frozenset("\u2061\u2062\u2063\u2064")


def unknown_text(name: str) -> str:
    """The text the KaTeX worker shows an unknown command as (``katex/worker.js``'s ``textName``)."""
    return re.sub(r"[^A-Za-z0-9@]", "", name[1:]) or "?"


def kept_symbols(mathml: str, stand_ins: Collection[str]) -> tuple[int, int]:
    """``(kept, total)``: the symbols of ``mathml`` that are not one of the ``stand_ins`` texts, and all of them."""
    total = lost = 0
    for tag, text in _LEAF.findall(mathml):
        if not text.strip() or text in _INVISIBLE:
            continue
        total += 1
        lost += tag == "mtext" and any(stand_in in text for stand_in in stand_ins)  # merged with text: "circle2"
    return total - lost, total


def survival(mathml: str, unknown: Collection[str] = (), placeholders: int = 0) -> str:
    """``"38 of 40 symbols kept (95%)"`` for a display whose ``unknown`` commands were shown as their names and whose
    pictures (``placeholders`` of them) as "[diagram]"."""
    stand_ins = {unknown_text(name) for name in unknown}
    if placeholders:
        stand_ins.add(PLACEHOLDER_TEXT)
    kept, total = kept_symbols(mathml, stand_ins)
    share = 100 if total == 0 else 100 * kept // total
    return f"{kept} of {total} symbols kept ({share}%)"
