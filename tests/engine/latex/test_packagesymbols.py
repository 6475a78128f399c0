"""The symbol names packages spell out (`engine.latex.packagesymbols`), as the fallback table uses them."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.packages import PACKAGE_MACROS
from eqsearch.engine.latex.packagesymbols import CAPITAL_GREEK, GLYPHS, GREEK, PARTICLES, TEXTCOMP, UNITS


def test_every_name_is_in_the_fallback_table():
    assert {f"\\up{g}" for g in GREEK} <= PACKAGE_MACROS.keys()
    assert {f"\\Up{g[0].lower()}{g[1:]}" for g in CAPITAL_GREEK} <= PACKAGE_MACROS.keys()
    assert {f"\\{name}" for name in PARTICLES} <= PACKAGE_MACROS.keys()
    assert {f"\\text{name}" for name in TEXTCOMP} <= PACKAGE_MACROS.keys()
    assert {f"\\{name}" for name in GLYPHS} <= PACKAGE_MACROS.keys()


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        ("\\upalpha + \\Upomega", ("α", "Ω")),
        ("\\Pem \\to \\Pgn", ("e", "ν")),
        ("\\textonehalf x", ("½",)),
        ("\\Acute{x} + \\DH", ("Ð",)),
    ],
)
def test_package_symbols_convert_with_real_katex(converter, latex, expected):
    result = converter.convert(latex, "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    for part in expected:
        assert part in result.mathml, (part, result.mathml)


def test_unit_words_are_what_siunitx_prints():
    assert (UNITS["kilo"], UNITS["metre"], UNITS["ohm"]) == ("k", "m", "\\Omega")
    assert all(name.isalpha() and value for name, value in UNITS.items())
