"""xparse argument types read and written back, and conditionals decided only when their test is known."""

import pytest
from eqsearch.engine.latex.macros import MacroDef
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


def test_a_decided_branch_after_a_control_word_stays_a_token_of_its_own(converter):
    """physics' ``\\var{h(0,s)}`` (``\\delta\\IfNoValueF{#1}{^{#1}}\\IfNoValueF{#2}{#2}``): the branch kept after
    ``\\delta`` is its own token, never ``\\deltah``."""
    assert (
        resolve_conditionals("\\delta\\IfNoValueF{-NoValue-}{^{-NoValue-}}\\IfNoValueF{h(0)}{h(0)}") == "\\delta h(0)"
    )
    assert resolve_conditionals("\\delta\\IfNoValueF{2}{^{2}}\\IfNoValueF{h}{h}") == "\\delta^{2}h"
    var = MacroDef("\\var", "\\delta\\IfNoValueF{#1}{^{#1}}\\IfNoValueF{#2}{#2}", 2, source="package", spec="o g")
    result = converter.convert("\\var{h\\Big(0,s\\Big)}", macros=[var])
    assert result.status == "ok", result.message
    assert "<mi>δ</mi><mi>h</mi>" in result.mathml
