"""Math alphabets a preamble declares from fonts: ``\\DeclareMathAlphabet{\\mathpzc}{OT1}{pzc}{m}{it}``.

LaTeX's font declarations name a font by encoding, family, series and shape; KaTeX has a fixed set of alphabets.
Each declared alphabet becomes a one-argument macro onto the KaTeX alphabet closest to its font: a blackboard
family (``bbold``, ``BOONDOX-ds``, ``msb``) -> ``\\mathbb``, a calligraphic one (``cmsy``, ``eus``,
``dutchcal``) -> ``\\mathcal``, a script one (``rsfs``, ``pzc``) -> ``\\mathscr``, a Fraktur one -> ``\\mathfrak``,
sans serif -> ``\\mathsf``, typewriter -> ``\\mathtt``, else by series and shape (bold italic ->
``\\boldsymbol``, bold -> ``\\mathbf``, italic -> ``\\mathit``, upright -> ``\\mathrm``). An alphabet KaTeX has
already (a document re-declaring ``\\mathbf`` from Times) keeps KaTeX's.

fontspec's font families (``\\newfontfamily\\cyrillicfont[Script=Cyrillic]{XITS}``, ``\\newfontface``) are font
switches: the text after them keeps its characters, so the switch itself stands for nothing in a formula.
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.scan import read_arguments

__all__ = ["declared_alphabets", "font_switches"]

_DECLARE = re.compile(r"\\DeclareMathAlphabet(?![A-Za-z@])\s*")
_KATEX_ALPHABETS = frozenset(
    {
        "\\mathrm",
        "\\mathit",
        "\\mathbf",
        "\\mathsf",
        "\\mathtt",
        "\\mathcal",
        "\\mathscr",
        "\\mathfrak",
        "\\mathbb",
        "\\mathnormal",
        "\\boldsymbol",
        "\\bm",
    }
)
_FAMILIES = (
    (re.compile(r"bb|ds|msb|dsrom|bbm", re.I), "\\mathbb"),
    (re.compile(r"rsfs|pzc|calligra|script|scr|boondox-calo|zapf", re.I), "\\mathscr"),
    (re.compile(r"cal|cmsy|eus|euler-script|mathc", re.I), "\\mathcal"),
    (re.compile(r"frak|eufm|yfrak|ygoth|euf", re.I), "\\mathfrak"),
    (re.compile(r"ss|sans|phv|iwona|helvet|cmbr", re.I), "\\mathsf"),
    (re.compile(r"tt|pcr|courier|lmvtt", re.I), "\\mathtt"),
)


def _alphabet(family: str, series: str, shape: str) -> str:
    for pattern, alphabet in _FAMILIES:
        if pattern.search(family):
            return alphabet
    bold = series.strip().startswith(("b", "sb", "eb", "ub"))
    italic = shape.strip() in ("it", "sl")
    if bold:
        return "\\boldsymbol" if italic else "\\mathbf"
    return "\\mathit" if italic else "\\mathrm"


def declared_alphabets(text: str) -> list[MacroDef]:
    """The math alphabets ``text`` declares, as one-argument macros (module docstring), in declaration order."""
    if "\\DeclareMathAlphabet" not in text:
        return []
    made: list[MacroDef] = []
    for m in _DECLARE.finditer(text):
        parts = [part.strip() for part in read_arguments(text, m.end(), 5)[0]]
        if len(parts) < 5 or not re.fullmatch(r"\\[A-Za-z@]+", parts[0]) or parts[0] in _KATEX_ALPHABETS:
            continue
        name, _encoding, family, series, shape = parts
        made.append(MacroDef(name, f"{_alphabet(family, series, shape)}{{#1}}", 1, None, "DeclareMathAlphabet"))
    return made


_FONT_FAMILY = re.compile(r"\\(?:new|renew|set)fontfa(?:mily|ce)\s*\{?\s*(\\[A-Za-z@]+)\s*\}?")


def font_switches(text: str) -> list[MacroDef]:
    """fontspec's font families ``text`` declares, as argument-less macros with an empty body (module docstring)."""
    if "fontfa" not in text:
        return []
    return [MacroDef(m.group(1), "", 0, None, "newfontfamily") for m in _FONT_FAMILY.finditer(text)]
