"""LaTeX prose to text: titles read once and on one line, contexts with their inline math."""

import pytest
from eqsearch.ingest.plaintext import latex_to_text, title_text


@pytest.mark.parametrize(
    ("latex", "title"),
    [
        (
            r"\texorpdfstring{Simulating the rescaled process}{Simulating the rescaled process}",
            "Simulating the rescaled process",
        ),
        (r"\texorpdfstring{$\alpha$-stable}{alpha-stable}\\ laws", r"$\alpha$-stable laws"),
        ("Additional conclique-based Gibbs\nstrategies", "Additional conclique-based Gibbs strategies"),
        (r"\protect\hyperlink{sec:x}{Results}", "Results"),
        (r"Heat kernels\thanks{Funded by X}\label{sec:a}", "Heat kernels"),
        (r"A\footnote{a note} B\markboth{A}{B}", "A B"),
        (r"Model\index{model}", "Model"),
    ],
)
def test_title_text(latex, title):
    assert title_text(latex) == title


def test_context_keeps_inline_math_and_drops_line_break_spacing():
    assert latex_to_text(r"a \\[2pt] b $x$ c \(y\) \[ z \] d") == "a\nb $x$ c $y$ [math] d"
