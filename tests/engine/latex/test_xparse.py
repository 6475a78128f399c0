"""xparse argument types read and written back, and conditionals decided only when their test is known."""

import pytest
from eqsearch.engine.latex.xparse import format_argument_spec, parse_argument_spec, resolve_conditionals


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("s o m", [("s", ""), ("o", ""), ("m", "")]),
        ("som", [("s", ""), ("o", ""), ("m", "")]),
        ("O{1} m", [("O", "1"), ("m", "")]),
        ("m O{\\alpha}", [("m", ""), ("O", "\\alpha")]),
        ("t* m", [("t", "*"), ("m", "")]),
        ("r() m", [("r", "()"), ("m", "")]),
        ("D(){x} m", [("r", "()"), ("m", "")]),
        ("+m g", [("m", ""), ("g", "")]),
        ("u{\\eeas}", [("u", "\\eeas")]),
        ("v", [("m", "")]),
        ("a", [("a", "")]),
    ],
)
def test_argument_specs(spec, parsed):
    assert parse_argument_spec(spec) == parsed
    assert parse_argument_spec(format_argument_spec(parsed)) == parsed


def test_conditionals_left_alone_when_their_test_is_not_known():
    assert resolve_conditionals("\\IfBooleanTF{#1}{a}{b}") == "\\IfBooleanTF{#1}{a}{b}"
    assert resolve_conditionals("\\IfValueT{x}{yes}") == "yes"
    assert resolve_conditionals("\\IfNoValueF{-NoValue-}{no}") == ""
