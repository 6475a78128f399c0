"""Diagrams and pictures in formulas, which KaTeX does not draw: told apart from equations, or replaced.

`diagram_kind` tells a display that is a commutative diagram or picture (tikz-cd, TikZ, xymatrix, xy-pic, ...) from
an equation, so that the converter keeps it as a diagram instead of failing it; `replace_diagrams` puts a
``[diagram]`` placeholder where a formula holds a picture (a macro that draws an arrow, ``\\tikz``, an
``\\xymatrix`` that a macro brings, ``\\includegraphics``), so that the formula around it converts.
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.scan import read_argument

__all__ = ["diagram_kind", "replace_diagrams"]

# whole pictures: tikz-cd, TikZ, xy-pic, pst-node, diagrams.sty, dynkin-diagrams (\dynkin, \hasse), diagxy (\bfig),
# feynmf/feynmp and TikZ-Feynman diagrams, TikZiT's figures
_DIAGRAM = re.compile(
    r"\\begin\s*\{(tikzcd|tikzpicture|xy|psmatrix|diagram|fmffile|fmfgraph\*?|feynman)\}"
    r"|\\(xymatrix|xygraph|xyC|dynkin|dynkins|hasse|bfig|feynmandiagram|Qcircuit)(?![A-Za-z])"  # \xymatrix@R=1em
    r"|\\(tikzfig|ctikzfig|iltikzfig)(?![A-Za-z@])"  # TikZiT's string diagrams, drawn from a .tikz file
)


def diagram_kind(latex: str) -> str | None:
    """The kind of diagram an equation body holds (``tikzcd``, ``tikzpicture``, ``xymatrix``, ``xy``, ...), or None."""
    m = _DIAGRAM.search(latex) if "\\" in latex else None
    return None if m is None else (m.group(1) or m.group(2) or m.group(3))


_DIAGRAM_ENVIRONMENT = re.compile(r"\\begin\s*\{(tikzcd|tikzpicture|xy|psmatrix)\}.*?\\end\s*\{\1\}", re.DOTALL)


def replace_diagrams(latex: str) -> tuple[str, list[str]]:
    """Diagram environments inside a formula (a macro that draws an arrow in a rule's label) replaced by a
    ``[diagram]`` placeholder, so that the formula around them converts; returns the text and the kinds replaced."""
    kinds: list[str] = []

    def placeholder(m: re.Match[str]) -> str:
        kinds.append(m.group(1))
        return "\\text{[diagram]}"

    latex = _DIAGRAM_ENVIRONMENT.sub(placeholder, latex)
    if "\\xymatrix" in latex:  # a macro that draws a labelled arrow with xy-pic (\def\rarrow#1#2#3{\xymatrix{..}})
        latex = _xymatrices(latex, kinds)
    if "\\tikz" in latex:
        latex = _inline_tikz(latex, kinds)
    if "\\includegraphics" in latex:  # a picture file set inside the formula (a tensor-network equation)
        latex = _IMAGE.sub(lambda m: kinds.append("includegraphics") or "\\text{[diagram]}", latex)
    return latex, kinds


_XYMATRIX = re.compile(r"\\xymatrix(?![A-Za-z@])((?:\s*@[^{@]*)*)\s*(?=\{)")


def _xymatrices(latex: str, kinds: list[str]) -> str:
    """``\\xymatrix@C=2em{A \\ar[r] & B}`` inside a formula -> ``[diagram]``."""
    out: list[str] = []
    pos = 0
    for m in _XYMATRIX.finditer(latex):
        if m.start() < pos:
            continue
        arg = read_argument(latex, m.end())
        if arg is None:
            continue
        out += [latex[pos : m.start()], "\\text{[diagram]}"]
        kinds.append("xymatrix")
        pos = arg[1]
    out.append(latex[pos:])
    return "".join(out)


_IMAGE = re.compile(r"\\includegraphics\*?\s*(?:\[[^\]]*\]\s*)*\{[^{}]*\}")


_TIKZ = re.compile(r"\\tikz(?![A-Za-z@])\s*(?:\[[^\]]*\])?\s*")
# \tikz{\node[scale=.7, circle]{$\bullet$};}: one node without a border or a fill, its text only
_TIKZ_NODE = re.compile(r"\s*\\node\s*(?:\[([^\]]*)\])?\s*(?:\([^)]*\)\s*)?(?:at\s*\([^)]*\)\s*)?\{(.*)\}\s*;\s*", re.S)


def _inline_tikz(latex: str, kinds: list[str]) -> str:
    """``\\tikz{...}`` or ``\\tikz[options] \\draw ...;`` (a picture drawn inside a formula) -> ``[diagram]``."""
    out: list[str] = []
    pos = 0
    for m in _TIKZ.finditer(latex):
        if m.start() < pos:
            continue
        if latex.startswith("{", m.end()):
            arg = read_argument(latex, m.end())
            end = len(latex) if arg is None else arg[1]
        else:
            semicolon = latex.find(";", m.end())
            end = len(latex) if semicolon < 0 else semicolon + 1
        node = _TIKZ_NODE.fullmatch(latex, m.end() + 1, end - 1) if latex.startswith("{", m.end()) else None
        if node is not None and ";" not in node.group(2) and not re.search(r"\b(?:draw|fill)\b", node.group(1) or ""):
            out += [latex[pos : m.start()], f"\\text{{{node.group(2)}}}"]  # a lone node: what it shows is its text
        else:
            out += [latex[pos : m.start()], "\\text{[diagram]}"]
            kinds.append("tikz")
        pos = end
    out.append(latex[pos:])
    return "".join(out)
