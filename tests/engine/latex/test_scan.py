"""The TeX scanner: comments and verbatim, then brace groups and arguments, one test per edge case."""

import time

from eqsearch.engine.latex.scan import (
    MAX_OPTIONAL_LENGTH,
    document_body,
    group_end,
    read_argument,
    read_arguments,
    read_optional,
    strip_comments,
    strip_sweave,
    verbatim_environments,
)


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
    names = verbatim_environments("\\DefineVerbatimEnvironment{code}{Verbatim}{}")
    assert "code" in names
    assert "$$" not in strip_comments("\\begin{code}$$x$$\\end{code}", names)


def test_sweave_chunks_removed():
    text = "Text\n<<fit, echo=TRUE>>=\nm$coef\n@\nmore \\Sexpr{m$x} end"
    assert strip_sweave(text) == "Text\n\n\nmore  end"


def test_document_body_split():
    pre, body, offset = document_body("\\documentclass{a}\\begin{document}B\\end{document}tail")
    assert pre == "\\documentclass{a}" and body == "B" and offset == len("\\documentclass{a}\\begin{document}")


# Brace groups


def test_group_end_is_just_past_the_matching_brace():
    assert group_end("{a{b}c} rest", 0) == 7
    assert group_end("{a{b}c} rest", 2) == 5


def test_group_end_escaped_braces_are_not_braces():
    assert group_end(r"{a\}b\{c}", 0) == 9


def test_group_end_line_break_before_a_brace_leaves_the_brace_a_brace():
    assert group_end(r"{a\\}b}", 0) == 5


def test_group_end_percent_is_an_ordinary_character():
    assert group_end("{a%}\n}", 0) == 4  # comments are removed before scanning


def test_group_end_is_none_when_the_group_never_closes():
    assert group_end("{a{b}c", 0) is None


def test_group_end_inside_an_unbalanced_group_is_still_found():
    text = "{ {a} {b"
    assert group_end(text, 0) is None
    assert group_end(text, 2) == 5
    assert group_end(text, 6) is None


def test_group_end_is_none_when_not_at_an_opening_brace():
    assert group_end("a{b}", 0) is None
    assert group_end("{b}", 3) is None
    assert group_end("{b}", -1) is None


def test_many_unbalanced_groups_cost_one_pass_not_one_each():
    text = "\\section{" * 20_000  # read naively, each argument scans to the end of the text
    start = time.monotonic()
    assert all(read_argument(text, i + len("\\section")) is None for i in range(0, len(text), len("\\section{")))
    assert time.monotonic() - start < 2.0


# Mandatory arguments


def test_argument_brace_group_without_its_braces():
    assert read_argument("{a{b}c} rest", 0) == ("a{b}c", 7)


def test_argument_spaces_tabs_and_line_ends_before_it_are_skipped():
    assert read_argument(" \t\n\n {x}", 0) == ("x", 8)


def test_argument_control_word_is_one_token():
    assert read_argument("\\foo bar", 0) == ("\\foo", 4)
    assert read_argument("\\my@cmd x", 0) == ("\\my@cmd", 7)  # @ is a letter, as in packages


def test_argument_control_symbol_is_one_token():
    assert read_argument("\\,x", 0) == ("\\,", 2)
    assert read_argument("\\\\x", 0) == ("\\\\", 2)


def test_argument_single_character_is_one_token():
    assert read_argument("ab", 0) == ("a", 1)


def test_argument_closing_brace_is_no_argument():
    assert read_argument("{x \\ref} y", 7) is None  # the } closes the outer group; taking it would unbalance it


def test_argument_end_of_text_is_no_argument():
    assert read_argument("x  \n", 1) is None
    assert read_argument("", 0) is None


def test_argument_unbalanced_group_is_no_argument():
    assert read_argument("{a{b}", 0) is None


def test_argument_lone_backslash_at_the_end_is_no_argument():
    assert read_argument("x\\", 1) is None


# Optional arguments


def test_arguments_stop_at_the_first_missing_one_and_end_past_the_last_read():
    assert read_arguments(r"\frac {a} b c", 5, 2) == (["a", "b"], 11)
    assert read_arguments(r"\x{a} } {b}", 2, 3) == (["a"], 5)  # the } closes an outer group: nothing after it
    assert read_arguments(r"\x", 2, 2) == ([], 2)
    assert read_arguments(r"\x{a}", 2, 0) == ([], 2)


def test_optional_content_and_end():
    assert read_optional(" [x] y", 0) == ("x", 4)


def test_optional_absent_returns_the_position_given():
    assert read_optional("  {no}", 0) == (None, 0)
    assert read_optional("", 0) == (None, 0)


def test_optional_closing_bracket_inside_braces_does_not_end_it():
    assert read_optional(" [x{]}] y", 0) == ("x{]}", 7)


def test_optional_first_closing_bracket_ends_it_even_when_nested():
    assert read_optional("[a[b]c]", 0) == ("a[b", 5)  # as LaTeX's \newcommand reads it


def test_optional_escaped_bracket_does_not_end_it():
    assert read_optional("[a\\]b]", 0) == ("a\\]b", 6)


def test_optional_line_break_then_bracket_ends_it():
    assert read_optional("[a\\\\]b]", 0) == ("a\\\\", 5)


def test_optional_unterminated_is_absent():
    assert read_optional("[abc", 0) == (None, 0)


def test_optional_longer_than_the_bound_is_absent():
    inside = "x" * (MAX_OPTIONAL_LENGTH - 2)
    assert read_optional(f"[{inside}]", 0) == (inside, MAX_OPTIONAL_LENGTH)
    assert read_optional(f"[{inside}x]", 0) == (None, 0)


def test_optional_closing_brace_before_the_bracket_is_absent():
    assert read_optional("{\\cite[a}] b", 6) == (None, 6)  # the } closes the outer group first


def test_optional_unbalanced_group_inside_is_absent():
    assert read_optional("[a{b]", 0) == (None, 0)


def test_document_body_ignores_delimiters_inside_brace_groups():
    text = (
        "\\newcommand{\\filestart}{\\ifsub\\begin{document}\\fi}\\newcommand{\\fileend}{\\ifsub\\end{document}\\fi}"
        "\\begin{document}body\\end{document}"
    )
    preamble, body, offset = document_body(text)
    assert body == "body" and preamble.endswith("\\fi}") and text[offset:].startswith("body")
