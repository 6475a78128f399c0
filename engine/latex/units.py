"""siunitx's abbreviated units (``\\SI{1e-5}{\\m\\squared\\per\\s}``), read where siunitx reads them.

`engine.latex.packages` gives ``\\SI``, ``\\si``, ``\\unit`` and the long unit names (``\\metre``, ``\\per``,
``\\squared``) as macros KaTeX can take. The abbreviations (``\\m``, ``\\s``, ``\\kg``, ``\\GeV``, ``\\um``) exist only
inside a unit argument: as global macros they would give a meaning to a name a paper leaves undefined elsewhere. So
`unit_rule`, a rule of `engine.latex.preprocess.clean_latex`, writes them out as their letters in the unit argument
of ``\\SI``, ``\\si``, ``\\unit``, ``\\SIrange``, ``\\SIlist`` and ``\\qtyrange``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eqsearch.engine.latex.scan import read_argument, read_optional

__all__ = ["ABBREVIATIONS", "unit_rule"]

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
    "F": ("f", "p"),
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
_ABBREVIATION = re.compile(r"\\(" + "|".join(sorted(ABBREVIATIONS, key=len, reverse=True)) + r")(?![A-Za-z@])\s*")
#: the command -> how many mandatory arguments come before the unit argument
_UNIT_ARGUMENT = {"SI": 1, "si": 0, "unit": 0, "SIrange": 2, "qtyrange": 2, "SIlist": 1}


def unit_rule(command: str) -> Callable[[str, int], tuple[str, int]]:
    """The rule of ``\\command`` (one of ``SI``, ``si``, ``unit``, ``SIrange``, ``qtyrange``, ``SIlist``): given the
    text and the offset past the command, the command with its unit argument's abbreviations written out, and where
    to resume."""
    before = _UNIT_ARGUMENT[command]

    def rule(text: str, end: int) -> tuple[str, int]:
        option, pos = read_optional(text, end)
        args: list[str] = []
        for _ in range(before + 1):
            arg = read_argument(text, pos)
            if arg is None:
                return f"\\{command}", end
            args.append(arg[0])
            pos = arg[1]
        args[-1] = _ABBREVIATION.sub(_written_out, args[-1])
        return f"\\{command}" + ("" if option is None else f"[{option}]") + "".join(f"{{{a}}}" for a in args), pos

    return rule


def _written_out(m: re.Match[str]) -> str:
    # units side by side get siunitx's thin space (\m\s is metre second, not millisecond)
    return ("\\," if m.string[: m.start()].strip() else "") + ABBREVIATIONS[m.group(1)]
