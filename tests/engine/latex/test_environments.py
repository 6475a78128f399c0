"""A display environment's body as one KaTeX expression (engine/latex/environments.py), as pure text functions."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.environments import wrap_environment


@pytest.mark.parametrize(
    ("body", "environment", "expected"),
    [
        (r"a &= b \\ c &= d", "align", r"\begin{aligned}a &= b \\ c &= d\end{aligned}"),
        (r"a &= b \\ c &= d \\", "align*", r"\begin{aligned}a &= b \\ c &= d\end{aligned}"),
        (r"a &= b & c &= d", "flalign*", r"\begin{aligned}a &= b & c &= d\end{aligned}"),
        (r"{2} a &= b & c &= d", "alignat", r"\begin{alignedat}{2} a &= b & c &= d\end{alignedat}"),
        (r"a &= b & c &= d", "alignat*", r"\begin{alignedat}{2}a &= b & c &= d\end{alignedat}"),
        (r"a \\ b", "gather*", r"\begin{gathered}a \\ b\end{gathered}"),
        (r"a + b \\ + c", "multline", r"\begin{gathered}a + b \\ + c\end{gathered}"),
        (r"a", "gather", "a"),
        (r"a &=& b \\ c &=& d", "eqnarray*", r"\begin{array}{rcl}a &=& b \\ c &=& d\end{array}"),
        (r"a &= b", "equation", r"\begin{aligned}a &= b\end{aligned}"),
        (r"a \\ b", "$$", r"\begin{aligned}a \\ b\end{aligned}"),
        (r"a \\ b", "\\[", r"\begin{aligned}a \\ b\end{aligned}"),
        (r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}", "equation", r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}"),
        (r"\begin{split} a &= b \\ &= c \end{split}", "equation*", r"\begin{split} a &= b \\ &= c \end{split}"),
        (r"\substack{a \\ b}", "equation", r"\substack{a \\ b}"),
        (r"x = 1", "displaymath", "x = 1"),
        (r"x = 1", "dmath", "x = 1"),
        (r"a + b \\ + c", "dmath*", r"\begin{gathered}a + b \\ + c\end{gathered}"),
        (r"a & = & b", "darray", r"\begin{array}{lll}a & = & b\end{array}"),
        (r"x = 1 \\", "equation", "x = 1"),
    ],
)
def test_wrap_environment(body, environment, expected):
    assert wrap_environment(body, environment) == expected
