import pytest
from eqsearch.ingest.mathenv import DISPLAY_ENVIRONMENTS, find_displays, labels_in, scan_math


@pytest.mark.parametrize("name", sorted(DISPLAY_ENVIRONMENTS))
@pytest.mark.parametrize("star", ["", "*"])
def test_every_environment_and_its_starred_form(name, star):
    args = "{2}" * DISPLAY_ENVIRONMENTS[name]
    found = find_displays(f"text \\begin{{{name}{star}}}{args} a=b \\end{{{name}{star}}} more")
    assert [(d.environment, d.body.strip()) for d in found] == [(name + star, "a=b")]
    assert list(found[0].args) == ["2"] * DISPLAY_ENVIRONMENTS[name]


def test_environment_arguments_are_brace_groups():
    found = find_displays(r"\begin{IEEEeqnarray}{r{}C\}l} a \end{IEEEeqnarray} \begin{alignat} 2 b \end{alignat}")
    assert [(d.args, d.body) for d in found] == [(("r{}C\\}l",), " a "), ((), " 2 b ")]  # a lone token is body


def test_brackets_and_double_dollars():
    found = find_displays(r"a \[ x \\[2pt] y \] b $$ z $$ c")
    assert [(d.environment, d.body) for d in found] == [("\\[", r" x \\[2pt] y "), ("$$", " z ")]


def test_nested_environments_are_extracted_once_with_the_outer_one():
    text = (
        r"\begin{equation}\begin{split}a&=b\\c&=d\end{split}\end{equation}"
        r"\[\begin{aligned}x&=y\end{aligned}\] $$\begin{array}{c}1\end{array}$$"
        r"\begin{subequations}\begin{align}p\end{align}\end{subequations}"
        r"\begin{equation}\begin{equation}inner\end{equation}\end{equation}"
    )
    envs = [d.environment for d in find_displays(text)]
    assert envs == ["equation", "\\[", "$$", "align", "equation"]


def test_inline_math_and_escapes_are_not_displays():
    text = r"cost \$5 and \$6, inline $a$$b$ and \(c\) and $x \$ y$ end"
    assert find_displays(text) == []


def test_unclosed_inline_dollar_stops_at_paragraph():
    found = find_displays("an $ unclosed\n\nthen $$ d $$")
    assert [d.body for d in found] == [" d "]


def test_unterminated_display_is_returned_as_such():
    found = find_displays("\\begin{align} a &= b\n\nnext paragraph \\[ c \\]")
    assert not found[0].terminated and found[0].body.strip() == "a &= b"
    assert found[1].body == " c " and found[1].terminated


def test_labels():
    assert labels_in(r"a \label{eq:1} \\ b \label{ eq:2 }") == ["eq:1", "eq:2"]


def test_inline_formulas_are_recorded_with_their_delimiters():
    text = r"cost \$5, $a$ and \(b\) and \begin{math}c\end{math}, $x \$ y$; \[ d \] $$ e $$ an $ unclosed" + "\n\nend"
    displays, inline = scan_math(text)
    assert [d.environment for d in displays] == ["\\[", "$$"]
    assert [(i.body, i.delimiter) for i in inline] == [("a", "$"), ("b", "\\("), ("c", "math"), (r"x \$ y", "$")]
    assert all(text[i.start : i.end].endswith(("$", "\\)", "\\end{math}")) for i in inline)


def test_breqn_optional_argument_and_dgroup():
    found = find_displays(
        r"\begin{dgroup}[compact]\begin{dmath}[label=a] x \end{dmath}\begin{dmath*} y \end{dmath*}\end{dgroup}"
    )
    assert [(d.environment, d.body) for d in found] == [("dmath", " x "), ("dmath*", " y ")]


def test_double_dollars_in_a_table_cell_are_empty_formulas_not_displays():
    """A simplex tableau of lecture notes writes empty cells as ``$$``: TeX reads a cell in restricted horizontal
    mode, where ``$$`` is an empty formula; outside the table it is a display again."""
    text = (
        "\\begin{tabular}{|l|c c|} $x_3$ & $5$ & $$ \\\\ $x_4$ & $$ & $1$ \\\\ \\end{tabular}\n"
        "then $$ z = 8x + 6y $$ and \\begin{tabularx}{5cm}{cc} $$ & $$ \\end{tabularx}"
    )
    displays, inline = scan_math(text)
    assert [d.body.strip() for d in displays] == ["z = 8x + 6y"]
    assert [i.body for i in inline] == ["x_3", "5", "x_4", "1"]


def test_dollar_pairs_in_tikz_node_texts_are_empty_formulas_not_displays():
    """An econometrics paper's vine diagram: ``node {$$}`` in a ``tikzpicture``; the displays after it stay whole."""
    body = (
        "\\begin{tikzpicture}\\path (2) edge node (2T-1) {$$} (T-1); (23T) edge node {$$} (T);\\end{tikzpicture}"
        " and then $$a = b$$ and \\begin{equation}c\\end{equation}"
    )
    displays, _ = scan_math(body)
    assert [d.body for d in displays] == ["a = b", "c"]


def test_a_display_written_in_a_definitions_body_is_not_a_display():
    """A thesis's grammar macro redefines a helper inside its body (``\\renewcommand{\\tab}[1]{\\begin{align*}##1
    \\end{align*}}``): set where the macro is used, not where the definition is written."""
    text = (
        "\\NewDocumentCommand{\\cg}{mm}{ \\renewcommand{\\tab}[1]{\\begin{align*}##1\\end{align*}} \\tab{#2} }"
        " and \\begin{equation} x \\end{equation} \\def\\f#1{\\[#1\\]} \\newcommand{\\g}[1]{$$#1$$} \\[ y \\]"
    )
    assert [(d.environment, d.body) for d in find_displays(text)] == [("equation", " x "), ("\\[", " y ")]
