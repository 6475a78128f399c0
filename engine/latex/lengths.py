"""Lengths TeX reads and KaTeX refuses, written as lengths KaTeX reads: a multiple of the page's widths
(``\\hspace{0.05\\textwidth}``, ``\\rule{.3\\linewidth}{1pt}``), a comma as decimal mark (``\\hspace{,5cm}``,
``\\kern 1,5mm``) and a multiple of a math spacing register (``\\mskip.3\\thinmuskip``, `register_spacing`).

KaTeX knows no page, so a width relative to it is set in points as a 10pt ``article`` page has it (``\\textwidth``
345pt); a display keeps its spacing in proportion, not to the point. TeX reads ``,`` as a decimal mark in a
dimension (The TeXbook, chapter 10); it is read so only where a dimension stands: the arguments of the spacing and
rule commands, and after ``\\kern``, ``\\hskip`` and their kin.
"""

from __future__ import annotations

import re

__all__ = ["katex_lengths", "register_spacing"]

#: Page widths in points (LaTeX's ``article`` at 10pt; ``\\columnwidth`` as a two-column journal sets it).
PAGE_LENGTHS_PT = {
    "textwidth": 345.0,
    "linewidth": 345.0,
    "hsize": 345.0,
    "displaywidth": 345.0,
    "columnwidth": 246.0,
    "paperwidth": 614.0,
    "textheight": 550.0,
}
_UNITS = r"(?:pt|mm|cm|in|em|ex|mu|bp|pc|dd|cc|sp)"
_RELATIVE = re.compile(
    r"(?P<sign>-?)\s*(?P<factor>\d+(?:[.,]\d*)?|[.,]\d+)?\s*\\(?P<name>" + "|".join(PAGE_LENGTHS_PT) + r")(?![A-Za-z@])"
)
# where a dimension stands: a spacing or rule command's argument, or what follows a primitive that reads one
_DIMENSION_PLACE = re.compile(
    r"\\(?:[hv]space\*?|hphantom|rule|raisebox|makebox|mkern|mskip|kern|hskip|vskip|raise|lower|moveleft|moveright)"
    r"(?![A-Za-z@])\s*(?:\{\s*)?(?:\[[^\]]*\]\s*)?"
)
_COMMA_DECIMAL = re.compile(r"(-?)(\d*),(\d+)\s*(" + _UNITS + r")")


def katex_lengths(text: str) -> str:
    """``text`` with the lengths KaTeX refuses rewritten: widths of the page in points, comma decimals with a point.

    >>> katex_lengths(r"a \\hspace{0.05\\textwidth} b \\hspace{,5cm} c")
    'a \\\\hspace{17.25pt} b \\\\hspace{0.5cm} c'
    """
    if "\\" not in text:
        return text
    if any(name in text for name in PAGE_LENGTHS_PT):
        text = _RELATIVE.sub(_points, text)
    if "," in text:
        out: list[str] = []
        pos = 0
        for m in _DIMENSION_PLACE.finditer(text):
            out.append(text[pos : m.end()])
            comma = _COMMA_DECIMAL.match(text, m.end())
            if comma is None:
                pos = m.end()
                continue
            sign, whole, fraction, unit = comma.groups()
            out.append(f"{sign}{whole or '0'}.{fraction}{unit}")
            pos = comma.end()
        out.append(text[pos:])
        text = "".join(out)
    return text


def _points(m: re.Match[str]) -> str:
    factor = (m.group("factor") or "1").replace(",", ".")
    value = float("0" + factor if factor.startswith(".") else factor) * PAGE_LENGTHS_PT[m.group("name")]
    return f"{m.group('sign')}{value:g}pt"


# \mskip.3\thinmuskip: a multiple of a math spacing register, which KaTeX cannot read, in mu (3, 4 and 5 mu)
_MUSKIP = re.compile(r"\\(mskip|mkern|hskip|kern)\s*(-?)\s*(\d*\.?\d*)\s*\\(thin|med|thick)muskip(?![A-Za-z@])")
_MU = {"thin": 3, "med": 4, "thick": 5}


def register_spacing(text: str) -> str:
    """``\\mskip.3\\thinmuskip`` (a multiple of a spacing register) -> ``\\mskip0.9mu``: sizes KaTeX reads."""
    return _MUSKIP.sub(_muskip, text) if "muskip" in text else text


def _muskip(m: re.Match[str]) -> str:
    factor = float(m.group(3)) if m.group(3) not in ("", ".") else 1.0
    command = "mkern" if m.group(1) in ("mkern", "kern") else "mskip"
    return f"\\{command}{m.group(2)}{factor * _MU[m.group(4)]:g}mu "
