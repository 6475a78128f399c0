"""Pre-processing rules and macro handling, as pure text functions (no KaTeX needed)."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex.macros import MacroDef, MacroExpansionError, build_katex_macros, expand_macros
from eqsearch.engine.latex.preprocess import clean_latex, preprocess_latex


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        (r"x \label{eq:1} = 1", r"x  = 1"),
        (r"x = 1 \tag{3.1}", r"x = 1 "),
        (r"x = 1 \tag*{A}", r"x = 1 "),
        (r"x \nonumber \\ y \notag", r"x  \\ y "),
        (r"\text{by } \eqref{eq:a} and \ref{b}", r"\text{by } \text{(?)} and \text{(?)}"),
        (r"\cite[p.~3]{knuth}", r"\text{[?]}"),
        (r"\citep{a,b}", r"\text{[?]}"),
        (r"\mbox{if } x", r"\text{if } x"),
        (r"\mathbbm{1} + \mathds{E}", r"\mathbb{1} + \mathbb{E}"),
        (r"a \hfill b", r"a  b"),
        (r"a \vspace{2mm} b \vspace*{1em}", r"a  b "),
        (r"\boldmath x \unboldmath", r" x "),
        (r"x % a comment \label{no}" + "\n+ y", "x \n+ y"),
        (r"50\% \\% comment", r"50\% \\"),
        (r"a \\label{x}", r"a \\label{x}"),  # a line break, then the letters "label"
        (r"x \eqno(1)", r"x "),
        (r"\pmatrix{a & b \cr c & d}", r"\begin{pmatrix}a & b \\ c & d\end{pmatrix}"),
        (r"\intertext{and} y", r"\text{and} y"),
        (r"\displaybreak[0] x", r" x"),
        (r"\mbox x", r"\text x"),
        (r"\mboxes", r"\mboxes"),  # another macro that merely starts with a rule's name
        (r"{x \ref} y", r"{x \text{(?)}} y"),  # a } is no argument: the braces stay balanced
        (r"{\displaybreak[a} b]", r"{[a} b]"),  # nor are brackets that a } interrupts an optional argument
        # layout only: dropped
        (r"a \xspace b \qedhere", r"a  b "),
        (r"x \null \strut y", r"x   y"),
        (r"\addtocounter{equation}{-1} x \setcounter{a}{2}", r" x "),
        (r"\belowdisplayshortskip=0pt x \abovedisplayskip 3pt plus 1pt", r" x "),
        (r"\cref{sec:a} \Cref{b}", r"\text{(?)} \text{(?)}"),
        (r"\renewcommand{\baselinestretch}{1.5}\small x", r"\small x"),
        (r"\renewcommand{\arraystretch}{2} x", r"\renewcommand{\arraystretch}{2} x"),  # KaTeX knows this one
        (r"\setlength{\jot}{2pt} \addtolength{\x}{1pt} \linespread{2} x", r"   x"),
        # breqn
        (r"u \hiderel{=} v", r"u {=} v"),
        (r"f \condition{for $x>0$}", r"f ,\quad \text{for $x>0$}"),
        (r"f \condition[;]{if $x$}", r"f ;\quad \text{if $x$}"),
    ],
)
def test_clean_latex_rules(latex, expected):
    assert clean_latex(latex) == expected


def test_clean_latex_leaves_plain_math_alone():
    text = r"\int_0^1 f(x)\,dx = \frac{a}{b}"
    assert clean_latex(text) is text


def test_preprocess_cleans_before_wrapping():
    # the \\ that \label leaves behind still counts; \tag goes
    assert preprocess_latex(r"a &= b \label{x} \\ c &= d \tag{2}", "align") == (
        r"\begin{aligned}a &= b  \\ c &= d\end{aligned}"
    )


def test_katex_macros_split_between_katex_and_python():
    macros = build_katex_macros(
        [
            MacroDef("\\R", "\\ensuremath{\\mathbb{R}}"),
            MacroDef("\\Tr", "Tr", source="DeclareMathOperator"),
            MacroDef("\\argmax", "arg\\,max", source="DeclareMathOperator*"),
            MacroDef("\\op", "\\operatorname{op}", source="DeclareMathOperator"),
            MacroDef("\\norm", "\\|#1\\|", nargs=1),
            MacroDef("\\x", "#1_{#2}", nargs=2, default="0"),
            MacroDef("\\ignore", "", nargs=1),
            MacroDef("\\R", "\\mathbb{R}"),  # redefinition wins
            MacroDef("not a name", "x"),
        ]
    )
    document = ("\\R", "\\Tr", "\\argmax", "\\op", "\\norm")  # the others come from the package table
    assert {name: macros.katex[name] for name in document} == {
        "\\R": "\\mathbb{R}",
        "\\Tr": "\\operatorname{Tr}",
        "\\argmax": "\\operatorname*{arg\\,max}",
        "\\op": "\\operatorname{op}",
        "\\norm": "\\|#1\\|",
    }
    assert {"\\x", "\\ignore"} <= set(macros.expanded) and "\\ignore" not in macros.katex
    same = build_katex_macros([MacroDef("\\R", "\\mathbb{R}")])
    assert build_katex_macros([MacroDef("\\R", "\\mathbb{R}")]).key == same.key != macros.key


def test_optional_argument_and_unused_argument_expansion():
    macros = build_katex_macros([MacroDef("\\x", "#1_{#2}", nargs=2, default="0"), MacroDef("\\ignore", "", nargs=1)])
    assert expand_macros(r"\x[n]{a} + \x{b} + \x c\ignore{zzz}", macros) == r"n_{a} + 0_{b} + 0_{c}"
    # nested: the optional argument holds a macro that is expanded too; \xy is another name
    assert expand_macros(r"\x[\x{q}]{a} \xy", macros) == r"0_{q}_{a} \xy"
    assert expand_macros(r"\\x", macros) == r"\\x"  # a line break followed by "x"


def test_self_recursive_expansion_stops():
    macros = build_katex_macros([MacroDef("\\loop", "\\loop[#1]{#2}", nargs=2, default="a")])
    with pytest.raises(MacroExpansionError, match="did not terminate"):
        expand_macros(r"\loop{x}", macros, max_expansions=50)
    growing = build_katex_macros([MacroDef("\\g", "\\g{#1}\\g{#1}", nargs=1, default="")])
    with pytest.raises(MacroExpansionError):
        expand_macros(r"\g{x}", growing, max_expansions=10**6, max_length=5000)


def test_proof_trees_are_rewritten_before_cleaning():
    assert preprocess_latex(r"\begin{prooftree}\Hypo{A}\Infer1{B}\label{r}\end{prooftree}", "\\[") == r"{\dfrac{A}{B}}"


def test_a_documents_own_name_is_no_packages_command():
    """``\\newcommand{\\condition}{\\kappa}`` (a condition number) is no breqn ``\\condition{..}``: the rule of a
    package's command leaves the names the document defines to their definitions."""
    assert clean_latex("1+\\condition^{-1}") == "1+,\\quad \\text{^}{-1}"  # breqn's, without the document's
    assert clean_latex("1+\\condition^{-1}", frozenset({"\\condition"})) == "1+\\condition^{-1}"


def test_a_documents_own_name_through_katex(converter):
    condition = MacroDef("\\condition", "\\kappa", 0, source="newcommand")
    result = converter.convert("\\gamma_n^2 \\le \\condition^{-1}", macros=[condition])
    assert result.status == "ok", result.message
    assert "<msup><mi>κ</mi>" in result.mathml
