"""Package constructs in formulas that KaTeX lacks, rewritten into what it has: nicematrix, mathtools' small matrices
with delimiters, inline code, Young tableaux.

- nicematrix's matrices (``\\begin{bNiceMatrix}[first-row] ... \\end{bNiceMatrix}``, ``NiceArray``) become amsmath's
  (``bmatrix``, ``array``): the options (a first row of labels, colours, rules) are layout, the cells stay; its dotted
  lines ``\\Cdots``, ``\\Vdots``, ``\\Ddots``, ``\\Ldots``, ``\\Iddots`` become the plain dots.
- mathtools' ``psmallmatrix``, ``bsmallmatrix``, ``Bsmallmatrix``, ``vsmallmatrix``, ``Vsmallmatrix`` (and starred,
  with a column alignment): KaTeX's ``smallmatrix`` between ``\\left``/``\\right`` delimiters.
- Inline code in a formula (``\\mintinline{haskell}{fork id id}`` of minted, ``\\lstinline|x|`` of listings,
  ``\\verb``), usually through a macro such as ``\\newcommand{\\hs}{\\mintinline{haskell}}``: typewriter text, its
  characters escaped for KaTeX's text mode. Applied after macro expansion: such a macro's body alone lacks the code.
- mhchem's ``\\ce{BH+}`` and ``\\pu{..}`` (KaTeX's mhchem extension, loaded by the worker) work in math mode only
  there, while LaTeX takes them in text too (``\\textrm{\\ce{BH+}}``): each becomes ``\\ensuremath{\\ce{..}}``,
  which `engine.latex.textmode.resolve_ensuremath` then sets by mode.
- Young diagrams and tableaux (youngtab's ``\\yng(3,1)``, ``\\young(ab,c)``; ytableau's ``\\ydiagram{3,1}``,
  ``\\ytableaushort{ab,c}`` and ``ytableau`` environment): rows of ``\\boxed`` cells in an ``array``, the entries kept.
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.scan import read_argument, read_optional, skip_space

__all__ = ["chemistry_in_text", "inline_code", "rewrite_nicematrix", "rewrite_small_matrices", "rewrite_young_tableaux"]

_NICE = re.compile(r"\\(begin|end)\s*\{([pbBvV]?)Nice(Matrix|Array)\}")
_DOTS = {"Cdots": "\\cdots", "Vdots": "\\vdots", "Ddots": "\\ddots", "Ldots": "\\ldots", "Iddots": "\\mathinner{⋰}"}
_NICE_DOTS = re.compile(r"\\(Cdots|Vdots|Ddots|Ldots|Iddots)(?![A-Za-z@])(\[[^\]]*\])?")


_SMALL = re.compile(r"\\(begin|end)\s*\{([pbBvV])smallmatrix(\*?)\}(\s*\[[lcr]\])?")
_SMALL_DELIMITERS = {"p": ("(", ")"), "b": ("[", "]"), "B": ("\\{", "\\}"), "v": ("|", "|"), "V": ("\\|", "\\|")}


def rewrite_small_matrices(latex: str) -> str:
    """mathtools' small matrices with delimiters as ``smallmatrix`` between them (module docstring)."""

    def one(m: re.Match[str]) -> str:
        left, right = _SMALL_DELIMITERS[m.group(2)]
        if m.group(1) == "begin":
            return f"\\left{left}\\begin{{smallmatrix}}"
        return f"\\end{{smallmatrix}}\\right{right}"

    return _SMALL.sub(lambda m: one(m) + (m.group(4) or "" if m.group(1) == "end" else ""), latex)


def rewrite_nicematrix(latex: str) -> str:
    """nicematrix's environments and dotted lines as amsmath's (module docstring)."""
    if "Nice" not in latex and "dots" not in latex:
        return latex
    out: list[str] = []
    pos = 0
    for m in _NICE.finditer(latex):
        if m.start() < pos:
            continue
        name = f"{m.group(2)}matrix" if m.group(3) == "Matrix" else "array"
        out += [latex[pos : m.start()], f"\\{m.group(1)}{{{name}}}"]
        pos = m.end()
        if m.group(1) == "begin":
            if m.group(3) == "Array":  # \begin{NiceArray}{cc}[options]: the column specification stays
                spec = read_argument(latex, pos)
                if spec is not None:
                    out.append(f"{{{spec[0]}}}")
                    pos = spec[1]
            option, end = read_optional(latex, pos)
            if option is not None:
                pos = end
    out.append(latex[pos:])
    return _NICE_DOTS.sub(lambda d: _DOTS[d.group(1)], "".join(out))


_CODE = re.compile(r"\\(mintinline|lstinline|verb)(?![A-Za-z@])\*?")
# KaTeX's text mode: characters that are commands or markup there, written as what prints them
_ESCAPES = {
    "\\": "\\textbackslash{}",
    "{": "\\{",
    "}": "\\}",
    "$": "\\$",
    "&": "\\&",
    "#": "\\#",
    "%": "\\%",
    "_": "\\_",
    "^": "\\textasciicircum{}",
    "~": "\\textasciitilde{}",
}


def inline_code(latex: str) -> str:
    """``\\mintinline{lang}{code}``, ``\\mintinline{lang}|code|``, ``\\lstinline[opts]|code|`` and ``\\verb|code|``
    inside a formula -> ``\\texttt{code}`` with the code's special characters escaped; left as they are when the
    code is not there to read."""
    if "inline" not in latex and "\\verb" not in latex:
        return latex
    out: list[str] = []
    pos = 0
    for m in _CODE.finditer(latex):
        if m.start() < pos:
            continue
        end = m.end()
        if m.group(1) == "mintinline":
            _, end = read_optional(latex, end)
            language = read_argument(latex, end)
            if language is None:
                continue
            end = language[1]
        elif m.group(1) == "lstinline":
            _, end = read_optional(latex, end)
        code = _read_code(latex, skip_space(latex, end) if m.group(1) != "verb" else end)
        if code is None:
            continue
        text, end = code
        out += [latex[pos : m.start()], "\\texttt{", "".join(_ESCAPES.get(c, c) for c in text), "}"]
        pos = end
    out.append(latex[pos:])
    return "".join(out)


def _read_code(latex: str, pos: int) -> tuple[str, int] | None:
    """The code after ``pos``: a brace group (balanced) or text between two equal delimiters (``|x|``)."""
    if pos >= len(latex):
        return None
    if latex[pos] == "{":
        arg = read_argument(latex, pos)
        return None if arg is None else (arg[0], arg[1])
    delimiter = latex[pos]
    if delimiter.isalnum() or delimiter.isspace():
        return None
    close = latex.find(delimiter, pos + 1)
    return None if close < 0 else (latex[pos + 1 : close], close + 1)


# youngtab's \yng(3,1) and \young(ab,c), ytableau's \ydiagram{3,1}, \ytableaushort{ab,c} and its environment
_YOUNG = re.compile(r"\\(yng|young|ydiagram|ytableaushort)(?![A-Za-z@])\s*")
_YOUNG_SETUP = re.compile(r"\\(?:ytableausetup\s*\{[^{}]*\}|Yvcentermath[01]?|Ynotvcentermath|Yboxdim\s*\{[^{}]*\})")
_YTABLEAU = re.compile(r"\\begin\s*\{ytableau\}(.*?)\\end\s*\{ytableau\}", re.S)
_CELL_TOKEN = re.compile(r"\\[A-Za-z@]+|\\.|\{[^{}]*\}|\S")
_EMPTY_BOX = "\\phantom{0}"
_EMPTY_CELLS = frozenset({"\\hfil", "\\hfill", "\\none", "\\ ", "\\,"})


def rewrite_young_tableaux(latex: str) -> str:
    """Young diagrams and tableaux, which KaTeX lacks, as rows of boxed cells (``\\yng(2,1)`` -> two boxes over
    one; ``\\young(ab,c)`` and a ``ytableau`` environment -> boxes holding their entries; ``\\none`` leaves a gap)."""
    if "\\y" not in latex and "ytableau" not in latex:
        return latex
    latex = _YOUNG_SETUP.sub("", latex)
    latex = _YTABLEAU.sub(lambda m: _tableau([_split_row(r) for r in m.group(1).split("\\\\") if r.strip()]), latex)
    out: list[str] = []
    pos = 0
    for m in _YOUNG.finditer(latex):
        if m.start() < pos:
            continue
        kind, end = m.group(1), m.end()
        if kind in ("yng", "young"):
            close = latex.find(")", end) if latex.startswith("(", end) else -1
            if close < 0:
                continue
            spec, end = latex[end + 1 : close], close + 1
        else:
            _, end = read_optional(latex, end)
            arg = read_argument(latex, end)
            if arg is None:
                continue
            spec, end = arg
        rows = [r.strip() for r in spec.split(",")]
        if kind in ("yng", "ydiagram"):
            cells = [[""] * _boxes(r) if _boxes(r) is not None else [r] for r in rows]
        else:
            cells = [["" if t in _EMPTY_CELLS else t for t in _CELL_TOKEN.findall(r)] for r in rows]
        out += [latex[pos : m.start()], _tableau(cells)]
        pos = end
    out.append(latex[pos:])
    return "".join(out)


def _boxes(row: str) -> int | None:
    """``3`` -> 3 boxes (``2+3``, a row offset by two, -> 3); None when not a count."""
    count = row.split("+")[-1].strip()
    return min(int(count), 64) if count.isdigit() else None


def _split_row(row: str) -> list[str]:
    return ["" if c.strip() in _EMPTY_CELLS else c.strip() for c in row.split("&")]


def _tableau(rows: list[list[str]]) -> str:
    lines = ["".join(f"\\boxed{{{c or _EMPTY_BOX}}}" for c in row) for row in rows]
    return "\\begin{array}{l}" + " \\\\ ".join(lines) + "\\end{array}"


_CHEMISTRY = re.compile(r"\\(ce|pu)(?![A-Za-z@])\s*(?=\{)")


def chemistry_in_text(latex: str) -> str:
    """``\\ce{X}`` -> ``\\ensuremath{\\ce{X}}`` (module docstring); before `resolve_ensuremath`."""
    if "\\ce" not in latex and "\\pu" not in latex:
        return latex
    out: list[str] = []
    pos = 0
    for m in _CHEMISTRY.finditer(latex):
        if m.start() < pos:
            continue
        arg = read_argument(latex, m.end())
        if arg is None:
            continue
        out += [latex[pos : m.start()], f"\\ensuremath{{\\{m.group(1)}{{{arg[0]}}}}}"]
        pos = arg[1]
    out.append(latex[pos:])
    return "".join(out)
