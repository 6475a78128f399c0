"""siunitx's abbreviated units (``\\SI{1e-5}{\\m\\squared\\per\\s}``), read where siunitx reads them.

`engine.latex.packages` gives ``\\SI``, ``\\si``, ``\\unit`` and the long unit names (``\\metre``, ``\\per``,
``\\squared``) as macros KaTeX can take. The abbreviations (``\\m``, ``\\s``, ``\\kg``, ``\\GeV``, ``\\um``) exist only
inside a unit argument: as global macros they would give a meaning to a name a paper leaves undefined elsewhere. So
`unit_rule`, a rule of `engine.latex.preprocess.clean_latex`, writes them out as their letters in the unit argument
of ``\\SI``, ``\\si``, ``\\unit``, ``\\SIrange``, ``\\SIlist`` and ``\\qtyrange``, and of siunitx 3's
``\\qty{441}{\\nm}`` (two brace groups: physics' ``\\qty(x)`` and ``\\qty{x}`` are left alone), its options dropped. The
unit names siunitx defines only there (``\\deci\\bel``, ``\\siemens``, ``\\hecto\\Pa``, ``\\day``) and its power
``\\tothe{2}`` are written out there too. Only a braced argument is siunitx's: a document that defines ``\\unit``
for itself (``\\newcommand{\\unit}{\\mathbf{1}}``, the unit type) writes it before ``:`` or ``$``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eqsearch.engine.latex.scan import read_argument, read_optional, skip_space

__all__ = ["ABBREVIATIONS", "LOCAL_NAMES", "unit_rule"]

_PREFIXES = {"f": "f", "p": "p", "n": "n", "u": "\\mu ", "m": "m", "c": "c", "d": "d", "k": "k", "M": "M", "G": "G"}
_PREFIXED: dict[str, tuple[str, str]] = {
    # unit letters -> the prefixes siunitx abbreviates with it
    "g": ("f", "p", "n", "u", "m", "k"),
    "m": ("p", "n", "u", "m", "c", "d", "k"),
    "s": ("f", "p", "n", "u", "m"),
    "mol": ("f", "p", "n", "u", "m", "k"),
    "A": ("p", "n", "u", "m", "k"),
    "l": ("u", "m"),
    "L": ("u", "m"),
    "Hz": ("m", "k", "M", "G"),
    "N": ("m", "k", "M"),
    "Pa": ("k", "M", "G"),
    "V": ("p", "n", "u", "m", "k"),
    "W": ("u", "m", "k", "M", "G"),
    "J": ("u", "m", "k"),
    "eV": ("m", "k", "M", "G"),
    "F": ("f", "p", "n", "u", "m"),
}
#: abbreviation (without the backslash) -> what it prints, in the unit argument's upright letters
ABBREVIATIONS: dict[str, str] = {
    **{unit: unit for unit in _PREFIXED if unit not in ("l", "L")},
    **{f"{prefix}{unit}": _PREFIXES[prefix] + unit for unit, prefixes in _PREFIXED.items() for prefix in prefixes},
    "ohm": "\\Omega",
    "mohm": "m\\Omega",
    "kohm": "k\\Omega",
    "Mohm": "M\\Omega",
    "THz": "THz",
    "TeV": "TeV",
    "kWh": "kWh",
    "K": "K",
    "dB": "dB",
    "hl": "hl",
    "hL": "hL",
    "pm": "pm",  # picometre: \pm means it only in a unit argument
}
#: unit and prefix names siunitx defines only inside a unit argument, beside the global ones of
#: `engine.latex.packagesymbols.UNITS` (``\\day`` or ``\\bit`` elsewhere in a formula is the document's own)
LOCAL_NAMES: dict[str, str] = {
    "siemens": "S",
    "coulomb": "C",
    "farad": "F",
    "henry": "H",
    "weber": "Wb",
    "becquerel": "Bq",
    "gray": "Gy",
    "sievert": "Sv",
    "lumen": "lm",
    "lux": "lx",
    "candela": "cd",
    "radian": "rad",
    "steradian": "sr",
    "minute": "min",
    "day": "d",
    "bit": "bit",
    "byte": "B",
    "decibel": "dB",
    "bel": "B",
    "deci": "d",
    "hecto": "h",
    "deca": "da",
    "tera": "T",
    "peta": "P",
    "pico": "p",
    "femto": "f",
    "atto": "a",
    "astronomicalunit": "au",
    "dalton": "Da",
    "hectare": "ha",
    "tonne": "t",
}
_WRITTEN = {**LOCAL_NAMES, **ABBREVIATIONS}
_ABBREVIATION = re.compile(r"\\(" + "|".join(sorted(_WRITTEN, key=len, reverse=True)) + r")(?![A-Za-z@])\s*")
_TOTHE = re.compile(r"\\tothe(?![A-Za-z@])\s*")
#: the command -> how many mandatory arguments come before the unit argument
_UNIT_ARGUMENT = {
    "SI": 1,
    "si": 0,
    "unit": 0,
    "SIrange": 2,
    "qtyrange": 2,
    "SIlist": 1,
    "qty": 1,
    "qtylist": 1,
    "qtyproduct": 1,
}
#: siunitx 3's commands whose name physics (or a document) may use otherwise: read only with both brace groups, the
#: option dropped (``\\qty[per-mode = symbol]{6.7}{\\uA\\per\\A}``; the table's ``\\qty`` reads two groups as a
#: quantity)
_QUANTITY = frozenset({"qty"})


def unit_rule(command: str) -> Callable[[str, int], tuple[str, int]]:
    """The rule of ``\\command`` (one of ``SI``, ``si``, ``unit``, ``SIrange``, ``qtyrange``, ``SIlist``): given the
    text and the offset past the command, the command with its unit argument's abbreviations written out, and where
    to resume."""
    before = _UNIT_ARGUMENT[command]

    def rule(text: str, end: int) -> tuple[str, int]:
        option, pos = read_optional(text, end)
        args: list[str] = []
        for _ in range(before + 1):
            if not text.startswith("{", skip_space(text, pos)):
                # physics' \qty(x), \qty[x], \qty|x|; a document's own \unit (a type, a vector) before a token
                return f"\\{command}", end
            arg = read_argument(text, pos)
            if arg is None:
                return f"\\{command}", end
            args.append(arg[0])
            pos = arg[1]
        args[-1] = _TOTHE.sub("^", _ABBREVIATION.sub(_written_out, args[-1]))
        if command in _QUANTITY:
            option = None
        return f"\\{command}" + ("" if option is None else f"[{option}]") + "".join(f"{{{a}}}" for a in args), pos

    return rule


def _written_out(m: re.Match[str]) -> str:
    # units side by side get siunitx's thin space (\m\s is metre second, not millisecond)
    return ("\\," if m.string[: m.start()].strip() else "") + _WRITTEN[m.group(1)]
