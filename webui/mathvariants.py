"""``mathvariant`` as Unicode: ``<mi mathvariant="double-struck">R</mi>`` becomes ``<mi>ℝ</mi>``.

KaTeX writes ``\\mathbb{R}``, ``\\mathbf{x}``, ``\\mathcal{L}`` as a ``mathvariant`` attribute, which MathML Core (what
Chromium implements) ignores on all values but ``normal``: the reader would see a plain R for the reals. The Unicode
Mathematical Alphanumeric Symbols block has the styled letters themselves, and an OpenType MATH font such as Latin
Modern Math draws them; so the sanitiser writes the letters and drops the attribute. Letters of a style the
block lacks (a bold ``∂``) stay as they are.
"""

from __future__ import annotations

# style -> (first capital A, first small a, first digit 0 or None); the Unicode block's layout (UTS #25, table 2.2).
_STARTS: dict[str, tuple[int, int, int | None]] = {
    "bold": (0x1D400, 0x1D41A, 0x1D7CE),
    "italic": (0x1D434, 0x1D44E, None),
    "bold-italic": (0x1D468, 0x1D482, None),
    "script": (0x1D49C, 0x1D4B6, None),
    "bold-script": (0x1D4D0, 0x1D4EA, None),
    "fraktur": (0x1D504, 0x1D51E, None),
    "double-struck": (0x1D538, 0x1D552, 0x1D7D8),
    "bold-fraktur": (0x1D56C, 0x1D586, None),
    "sans-serif": (0x1D5A0, 0x1D5BA, 0x1D7E2),
    "bold-sans-serif": (0x1D5D4, 0x1D5EE, 0x1D7EC),
    "sans-serif-italic": (0x1D608, 0x1D622, None),
    "sans-serif-bold-italic": (0x1D63C, 0x1D656, None),
    "monospace": (0x1D670, 0x1D68A, 0x1D7F6),
}
# The letters that were in Unicode before the block (its slots for them are unassigned).
_HOLES = {
    "italic": {"h": "\u210e"},
    "script": dict(zip("BEFHILMRego", "ℬℰℱℋℐℒℳℛℯℊℴ", strict=True)),
    "fraktur": dict(zip("CHIRZ", "ℭℌℑℜℨ", strict=True)),
    "double-struck": dict(zip("CHNPQRZ", "ℂℍℕℙℚℝℤ", strict=True)),
}
# Greek (capital Alpha..Omega, small alpha..omega) in the styles that have it.
_GREEK = {"bold": (0x1D6A8, 0x1D6C2), "italic": (0x1D6E2, 0x1D6FC), "bold-italic": (0x1D71C, 0x1D736)}

#: The ``mathvariant`` values written as Unicode letters.
STYLES = frozenset(_STARTS)


def styled(text: str, variant: str) -> str:
    """`text` with its Latin letters, digits and (in bold and italic styles) Greek letters in `variant`."""
    starts = _STARTS.get(variant)
    if starts is None:
        return text
    capital, small, digit = starts
    holes = _HOLES.get(variant, {})
    greek = _GREEK.get(variant)
    out = []
    for char in text:
        code = ord(char)
        if char in holes:
            out.append(holes[char])
        elif "A" <= char <= "Z":
            out.append(chr(capital + code - 0x41))
        elif "a" <= char <= "z":
            out.append(chr(small + code - 0x61))
        elif "0" <= char <= "9" and digit is not None:
            out.append(chr(digit + code - 0x30))
        elif greek and 0x391 <= code <= 0x3A9:
            out.append(chr(greek[0] + code - 0x391))
        elif greek and 0x3B1 <= code <= 0x3C9:
            out.append(chr(greek[1] + code - 0x3B1))
        else:
            out.append(char)
    return "".join(out)
