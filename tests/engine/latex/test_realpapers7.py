"""Constructs of round VII's leftovers and its tuning set (benchmarks/ingest.md, "Real arXiv papers", round VII),
through the real KaTeX: lengths relative to the page and with a comma as decimal mark, a sized delimiter inside a
text box, an accent set under its argument, a TikZ drawing longer than the length limit."""

from __future__ import annotations

from eqsearch.engine.latex.macros import MacroDef


def test_a_sized_delimiter_inside_a_text_box(converter):
    """A slanted fraction macro: ``\\text{\\raise1ex\\hbox{$#1$}\\Big/\\lower1ex\\hbox{$#2$}}`` (amsmath sets
    ``\\Big/`` in a math box of its own, in text as in math)."""
    macros = [MacroDef("\\sfrac", "\\text{\\raise1ex\\hbox{$#1$}\\Big/\\lower1ex\\hbox{$#2$}}", 2, source="newcommand")]
    result = converter.convert("x = \\sfrac{a}{b} + \\text{and \\bigl( y \\bigr)}", macros=macros)
    assert result.status == "ok", result.message
    assert "/" in result.mathml


def test_an_accent_set_under_its_argument(converter):
    """accents' ``\\underaccent{\\vec}{F}`` inside an author's macro (``\\newcommand\\undervec[1]{..}``)."""
    macros = [MacroDef("\\undervec", "\\underaccent{\\vec}{#1}", 1, source="newcommand")]
    result = converter.convert("\\undervec{\\mathscr{F}}_{a}^{b}(X) = \\underaccent{\\tilde}{x}", macros=macros)
    assert result.status == "ok", result.message
    assert "<munder" in result.mathml


def test_a_tikz_drawing_over_the_length_limit_is_a_diagram(converter):
    """A ZX-calculus drawing of 25,000 characters, with math around it: a diagram kept as LaTeX, not too long."""
    nodes = "".join(f"\\node[style=Z] ({i}) at ({i}, 0) {{$\\alpha_{{{i}}}$}};\n" for i in range(700))
    drawing = f"\\begin{{tikzpicture}}{nodes}\\end{{tikzpicture}}"
    assert len(drawing) > 20_000
    for latex in (drawing, f"A = {drawing} = B"):
        result = converter.convert(latex)
        assert result.status == "diagram", result.message


def test_a_packages_own_at_commands(converter):
    """A thesis's package (roelmath.sty) defines ``\\t@lde`` and builds its public ``\\omegat`` on it; a package's
    \\makeatletter helpers of the usual kind (``\\m@th``, ``\\operator@font``) have their meaning in a formula."""
    macros = [
        MacroDef("\\t@lde", "\\widetilde{#1}", 1, source="newcommand"),
        MacroDef("\\omegat", "\\t@lde{\\omega}", source="newcommand"),
        MacroDef("\\bfd", "\\mathbf{d}", source="newcommand"),
        MacroDef("\\bfdt", "\\t@lde{\\bfd}", source="newcommand"),
        MacroDef("\\diag", "\\mathop{\\operator@font diag}\\nolimits", source="class"),
        MacroDef("\\rlapm", "\\hbox{$\\m@th#1$}", 1, source="newcommand"),
    ]
    result = converter.convert("\\omegat = \\bfdt + \\diag(x) + \\rlapm{y} + \\idotsint f", macros=macros)
    assert result.status == "ok", result.message
    assert 'mathvariant="normal">g<' in result.mathml and "~" in result.mathml  # upright diag, the tilde


def test_a_class_command_never_replaces_a_command_katex_has(converter):
    """A journal class redefines ``\\vec`` through TeX internals and defines ``\\diag``: the class's ``\\diag`` is
    used, KaTeX's ``\\vec`` stays."""
    macros = [
        MacroDef("\\vec", "\\mathchoice{\\@vec@d{#1}}{}{}{}", 1, source="class"),
        MacroDef("\\diag", "\\operatorname{diag}", source="class"),
    ]
    result = converter.convert("\\vec{v} = \\diag(w)", macros=macros)
    assert result.status == "ok", result.message
    assert "→" in result.mathml or "&#x2192;" in result.mathml or "\u20d7" in result.mathml


def test_xifthen_isempty_and_a_square_root_with_a_hook(converter):
    """A thesis's preamble: xifthen's ``\\ifthenelse{\\isempty{#1}}{}{#1}`` decided once the optional argument is
    known; TeX.SE's square root with a closing hook (``\\let\\oldsqrt\\sqrt \\def\\sqrt{\\mathpalette\\DHLhksqrt}``, a
    box measured and shown again) is the square root; ``\\textrm{i.i.d.}\\@\\xspace``."""
    hook = (
        "\\setbox0=\\hbox{$#1\\oldsqrt{#2\\,}$}\\dimen0=\\ht0\n\\advance\\dimen0-0.2\\ht0\n"
        "\\setbox2=\\hbox{\\vrule height\\ht0 depth -\\dimen0}%\n{\\box0\\lower0.4pt\\box2}"
    )
    macros = [
        MacroDef("\\divergence", "\\mathrm{D^{\\ifthenelse{\\isempty{#1}}{}{#1}}_{#2}}\\left(#3 || #4\\right)", 4,
                 default="", source="newcommand"),
        MacroDef("\\oldsqrt", "\\sqrt", source="let"),
        MacroDef("\\sqrt", "\\mathpalette\\DHLhksqrt", source="def"),
        MacroDef("\\DHLhksqrt", hook, 2, source="def"),
        MacroDef("\\iid", "\\textrm{i.i.d.}\\@\\xspace", source="newcommand"),
    ]  # fmt: skip
    result = converter.convert(
        "\\divergence{f}{p}{q} + \\divergence[\\alpha]{f}{p}{q} = \\sqrt{x} \\iid", macros=macros
    )
    assert result.status == "ok", result.message
    assert "<msqrt>" in result.mathml and "α" in result.mathml
