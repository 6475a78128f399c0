"""Macros that open or close displays, expanded in the text before math is searched."""

import pytest
from eqsearch.ingest.displaymacros import expand_display_macros, has_display_delimiter
from eqsearch.ingest.errors import DocumentTooLargeError
from eqsearch.ingest.macros import extract_macros


@pytest.mark.parametrize(
    ("body", "display"),
    [
        (r"\begin{equation}", True),
        (r"\end{align*}", True),
        (r"\begin{subequations}", True),
        (r"\begin{dgroup}", True),
        (r"\[", True),
        (r"\]", True),
        ("$$", True),
        (r"\equation", True),
        (r"\endeqnarray", True),
        (r"\\[2pt]", False),  # a line break with its spacing
        (r"\left[ x \right]", False),
        (r"\begin{pmatrix}", False),
        (r"\mathbb{R}", False),
        (r"\equationref", False),
    ],
)
def test_display_delimiters(body, display):
    assert has_display_delimiter(body) is display


def test_every_kind_of_display_macro_moves_out_of_the_converters_macros():
    table = extract_macros(
        r"""\def\be{\begin{equation}}\def\ee{\end{equation}}\let\beq\equation\let\eeq\endequation
        \def\beas#1\eeas{\begin{eqnarray*}#1\end{eqnarray*}}\newcommand{\al}[1]{\begin{align}#1\end{align}}
        \def\bal{\be\begin{aligned}}\def\eal{\end{aligned}\ee}
        \NewDocumentCommand{\eq}{s m}{\IfBooleanTF{#1}{\[#2\]}{\be #2\ee}}
        \newcommand{\R}{\mathbb{R}}\newcommand{\nl}{\\[2pt]}"""
    )
    assert set(table.display) == {"\\be", "\\ee", "\\beq", "\\eeq", "\\beas", "\\al", "\\bal", "\\eal", "\\eq"}
    assert set(table.macros) == {"\\R", "\\nl"}
    assert table.display["\\beq"].body == "\\begin{equation}"  # \let of the environment's own command
    expanded = expand_display_macros(
        r"\be a\ee \beq b\eeq \beas c \\ d\eeas \al{e &= f} \bal g \eal \eq*{h} \eq{i} \bealpha", table.display
    )
    assert expanded == (
        r"\begin{equation} a\end{equation} \begin{equation} b\end{equation} \begin{eqnarray*} c \\ d\end{eqnarray*} "
        r"\begin{align}e &= f\end{align} \begin{equation}\begin{aligned} g \end{aligned}\end{equation} \[h\] "
        r"\begin{equation} i\end{equation} \bealpha"
    )


def test_a_space_keeps_a_control_word_from_gluing_onto_a_letter():
    table = extract_macros(r"\def\bx{\begin{equation}\alpha}")
    assert expand_display_macros(r"\bx x\end{equation}", table.display) == r"\begin{equation}\alpha x\end{equation}"


def test_a_display_macro_bomb_stops_with_a_clear_error():
    table = extract_macros(r"\def\a{\be\be\be\be\be\be\be\be}\def\be{\begin{equation}\ee}\def\ee{\end{equation}}")
    text = r"\a" * 2000
    with pytest.raises(DocumentTooLargeError):
        expand_display_macros(text, table.display, max_chars=100_000)
