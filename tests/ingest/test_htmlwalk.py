"""One display's or inline formula's source text split into its body and delimiters."""

from __future__ import annotations

import pytest
from eqsearch.ingest.htmlwalk import split_display, split_inline


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\\[a\\]", ("a", "\\[")),
        ("$$ a $$", ("a", "$$")),
        ("\\begin{align*} a &= b \\end{align*}.", ("a &= b", "align*")),
        ("\\begin{align} a \\end{align} \\begin{align} b \\end{align}", (
            "\\begin{align} a \\end{align} \\begin{align} b \\end{align}", "\\[")),
        ("\\[a\\] and \\[b\\]", ("\\[a\\] and \\[b\\]", "\\[")),
        ("\\begin{split} a \\\\ b \\end{split}", ("\\begin{split} a \\\\ b \\end{split}", "\\[")),
        ("x^2", ("x^2", "\\[")),
    ],
)  # fmt: skip
def test_split_display(raw, expected):
    assert split_display(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("$a+b$", ("a+b", "$")),
        (" $ |x| $ ", ("|x|", "$")),
        ("\\(a\\)", ("a", "\\(")),
        ("a^2", ("a^2", "\\(")),
        ("$a$ and $b$", ("$a$ and $b$", "\\(")),  # not one formula: left as it is
        ("\\(\\ \\star\\ \\)", ("\\ \\star", "\\(")),  # a trailing control space goes, not half of it (sasmodels)
        ("\\(a\\\\ \\)", ("a\\\\", "\\(")),  # a line break does not
    ],
)
def test_split_inline(raw, expected):
    assert split_inline(raw) == expected
