from eqsearch.engine.latex.scan import document_body, read_argument, read_optional, strip_comments, strip_sweave


def test_percent_comment_eats_line_end_and_next_indent():
    assert strip_comments("foo% comment\n   bar") == "foobar"
    assert strip_comments("a %c\n\nb") == "a \nb"  # the blank line (paragraph) survives


def test_escaped_percent_is_text_and_escaped_backslash_is_not_an_escape():
    assert strip_comments(r"50\% off") == r"50\% off"
    assert strip_comments("a\\\\% gone\nb") == "a\\\\b"


def test_verbatim_like_environments_and_verb_are_removed():
    text = (
        "x \\begin{verbatim}\\begin{equation}1\\end{equation} % not a comment\\end{verbatim} y "
        "\\begin{lstlisting}$$ z $$\\end{lstlisting} \\begin{minted}{python}a%b\\end{minted} "
        "\\begin{comment}\\[ q \\]\\end{comment} \\verb|$%| w"
    )
    out = strip_comments(text)
    assert "equation" not in out and "$$" not in out and "\\[" not in out and "\\verb" not in out
    assert out.startswith("x ") and out.endswith(" w")


def test_iffalse_block_is_skipped_with_nested_conditionals():
    out = strip_comments("a \\iffalse \\ifx\\a\\b x\\fi hidden \\fi b")
    assert out == "a  b"


def test_custom_verbatim_environment_from_preamble():
    from eqsearch.engine.latex.scan import verbatim_environments

    names = verbatim_environments("\\DefineVerbatimEnvironment{code}{Verbatim}{}")
    assert "code" in names
    assert "$$" not in strip_comments("\\begin{code}$$x$$\\end{code}", names)


def test_sweave_chunks_removed():
    text = "Text\n<<fit, echo=TRUE>>=\nm$coef\n@\nmore \\Sexpr{m$x} end"
    assert strip_sweave(text) == "Text\n\n\nmore  end"


def test_arguments():
    assert read_argument("  {a{b}c} rest", 0) == ("a{b}c", 9)
    assert read_argument("\\foo bar", 0) == ("\\foo", 4)
    assert read_optional(" [x{]}] y", 0) == ("x{]}", 7)  # as LaTeX: the first ] outside braces ends it
    assert read_optional("{no}", 0) == (None, 0)


def test_document_body_split():
    pre, body, offset = document_body("\\documentclass{a}\\begin{document}B\\end{document}tail")
    assert pre == "\\documentclass{a}" and body == "B" and offset == len("\\documentclass{a}\\begin{document}")
