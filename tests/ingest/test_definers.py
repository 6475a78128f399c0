"""The commands that define macros and a document's own names for them (ingest/definers.py), through extraction."""

from eqsearch.ingest.macros import extract_macros


def test_user_names_for_definers():
    table = extract_macros(
        r"\newcommand{\nc}{\newcommand}\nc{\rnc}{\renewcommand}\let\ddef\def"
        r"\nc{\vev}[1]{\langle#1\rangle}\rnc{\vec}[1]{\mathbf{#1}}\ddef\x{y}"
    )
    m = table.macros
    assert (m["\\vev"].nargs, m["\\vev"].source) == (1, "newcommand")
    assert m["\\vec"].source == "renewcommand" and m["\\x"].body == "y"
