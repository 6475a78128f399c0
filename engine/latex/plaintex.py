"""Plain TeX constructs KaTeX lacks, rewritten as the LaTeX it has.

Older papers and journal classes (MNRAS, AAS, JHEP) still write plain TeX inside displays: ``\\root 3 \\of x``,
``\\buildrel \\rm def \\over =``, the ``\\over`` family's delimited members ``{n \\overwithdelims() k}``,
``\\atopwithdelims`` and ``\\abovewithdelims``, and the macros ``\\cases{...}`` (whose second column is text),
``\\eqalign{...}``, ``\\eqalignno{...}`` and ``\\displaylines{...}`` whose rows end in ``\\cr``. KaTeX parses
``\\over``, ``\\atop``, ``\\choose``, ``\\brace``, ``\\brack`` and ``\\above`` itself; the others become
``\\sqrt[3]{x}``, ``\\overset{\\rm def}{=}``, ``\\genfrac`` and the matching environments; box shifts
(``\\lower.5ex\\hbox{$\\sim$}``) become ``\\raisebox``, ``\\ooalign``'s layers ``\\rlap``s.

A few other commands KaTeX lacks are rewritten here too: case changes (``\\MakeLowercase``, after macro expansion),
tensor's staggered indices, the ``\\iftrue``/``\\iffalse`` a ``\\newif`` switch expands to, a font command used as an
environment. What crosses between math and text mode inside a formula is `engine.latex.textmode`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eqsearch.engine.latex.scan import CONTROL_SEQUENCE, read_argument, read_optional, skip_space

__all__ = [
    "box_shifts",
    "change_case",
    "command_environments",
    "overlays",
    "rewrite_plain_tex",
    "stagger_indices",
    "tex_switches",
]

_ROOT = re.compile(r"\\root(?![A-Za-z@])(.*?)\\of(?![A-Za-z@])\s*", re.DOTALL)
_BUILDREL = re.compile(r"\\buildrel(?![A-Za-z@])(.*?)\\over(?![A-Za-z@])\s*", re.DOTALL)
_ROW_MACROS = {
    "cases": "cases",
    "eqalign": "aligned",
    "eqalignno": "aligned",
    "displaylines": "gathered",
    # a matrix with a row and a column of labels: the labels kept as its first row and column, in parentheses
    "bordermatrix": "pmatrix",
    "bbordermatrix": "bmatrix",
}
_ROWS = re.compile(r"\\(" + "|".join(_ROW_MACROS) + r")(?![A-Za-z@])\s*(?=\{)")
_WITHDELIMS = re.compile(r"\\(over|atop|above)withdelims(?![A-Za-z@])")
_CR = re.compile(r"\\cr(?![A-Za-z@])")
_DIMENSION = re.compile(r"\s*-?(?:\d+(?:\.\d*)?|\.\d+)\s*(?:pt|em|ex|mm|cm|in|bp|mu|sp|pc|dd|cc)")
_MARKERS = ("\\root", "\\buildrel", "withdelims", "\\cases", "\\eqalign", "\\displaylines", "bordermatrix")


def rewrite_plain_tex(latex: str) -> str:
    """``latex`` with the plain TeX constructs of the module docstring rewritten; unchanged when it has none."""
    if not any(marker in latex for marker in _MARKERS):
        return latex
    latex = _before_argument(_ROOT, latex, lambda index, arg: f"\\sqrt[{index.strip()}]{{{arg}}}")
    latex = _before_argument(_BUILDREL, latex, lambda above, base: f"\\overset{{{above.strip()}}}{{{base}}}")
    latex = _rows(latex)
    for _ in range(32):  # one fraction per round, innermost group first
        m = _WITHDELIMS.search(latex)
        if m is None:
            break
        latex = _generalized_fraction(latex, m)
    return latex


def _before_argument(pattern: re.Pattern[str], latex: str, build: Callable[[str, str], str]) -> str:
    """Replace ``pattern`` (whose group 1 is the text before a keyword) and the argument after it by ``build``."""
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(latex):
        if m.start() < pos:
            continue
        arg = read_argument(latex, m.end())
        if arg is None:
            continue
        out += [latex[pos : m.start()], build(m.group(1), arg[0])]
        pos = arg[1]
    out.append(latex[pos:])
    return "".join(out)


def _rows(latex: str) -> str:
    """``\\cases{a & b \\cr c & d}`` and its kin -> the environment, rows ending in ``\\\\``."""
    out: list[str] = []
    pos = 0
    for m in _ROWS.finditer(latex):
        if m.start() < pos:
            continue
        arg = read_argument(latex, m.end())
        if arg is None:
            continue
        environment = _ROW_MACROS[m.group(1)]
        body = _CR.sub(r"\\\\", arg[0]).rstrip()
        if m.group(1) == "cases":  # plain TeX's \cases sets its second column as text
            body = "\\\\".join(_text_second_column(row) for row in body.split("\\\\"))
        if m.group(1) == "eqalignno":  # the equation-number column is dropped
            body = "\\\\".join(row.rsplit("&", 1)[0] if row.count("&") >= 2 else row for row in body.split("\\\\"))
        out += [latex[pos : m.start()], f"\\begin{{{environment}}}{body}\\end{{{environment}}}"]
        pos = arg[1]
    out.append(latex[pos:])
    return "".join(out)


def _text_second_column(row: str) -> str:
    """``a & if $x>0$`` -> ``a &\\text{if $x>0$}`` (a row of plain TeX's ``\\cases``, when it holds ``$``)."""
    left, amp, right = row.partition("&")
    if not amp or "$" not in right:  # math written there the LaTeX way stays math
        return row
    return f"{left}&\\text{{{right.strip()}}} "


def _delimiter(latex: str, pos: int) -> tuple[str, int]:
    """One delimiter token at ``pos`` (``(``, ``\\{``, ``\\langle``, ``.`` for none) and where it ends."""
    pos = skip_space(latex, pos)
    if pos >= len(latex):
        return "", pos
    if latex[pos] == "\\":
        m = CONTROL_SEQUENCE.match(latex, pos)
        return (m.group(), m.end()) if m is not None else ("", pos + 1)
    return ("" if latex[pos] == "." else latex[pos]), pos + 1


def _generalized_fraction(latex: str, m: re.Match[str]) -> str:
    """The group holding ``{a \\overwithdelims() b}`` -> ``{\\genfrac{(}{)}{}{}{a}{b}}`` (thickness 0 for atop)."""
    left, pos = _delimiter(latex, m.end())
    right, pos = _delimiter(latex, pos)
    thickness = "0pt" if m.group(1) == "atop" else ""
    if m.group(1) == "above":
        dimension = _DIMENSION.match(latex, pos)
        if dimension is not None:
            thickness, pos = dimension.group().strip(), dimension.end()
    start, end = _enclosing_group(latex, m.start())
    numerator, denominator = latex[start : m.start()], latex[pos:end]
    fraction = f"\\genfrac{{{left}}}{{{right}}}{{{thickness}}}{{}}{{{numerator}}}{{{denominator}}}"
    return latex[:start] + fraction + latex[end:]


def _enclosing_group(latex: str, at: int) -> tuple[int, int]:
    """The span of the innermost brace group around ``at`` (its content, without the braces), or the whole text."""
    depth = 0
    start = 0
    i = at - 1
    while i >= 0:
        c = latex[i]
        escaped = i > 0 and latex[i - 1] == "\\"
        if c == "}" and not escaped:
            depth += 1
        elif c == "{" and not escaped:
            if depth == 0:
                start = i + 1
                break
            depth -= 1
        i -= 1
    depth = 0
    end = len(latex)
    for j in range(at, len(latex)):
        c = latex[j]
        if latex[j - 1] == "\\":
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                end = j
                break
            depth -= 1
    return start, end


# \MakeLowercase{B} (a macro body \mathfrak{\MakeLowercase{#1}}), \uppercase{x}: letters outside control words
_CASE = re.compile(r"\\(MakeLowercase|MakeUppercase|lowercase|uppercase)(?![A-Za-z@])\s*(?=\{)")


def change_case(latex: str) -> str:
    """``\\MakeLowercase{..}`` and ``\\MakeUppercase{..}`` (and TeX's ``\\lowercase``, ``\\uppercase``) applied to the
    letters of their argument, control words kept: ``\\mathfrak{\\MakeLowercase{G}}`` -> ``\\mathfrak{g}``. Run after
    macro expansion, since the argument is often a macro's parameter."""
    if "case" not in latex:
        return latex
    out: list[str] = []
    pos = 0
    for m in _CASE.finditer(latex):
        if m.start() < pos:
            continue
        argument = read_argument(latex, m.end())
        if argument is None:
            continue
        lower = m.group(1) in ("MakeLowercase", "lowercase")
        parts = re.split(r"(\\[A-Za-z@]+)", argument[0])
        changed = "".join(p if p.startswith("\\") else (p.lower() if lower else p.upper()) for p in parts)
        out += [latex[pos : m.start()], "{", change_case(changed), "}"]
        pos = argument[1]
    out.append(latex[pos:])
    return "".join(out)


_STAGGERED = re.compile(r"\\(tensor\*?|indices)(?![A-Za-z@])\s*")


def stagger_indices(latex: str) -> str:
    """The tensor package's index lists set staggered: ``\\tensor{R}{_{ia}_{jb}}`` -> ``\\tensor{R}{_{ia}{}_{jb}}``,
    ``\\indices{^a_b}`` -> ``\\indices{^a{}_b}`` (each index after the first starts a new column, as the package
    sets them; KaTeX would call two subscripts in a row an error)."""
    if "\\tensor" not in latex and "\\indices" not in latex:
        return latex
    out: list[str] = []
    pos = 0
    for m in _STAGGERED.finditer(latex):
        if m.start() < pos:
            continue
        end = m.end()
        if m.group(1).startswith("tensor"):
            end = read_optional(latex, end)[1]
            base = read_argument(latex, end)
            if base is None:
                continue
            end = base[1]
        indices = read_argument(latex, end)
        if indices is None:
            continue
        scripts: list[str] = []
        at = skip_space(indices[0], 0)
        while at < len(indices[0]) and indices[0][at] in "^_":
            argument = read_argument(indices[0], at + 1)
            if argument is None:
                break
            scripts.append(f"{indices[0][at]}{{{argument[0]}}}")
            at = skip_space(indices[0], argument[1])
        if at < len(indices[0]) or len(scripts) < 2:
            continue  # not a plain list of indices: left as written
        out += [latex[pos : indices[1] - len(indices[0]) - 2], "{", "{}".join(scripts), "}"]
        pos = indices[1]
    out.append(latex[pos:])
    return "".join(out)


# \lower.5ex\hbox{$\sim$}, \raise 2pt\hbox{..}: plain TeX's box shifts
_SHIFT = re.compile(r"\\(raise|lower)\s*(-?\s*\d*\.?\d+\s*(?:pt|ex|em|mm|cm|in|bp|mu))\s*\\hbox\s*(?=\{)")


def box_shifts(text: str) -> str:
    """Plain TeX's box shifts (``\\lower.5ex\\hbox{$\\sim$}``, ``\\raise 2pt\\hbox{..}``) -> ``\\raisebox``."""
    out: list[str] = []
    pos = 0
    for m in _SHIFT.finditer(text):
        if m.start() < pos:
            continue
        box = read_argument(text, m.end())
        if box is None:
            continue
        size = m.group(2).replace(" ", "")
        if m.group(1) == "lower":
            size = size[1:] if size.startswith("-") else "-" + size
        out += [text[pos : m.start()], f"\\raisebox{{{size}}}{{{box[0]}}}"]
        pos = box[1]
    out.append(text[pos:])
    return "".join(out)


_OOALIGN = re.compile(r"\\ooalign\s*(?=\{)")
_LAYER_FILL = re.compile(r"\\hidewidth(?![A-Za-z@])|\\hfil+(?![A-Za-z@])")


def overlays(text: str) -> str:
    """Plain TeX's overlay ``\\ooalign{A\\cr\\hidewidth B\\hidewidth\\cr}`` (a summation sign with an integral drawn
    over it) -> ``\\text{\\rlap{A}B}``: each layer but the last set without width, the last after them (text mode,
    as in TeX, so the layers keep their ``$..$``)."""
    out: list[str] = []
    pos = 0
    for m in _OOALIGN.finditer(text):
        if m.start() < pos:
            continue
        arg = read_argument(text, m.end())
        if arg is None:
            continue
        layers = [_LAYER_FILL.sub("", layer).strip() for layer in _CR.split(arg[0])]
        layers = [layer for layer in layers if layer]
        body = "".join(f"\\rlap{{{layer}}}" for layer in layers[:-1]) + (layers[-1] if layers else "")
        out += [text[pos : m.start()], f"\\text{{{body}}}"]
        pos = arg[1]
    out.append(text[pos:])
    return "".join(out)


_SWITCH = re.compile(r"\\(iftrue|iffalse)(?![A-Za-z@])")
_CONDITIONAL_TOKEN = re.compile(r"\\(if[A-Za-z@]*|else|fi)(?![A-Za-z@])")


def tex_switches(text: str) -> str:
    """``\\iftrue A\\else B\\fi`` -> ``A`` and ``\\iffalse A\\else B\\fi`` -> ``B``: what a document's ``\\newif``
    switches (``\\newif\\ifthesis`` then ``\\thesistrue``) become once expanded, nested conditionals skipped whole."""
    for _ in range(64):
        m = _SWITCH.search(text)
        if m is None:
            break
        depth, middle, end = 0, None, None
        for token in _CONDITIONAL_TOKEN.finditer(text, m.end()):
            name = token.group(1)
            if name.startswith("if"):
                depth += 1
            elif name == "else" and depth == 0 and middle is None:
                middle = token
            elif name == "fi":
                if depth == 0:
                    end = token
                    break
                depth -= 1
        if end is None:
            text = text[: m.start()] + text[m.end() :]  # unbalanced: the switch alone is dropped
            continue
        if m.group(1) == "iftrue":
            kept = text[m.end() : middle.start() if middle else end.start()]
        else:
            kept = text[middle.end() : end.start()] if middle else ""
        text = text[: m.start()] + kept + text[end.end() :]
    return text


# a command used as an environment, as LaTeX allows (\begin{x} runs \x): \begin{mathcal}O\end{mathcal} is \mathcal O
_COMMAND_ENVIRONMENT = re.compile(
    r"\\(begin|end)\s*\{(mathcal|mathbf|mathrm|mathit|mathsf|mathtt|mathfrak|mathbb|mathscr|boldsymbol|bm|bf|it|rm|sf"
    r"|tt|em|displaystyle|textstyle|scriptstyle|scriptscriptstyle)\}"
)


def command_environments(text: str) -> str:
    """A font or style command used as an environment, as LaTeX allows (``\\begin{x}`` runs ``\\x``, ``\\end{x}``
    nothing): ``\\begin{mathcal}O\\end{mathcal}`` -> ``{\\mathcal O}``, which KaTeX reads."""
    return _COMMAND_ENVIRONMENT.sub(lambda m: f"{{\\{m.group(2)} " if m.group(1) == "begin" else "}", text)
