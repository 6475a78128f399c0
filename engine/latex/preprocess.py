"""Rewriting arXiv display-math LaTeX into what KaTeX parses.

`preprocess_latex` makes the text KaTeX gets for one display, in pure functions of the text: the constructs other
modules rewrite, `clean_latex`, and last `engine.latex.environments.wrap_environment`, the display environment's body
as one KaTeX expression (``align`` -> ``aligned``, ...).

`clean_latex` removes comments and what only matters for page layout or numbering (``\\label``, ``\\tag``,
``\\nonumber``, ``\\vspace``, ``\\hfill``, ``\\boldmath``, ``\\xspace``, ``\\qedhere``, ``\\null``, counters, display
skips, ...), replaces cross references and citations by placeholders (``\\ref``/``\\eqref`` -> ``\\text{(?)}``,
``\\cite`` -> ``\\text{[?]}``), and renames commands KaTeX lacks to close equivalents (``\\mbox`` -> ``\\text``,
``\\mathbbm``/``\\mathds`` -> ``\\mathbb``, plain-TeX ``\\pmatrix{..\\cr..}`` ->
``\\begin{pmatrix}..\\\\..\\end{pmatrix}``, ``\\multicolumn{3}{c}{x}`` -> ``x & &``). It is applied to equation bodies
and to macro bodies alike, and to what an unwrapped argument holds (``\\shortintertext{by \\cref{eq:a_b}}``).

A ``minipage`` inside a display is rewritten in `engine.latex.environments`; nicematrix and Young tableaux in
`engine.latex.packagenv`, plain TeX's registers, boxes and alignment details in `engine.latex.texrules`. Diagrams and
pictures, which KaTeX does not draw, are told apart in `engine.latex.diagrams`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eqsearch.engine.latex.arrays import rewrite_array_specs, rewrite_starred_cases, rewrite_tabulars
from eqsearch.engine.latex.brackets import rewrite_brackets
from eqsearch.engine.latex.colors import color_rule
from eqsearch.engine.latex.environments import rewrite_minipages, wrap_environment
from eqsearch.engine.latex.lengths import register_spacing
from eqsearch.engine.latex.packagenv import rewrite_nicematrix, rewrite_small_matrices, rewrite_young_tableaux
from eqsearch.engine.latex.plaintex import (
    box_shifts,
    command_environments,
    overlays,
    rewrite_plain_tex,
    stagger_indices,
)
from eqsearch.engine.latex.prooftrees import rewrite_proof_trees
from eqsearch.engine.latex.scan import read_argument, read_arguments, read_optional
from eqsearch.engine.latex.texrules import (
    assignment,
    discretionary,
    mapsto_char,
    mathchoice_rule,
    multlined,
    noalign,
    raisebox,
    row_gaps,
    sets_before_tabs,
    skip_glue,
)
from eqsearch.engine.latex.units import unit_rule

__all__ = [
    "clean_latex",
    "preprocess_latex",
    "register_spacing",
]

_COMMENT = re.compile(r"(?<!\\)((?:\\\\)*)%[^\n]*")


# --------------------------------------------------------------------------------------------------------------
# Rules of clean_latex: each takes (text, offset just past the command) and returns (replacement, resume offset).

_Rule = Callable[[str, int], tuple[str, int]]


def _drop(text: str, end: int) -> tuple[str, int]:
    return "", end


def _drop_star_optional(text: str, end: int) -> tuple[str, int]:
    if end < len(text) and text[end] == "*":
        end += 1
    return "", read_optional(text, end)[1]


def _drop_with_argument(text: str, end: int) -> tuple[str, int]:
    if end < len(text) and text[end] == "*":
        end += 1
    end = read_optional(text, end)[1]
    arg = read_argument(text, end)
    return "", arg[1] if arg else end


def _drop_arguments(count: int) -> _Rule:
    def rule(text: str, end: int) -> tuple[str, int]:
        return "", read_arguments(text, end, count)[1]

    return rule


_LAYOUT_PARAMETERS = frozenset({"\\baselinestretch", "\\CancelColor"})  # cancel's colour: KaTeX has none


def _renew_layout(text: str, end: int) -> tuple[str, int]:
    # \renewcommand{\baselinestretch}{1.5}: line spacing, which KaTeX does not have; other redefinitions stay
    name = read_argument(text, end)
    value = None if name is None else read_argument(text, name[1])
    if name is None or value is None or name[0].strip() not in _LAYOUT_PARAMETERS:
        return "\\renewcommand", end
    return "", value[1]


def _placeholder(replacement: str, optionals: int) -> _Rule:
    def rule(text: str, end: int) -> tuple[str, int]:
        if end < len(text) and text[end] == "*":
            end += 1
        for _ in range(optionals):
            end = read_optional(text, end)[1]
        arg = read_argument(text, end)
        return replacement, arg[1] if arg else end

    return rule


def _rename(new: str) -> _Rule:
    def rule(text: str, end: int) -> tuple[str, int]:
        # keep a separating space when the next character would glue onto a control word
        if new[-1].isalpha() and end < len(text) and text[end].isalpha():
            return new + " ", end
        return new, end

    return rule


def _unwrap_into(prefix: str) -> _Rule:
    def rule(text: str, end: int) -> tuple[str, int]:
        arg = read_argument(text, end)
        if arg is None:
            return "", end
        return f"{prefix}{{{clean_latex(arg[0])}}}", arg[1]  # what the argument holds is cleaned too (\cref)

    return rule


def _cut_equation_number(text: str, end: int) -> tuple[str, int]:
    # \eqno / \leqno: the rest of the row is the equation number
    stop = text.find("\\\\", end)
    return "", len(text) if stop < 0 else stop


def _breqn_condition(text: str, end: int) -> tuple[str, int]:
    # \condition[separator]{text}: a side condition set after the formula
    if end < len(text) and text[end] == "*":
        end += 1
    separator, end = read_optional(text, end)
    arg = read_argument(text, end)
    if arg is None:
        return "", end
    return f"{separator if separator is not None else ','}\\quad \\text{{{clean_latex(arg[0])}}}", arg[1]


def _plain_matrix(environment: str) -> _Rule:
    def rule(text: str, end: int) -> tuple[str, int]:
        arg = read_argument(text, end)
        if arg is None:
            return f"\\{environment}", end
        body = re.sub(r"\\cr(?![A-Za-z])", r"\\\\", clean_latex(arg[0]))
        return f"\\begin{{{environment}}}{body}\\end{{{environment}}}", arg[1]

    return rule


def _multicolumn(text: str, end: int) -> tuple[str, int]:
    # \multicolumn{3}{c}{x} in an array or a tabular: KaTeX has no spanning cell; the content, then the cells it spans
    args, resume = read_arguments(text, end, 3)
    if len(args) < 3 or not args[0].strip().isdigit():
        return "\\multicolumn", end
    return clean_latex(args[2]) + " &" * (min(int(args[0]), 64) - 1), resume


def _drop_star_optional_argument(latex: str, pos: int) -> tuple[str, int]:
    """``\\index[sub]{entry}`` (and starred forms): dropped whole."""
    if latex.startswith("*", pos):
        pos += 1
    _, pos = read_optional(latex, pos)
    arg = read_argument(latex, pos)
    return "", pos if arg is None else arg[1]


_RULES: dict[str, _Rule] = {
    # numbering, labels, layout
    "label": _drop_with_argument,
    "tag": _drop_with_argument,
    "vspace": _drop_with_argument,
    "nonumber": _drop,
    "notag": _drop,
    "hfill": _drop,
    "hfil": _drop,
    "vfill": _drop,
    "boldmath": _drop,
    "unboldmath": _drop,
    "protect": _drop,
    "allowdisplaybreaks": _drop_star_optional,
    "displaybreak": _drop_star_optional,
    "noindent": _drop,
    "centering": _drop,
    "phantomsection": _drop,  # hyperref's anchor, written inside a display
    "ignorespaces": _drop,  # TeX's spaces skipped after a macro's use (\newcommand{\m}[4]{..\ignorespaces})
    "NiceMatrixOptions": _drop_arguments(1),  # nicematrix's settings
    "cline": _drop_arguments(1),  # a partial rule under some columns of an array: KaTeX draws none
    "raggedright": _drop,  # paragraph alignment (array's >{\raggedright\arraybackslash}p{4cm} column code)
    "raggedleft": _drop,
    "RaggedRight": _drop,
    "RaggedLeft": _drop,
    "arraybackslash": _drop,
    "upshape": _drop,
    "smallskip": _drop,
    "medskip": _drop,
    "bigskip": _drop,
    "nopagebreak": _drop_star_optional,
    "pagebreak": _drop_star_optional,
    "linebreak": _drop_star_optional,
    "nolinebreak": _drop_star_optional,
    "vskip": skip_glue,
    "xspace": _drop,
    "qedhere": _drop,
    "mprset": _drop_arguments(1),  # mathpartir's rule layout
    "noLine": _drop,  # bussproofs' line styles, outside a tree
    "singleLine": _drop,
    "doubleLine": _drop,
    "DisplayProof": _drop,
    "index": _drop_star_optional_argument,  # an index entry written inside a display
    "footnote": _drop_with_argument,  # a note set apart from the formula (its mark is dropped too)
    "footnotemark": _drop_star_optional,
    "/": _drop,  # italic correction
    "null": _drop,
    "nonscript": _drop,  # the next space is not set in script styles: a spacing detail
    "par": _drop,  # a paragraph end inside a box of a display
    "noalign": noalign,
    "baselineskip": assignment,
    "mathsurround": assignment,
    "discretionary": discretionary,
    "lineskip": assignment,
    "lineskiplimit": assignment,
    "thinmuskip": assignment,  # \medmuskip=0mu inside a display: the spacing of the operators around
    "medmuskip": assignment,
    "thickmuskip": assignment,
    "mapstochar": mapsto_char,
    "raisebox": raisebox,
    "mathchoice": mathchoice_rule(lambda text: clean_latex(text)),
    "hidewidth": _drop,
    "bigstrut": _drop_star_optional,  # bigstrut's row spacing in tables
    "strut": _drop,
    "leavevmode": _drop,
    "addtocounter": _drop_arguments(2),
    "setcounter": _drop_arguments(2),
    "stepcounter": _drop_arguments(1),
    "refstepcounter": _drop_arguments(1),
    "setlength": _drop_arguments(2),
    "addtolength": _drop_arguments(2),
    "linespread": _drop_arguments(1),
    "renewcommand": _renew_layout,
    "abovedisplayskip": skip_glue,
    "belowdisplayskip": skip_glue,
    "abovedisplayshortskip": skip_glue,
    "belowdisplayshortskip": skip_glue,
    "jot": skip_glue,
    "eqno": _cut_equation_number,
    "leqno": _cut_equation_number,
    # cross references and citations
    "ref": _placeholder("\\text{(?)}", 0),
    "eqref": _placeholder("\\text{(?)}", 0),
    "pageref": _placeholder("\\text{(?)}", 0),
    "autoref": _placeholder("\\text{(?)}", 0),
    "cref": _placeholder("\\text{(?)}", 0),
    "Cref": _placeholder("\\text{(?)}", 0),
    "cite": _placeholder("\\text{[?]}", 2),
    "citep": _placeholder("\\text{[?]}", 2),
    "citet": _placeholder("\\text{[?]}", 2),
    "citealp": _placeholder("\\text{[?]}", 2),
    # commands KaTeX lacks -> close equivalents
    "mbox": _rename("\\text"),
    "textsc": _rename("\\text"),
    "textup": _rename("\\text"),
    "textsl": _rename("\\textit"),
    "mathbbm": _rename("\\mathbb"),
    "mathds": _rename("\\mathbb"),
    "mathbbold": _rename("\\mathbb"),
    "nicefrac": _rename("\\tfrac"),
    "operatornamewithlimits": _rename("\\operatorname*"),
    "slash": _rename("/"),
    "lefteqn": _unwrap_into(""),
    "color": color_rule(1),
    "textcolor": color_rule(1),
    "colorbox": color_rule(1),
    "fcolorbox": color_rule(2),
    # siunitx's abbreviations (\m, \GeV) inside a unit argument
    **{
        command: unit_rule(command)
        for command in ("SI", "si", "unit", "SIrange", "qtyrange", "SIlist", "qty", "qtylist", "qtyproduct")
    },
    "multicolumn": _multicolumn,
    # breqn
    "hiderel": _unwrap_into(""),
    "condition": _breqn_condition,
    "intertext": _unwrap_into("\\text"),
    "shortintertext": _unwrap_into("\\text"),
    "pmatrix": _plain_matrix("pmatrix"),
    "matrix": _plain_matrix("matrix"),
}

_RULE_PATTERN = re.compile(
    r"\\("
    + "|".join(sorted((n for n in _RULES if n[0].isalpha()), key=len, reverse=True))
    + r")(?![A-Za-z@])|\\("
    + "|".join(re.escape(n) for n in _RULES if not n[0].isalpha())
    + ")"
)


def clean_latex(latex: str, own: frozenset[str] = frozenset()) -> str:
    """Remove comments and layout commands, replace references, rename what KaTeX lacks (see module docstring).

    Args:
        latex: an equation body or a macro body.
        own: the names (``\\condition``) the document defines itself, left to their definitions: no rule of a
            package's command applies to them.

    Returns:
        The rewritten text (unchanged when nothing applies).
    """
    if "%" in latex:
        latex = _COMMENT.sub(r"\1", latex)
    if "\\begin" in latex:
        latex = command_environments(latex)
    if "\\" not in latex or not _RULE_PATTERN.search(latex):
        return latex
    out: list[str] = []
    position = 0
    for _ in range(len(latex)):  # bounded: every round consumes at least one command
        m = _RULE_PATTERN.search(latex, position)
        if m is None:
            break
        start = m.start()
        backslashes = 0
        while start - backslashes > 0 and latex[start - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2:  # "\\label" is a line break followed by the word "label"
            out.append(latex[position : m.end()])
            position = m.end()
            continue
        name = m.group(1) or m.group(2)
        if own and "\\" + name in own:  # the document's own \condition, not breqn's
            out.append(latex[position : m.end()])
            position = m.end()
            continue
        replacement, resume = _RULES[name](latex, m.end())
        out.append(latex[position:start])
        out.append(replacement)
        position = max(resume, m.end())
    out.append(latex[position:])
    return "".join(out)


# --------------------------------------------------------------------------------------------------------------
# preprocess_latex: one display, every step in order

# \begin{center} or \begin{small} inside a display: layout of the text around, which KaTeX does not have
_LAYOUT_ENVIRONMENT = re.compile(
    r"\\(?:begin|end)\s*\{(?:center|flushleft|flushright|tiny|scriptsize|footnotesize|small|normalsize|large|Large"
    r"|centering|raggedright|raggedleft)\}"
)

# \begin{array}[t]{l}: the vertical position of an inner array, which KaTeX does not take
_ARRAY_POSITION = re.compile(r"\\begin\s*\{(array|aligned|gathered|alignedat|tabular)\}\s*\[[tbc]\]")


def preprocess_latex(body: str, environment: str = "equation", own: frozenset[str] = frozenset()) -> str:
    """Proof trees rewritten (`engine.latex.prooftrees`), plain TeX constructs too (`engine.latex.plaintex`),
    `clean_latex` (leaving the names in ``own``, the document's own, to their definitions), then `wrap_environment`:
    the text KaTeX gets for one display."""
    if "\\y" in body or "ytableau" in body:  # before clean_latex, which drops youngtab's \hfil (an empty box)
        body = rewrite_young_tableaux(body)
    if "amount" in body or "\\jot" in body:  # before clean_latex, which drops a \jot setting
        body = row_gaps(body)
    text = clean_latex(rewrite_plain_tex(rewrite_proof_trees(body)), own)
    if "Nice" in text or "dots" in text:
        text = rewrite_nicematrix(text)
    if "smallmatrix" in text:
        text = rewrite_small_matrices(text)
    if "\\begin" in text:
        text = _LAYOUT_ENVIRONMENT.sub("", text)
    if "minipage" in text:
        text = rewrite_minipages(text)
    if "multlined" in text:
        text = multlined(text)
    if "tabular" in text:
        text = rewrite_tabulars(text)
    text = stagger_indices(text)
    if "[" in text and "\\begin" in text:  # the position first: a specification follows it
        text = _ARRAY_POSITION.sub(r"\\begin{\1}", text)
    if "array" in text:
        text = rewrite_array_specs(text)
    if "cases*" in text:
        text = rewrite_starred_cases(text)
    text = register_spacing(text)
    if "&" in text and ("set" in text or "stackrel" in text):
        text = sets_before_tabs(text)
    if "\\raise" in text or "\\lower" in text:
        text = box_shifts(text)
    if "\\ooalign" in text:
        text = overlays(text)
    text = rewrite_brackets(text)  # semantic brackets after \left/\big.., \leftroot (engine.latex.brackets)
    return wrap_environment(text, environment)
