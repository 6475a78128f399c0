"""Diagrams and pictures in formulas, which KaTeX does not draw: told apart from equations, or replaced.

`diagram_kind` tells a display that is a commutative diagram or picture (tikz-cd, TikZ, xymatrix, xy-pic, ...) from
an equation. `replace_diagrams` finds the pictures a formula holds once its macros are expanded (``\\includegraphics``,
``\\tikz``, a TikZ or tikz-cd environment, an ``\\xymatrix`` that a macro brings) and puts a ``[diagram]``
placeholder in each place, saying for each whether it stands as a *symbol* of the formula (the argument of a class
command such as ``\\mathbin{..}``, a script, an arrow's label: a relation drawn with TikZ) or as a picture of its own.
The converter keeps a display holding a picture of its own as a diagram, math around it or not (a skein relation of
``\\vcenter{\\hbox{\\includegraphics..}}``, ZX-calculus spiders inside ``\\left\\{ .. \\right\\}``), and converts a
formula whose pictures are all symbols with their placeholders (approximate).

A TikZ picture drawn as an ``overlay`` (``\\begin{tikzpicture}[remember picture,overlay]``, ``\\tikz[overlay]``) takes
no room where it stands: it is a note in the margin or an arrow over the page (a thesis's ``\\SideNote{Euler
equation}`` beside its displays), never the formula's content. Both functions read the formula without it, and
`replace_diagrams` returns the text without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from eqsearch.engine.latex.scan import read_argument, read_optional, skip_space

__all__ = ["REPLACED_KINDS", "Picture", "diagram_kind", "drop_overlays", "replace_diagrams"]


class Picture(NamedTuple):
    """One picture found inside a formula: its kind (``includegraphics``, ``tikz``, ``tikzpicture``, ``xymatrix``...)
    and whether it stands as a symbol of the formula (see the module docstring)."""

    kind: str
    symbol: bool


# whole pictures: tikz-cd, TikZ, xy-pic, pst-node, diagrams.sty, dynkin-diagrams (\dynkin, \hasse), diagxy (\bfig),
# feynmf/feynmp and TikZ-Feynman diagrams, TikZiT's figures
_DIAGRAM = re.compile(
    r"\\begin\s*\{(tikzcd|tikzpicture|xy|psmatrix|diagram|fmffile|fmfgraph\*?|feynman)\}"
    r"|\\(xymatrix|xygraph|xyC|dynkin|dynkins|hasse|bfig|feynmandiagram|Qcircuit)(?![A-Za-z])"  # \xymatrix@R=1em
    r"|\\(tikzfig|ctikzfig|iltikzfig)(?![A-Za-z@])"  # TikZiT's string diagrams, drawn from a .tikz file
)


def diagram_kind(latex: str) -> str | None:
    """The kind of diagram an equation body holds (``tikzcd``, ``tikzpicture``, ``xymatrix``, ``xy``, ...), or None;
    an overlay picture is no diagram (module docstring)."""
    if "overlay" in latex:
        latex = drop_overlays(latex)
    m = _DIAGRAM.search(latex) if "\\" in latex else None
    return None if m is None else (m.group(1) or m.group(2) or m.group(3))


_DIAGRAM_ENVIRONMENT = re.compile(r"\\begin\s*\{(tikzcd|tikzpicture|xy|psmatrix)\}.*?\\end\s*\{\1\}", re.DOTALL)


def replace_diagrams(latex: str) -> tuple[str, list[Picture]]:
    """The pictures inside a formula replaced by a ``[diagram]`` placeholder each; returns the text and the pictures,
    in the order they were replaced."""
    pictures: list[Picture] = []
    if "overlay" in latex:
        latex = drop_overlays(latex)

    def found(kind: str, text: str, start: int) -> str:
        pictures.append(Picture(kind, _symbol_position(text, start)))
        return "\\text{[diagram]}"

    latex = _DIAGRAM_ENVIRONMENT.sub(lambda m: found(m.group(1), m.string, m.start()), latex)
    if "\\xymatrix" in latex:  # a macro that draws a labelled arrow with xy-pic (\def\rarrow#1#2#3{\xymatrix{..}})
        latex = _xymatrices(latex, found)
    if "\\tikz" in latex:
        latex = _inline_tikz(latex, found)
    if "\\includegraphics" in latex:  # a picture file set inside the formula (a tensor-network equation)
        latex = _IMAGE.sub(lambda m: found("includegraphics", m.string, m.start()), latex)
    if "tikzfig" in latex:  # TikZiT's figure of a .tikz file (a ZX-calculus spider)
        latex = _TIKZFIG.sub(lambda m: found("tikzfig", m.string, m.start()), latex)
    return latex, pictures


_TIKZ_START = re.compile(r"\\begin\s*\{tikzpicture\}|\\tikz(?![A-Za-z@])")
_TIKZ_ENVIRONMENT = re.compile(r"\\(begin|end)\s*\{tikzpicture\}")


def drop_overlays(latex: str) -> str:
    """``latex`` without its TikZ pictures drawn as an ``overlay`` (module docstring): an environment to its end, a
    ``\\tikz[..overlay..]`` with its braced picture or its path up to the ``;``."""
    out: list[str] = []
    pos = 0
    for m in _TIKZ_START.finditer(latex):
        if m.start() < pos:
            continue
        options, after = read_optional(latex, m.end())
        if options is None or not any(o.strip() == "overlay" for o in options.split(",")):
            continue
        end = _picture_end(latex, after, environment=m.group(0).startswith("\\begin"))
        if end is not None:
            out.append(latex[pos : m.start()])
            pos = end
    out.append(latex[pos:])
    return "".join(out)


def _picture_end(latex: str, start: int, environment: bool) -> int | None:
    if environment:
        depth = 1
        for m in _TIKZ_ENVIRONMENT.finditer(latex, start):
            depth += 1 if m.group(1) == "begin" else -1
            if depth == 0:
                return m.end()
        return None
    if latex.startswith("{", skip_space(latex, start)):
        arg = read_argument(latex, start)
        return None if arg is None else arg[1]
    depth = 0
    for i in range(start, len(latex)):
        c = latex[i]
        depth += (c == "{") - (c == "}")
        if c == ";" and depth == 0:
            return i + 1
    return None


#: The kinds `replace_diagrams` finds inside a formula (the others make the whole display a diagram).
REPLACED_KINDS = frozenset(
    {
        "tikzcd",
        "tikzpicture",
        "xy",
        "psmatrix",
        "xymatrix",
        "tikz",
        "tikzfig",
        "ctikzfig",
        "iltikzfig",
        "includegraphics",
    }
)
_TIKZFIG = re.compile(r"\\(?:tikzfig|ctikzfig|iltikzfig)(?![A-Za-z@])\s*(?:\[[^\]]*\]\s*)?\{[^{}]*\}")


# Commands whose argument is one symbol of the formula, or a label set small beside one
_SYMBOL_COMMANDS = frozenset(
    {
        "\\mathbin",
        "\\mathrel",
        "\\mathop",
        "\\mathord",
        "\\mathopen",
        "\\mathclose",
        "\\mathpunct",
        "\\mathinner",
        "\\xrightarrow",
        "\\xleftarrow",
        "\\xleftrightarrow",
        "\\xmapsto",
        "\\overset",
        "\\underset",
        "\\stackrel",
        "^",
        "_",
    }
)
_GROUP_TOKEN = re.compile(r"\\[A-Za-z@]+|\\.|[{}^_\[\]]", re.DOTALL)


def _symbol_position(text: str, start: int) -> bool:
    """Whether ``start`` lies inside the argument of a command of `_SYMBOL_COMMANDS` (or a script)."""
    opened: list[str] = []  # for each open group, the token before its brace
    previous = ""
    optional = 0  # inside a command's optional argument (\xrightarrow[below]{above}), which does not come between
    for m in _GROUP_TOKEN.finditer(text, 0, start):
        token = m.group(0)
        if token == "{":
            opened.append(previous)
        elif token == "}" and opened:
            opened.pop()
        elif token == "[" and (optional or previous.startswith("\\")):
            optional += 1
            continue
        elif token == "]" and optional:
            optional -= 1
            continue
        if not optional:
            previous = token
    return any(name in _SYMBOL_COMMANDS for name in opened)


_XYMATRIX = re.compile(r"\\xymatrix(?![A-Za-z@])((?:\s*@[^{@]*)*)\s*(?=\{)")


def _xymatrices(latex: str, found: Callable[[str, str, int], str]) -> str:
    """``\\xymatrix@C=2em{A \\ar[r] & B}`` inside a formula -> ``[diagram]``."""
    out: list[str] = []
    pos = 0
    for m in _XYMATRIX.finditer(latex):
        if m.start() < pos:
            continue
        arg = read_argument(latex, m.end())
        if arg is None:
            continue
        out += [latex[pos : m.start()], found("xymatrix", latex, m.start())]
        pos = arg[1]
    out.append(latex[pos:])
    return "".join(out)


_IMAGE = re.compile(r"\\includegraphics\*?\s*(?:\[[^\]]*\]\s*)*\{[^{}]*\}")


_TIKZ = re.compile(r"\\tikz(?![A-Za-z@])\s*(?:\[[^\]]*\])?\s*")
# \tikz{\node[scale=.7, circle]{$\bullet$};}: one node without a border or a fill, its text only
_TIKZ_NODE = re.compile(r"\s*\\node\s*(?:\[([^\]]*)\])?\s*(?:\([^)]*\)\s*)?(?:at\s*\([^)]*\)\s*)?\{(.*)\}\s*;\s*", re.S)


def _inline_tikz(latex: str, found: Callable[[str, str, int], str]) -> str:
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
            out += [latex[pos : m.start()], found("tikz", latex, m.start())]
        pos = end
    out.append(latex[pos:])
    return "".join(out)
