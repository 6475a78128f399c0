"""Rules of `engine.latex.preprocess.clean_latex` for what plain TeX's registers, boxes and alignments do inside a
formula, which KaTeX lacks: register settings (``\\baselineskip0.5ex``, ``\\medmuskip=0mu``) and skips dropped, a
``\\noalign`` between rows, ``\\mapstochar`` before an arrow, a ``\\raisebox`` shift relative to its box,
``\\mathchoice``'s four arguments set without the spaces KaTeX refuses between them, a ``\\discretionary`` set as
where the line does not break; and, on a whole display, row gaps
given by skip registers, mathtools' ``multlined``, and a relation set over a tab (``\\overset{(a)}&=``).

Each rule takes the text and the offset just past its command and returns the replacement and where to resume.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eqsearch.engine.latex.scan import read_argument, read_arguments, skip_space

__all__ = [
    "GLUE",
    "assignment",
    "discretionary",
    "mapsto_char",
    "mathchoice_rule",
    "multlined",
    "noalign",
    "raisebox",
    "row_gaps",
    "sets_before_tabs",
    "skip_glue",
]

#: A glue (or dimension) as TeX reads one after a register: ``= 2pt plus 1fil``.
GLUE = re.compile(
    r"\s*=?\s*-?[\d.]+\s*(?:pt|em|ex|mm|cm|in|bp|mu|sp|pc|dd|cc)(?:\s*(?:plus|minus)\s*-?[\d.]+\s*(?:pt|em|ex|fil+))*"
)


def skip_glue(text: str, end: int) -> tuple[str, int]:
    """``\\vskip 2pt``, ``\\jot=3pt``: dropped with the glue after it."""
    m = GLUE.match(text, end)
    return "", m.end() if m else end


def assignment(text: str, end: int) -> tuple[str, int]:
    # \baselineskip0.5ex (a register set inside a box): dropped with its value; a use as a unit (0.5\baselineskip) stays
    m = GLUE.match(text, end)
    return ("", m.end()) if m else (text[text.rfind("\\", 0, end) : end], end)


def discretionary(text: str, end: int) -> tuple[str, int]:
    """``\\discretionary{pre}{post}{whole}``: a display never breaks there, so TeX sets ``whole`` (a macro that
    repeats an operator on the next line, ``#1\\nobreak\\discretionary{}{\\hbox{$#1$}}{}``, sets it once)."""
    args, resume = read_arguments(text, end, 3)
    return (args[2], resume) if len(args) == 3 else ("\\discretionary", end)


_BOX_DIMENSION = re.compile(r"\A\s*(-?\d*\.?\d*)\s*\\(height|depth|width|totalheight)\s*\Z")


def raisebox(text: str, end: int) -> tuple[str, int]:
    # \raisebox{.2\height}{..}: a shift relative to the box, which KaTeX cannot read; a box is about 1em high
    arg = read_argument(text, end)
    m = None if arg is None else _BOX_DIMENSION.match(arg[0])
    if arg is None or m is None:
        return "\\raisebox", end
    factor = float(m.group(1)) if m.group(1) not in ("", "-", ".") else (-1.0 if m.group(1) == "-" else 1.0)
    scale = 0.3 if m.group(2) == "depth" else 1.0
    return f"\\raisebox{{{factor * scale:g}em}}", arg[1]


def mathchoice_rule(clean: Callable[[str], str]) -> Callable[[str, int], tuple[str, int]]:
    """The rule of ``\\mathchoice {A} {B}..``: KaTeX takes its four arguments only with no space between them (each
    argument cleaned by ``clean``)."""

    def rule(text: str, end: int) -> tuple[str, int]:
        args, resume = read_arguments(text, end, 4)
        if len(args) < 4:
            return "\\mathchoice", end
        return "\\mathchoice" + "".join(f"{{{clean(arg)}}}" for arg in args), resume

    return rule


def noalign(text: str, end: int) -> tuple[str, int]:
    # \noalign{\smallskip} between the rows of an array: vertical material; a rule in it is a horizontal line
    arg = read_argument(text, end)
    if arg is None:
        return "", end
    return ("\\hline " if "\\hrule" in arg[0] else ""), arg[1]


_ARROWS_AFTER_MAPSTO = {
    "\\rightarrow": "\\mapsto",
    "\\to": "\\mapsto",
    "\\longrightarrow": "\\longmapsto",
    "\\leftarrow": "\\mapsfrom",
    "\\gets": "\\mapsfrom",
    "\\Rightarrow": "\\Mapsto",
}
_NEXT_WORD = re.compile(r"\s*(\\[A-Za-z]+)")


def mapsto_char(text: str, end: int) -> tuple[str, int]:
    # plain TeX's bar of \mapsto, set before an arrow (\mapstochar\rightarrow); alone, a short bar of class relation
    m = _NEXT_WORD.match(text, end)
    if m is not None and m.group(1) in _ARROWS_AFTER_MAPSTO:
        return _ARROWS_AFTER_MAPSTO[m.group(1)], m.end()
    return "\\mathrel{\\shortmid}", end


# mathtools' multlined (a multline inside a formula, [position][width] options): lines one over the other
_MULTLINED = re.compile(r"\\(begin|end)\s*\{multlined\}(?:\s*\[[^\]]*\])*")
# \\[\medskipamount]: a row gap given by a skip register, which KaTeX cannot read (LaTeX's values)
_SKIP_AMOUNT = re.compile(r"(\\\\\s*\[\s*)(-?\d*\.?\d*)\s*\\(smallskipamount|medskipamount|bigskipamount|jot)\s*\]")
_SKIP_POINTS = {"smallskipamount": 3, "medskipamount": 6, "bigskipamount": 12, "jot": 3}


def _skip_amount(m: re.Match[str]) -> str:
    factor = float(m.group(2)) if m.group(2) not in ("", "-", ".") else 1.0
    return f"{m.group(1)}{factor * _SKIP_POINTS[m.group(3)]:g}pt]"


def row_gaps(text: str) -> str:
    """``\\\\[\\medskipamount]`` (a row gap given by a skip register) -> ``\\\\[6pt]``, LaTeX's values."""
    return _SKIP_AMOUNT.sub(_skip_amount, text)


def multlined(text: str) -> str:
    """mathtools' ``multlined`` (with its position and width options) -> ``gathered``: its lines one over the other."""
    return _MULTLINED.sub(lambda m: f"\\{m.group(1)}{{gathered}}", text)


# \overset{(a)}&= in an alignment: amsmath sets the relation in the next column; KaTeX wants the tab first
_SET_BEFORE_TAB = re.compile(r"\\(overset|underset|stackrel)(?![A-Za-z@])\s*")


def sets_before_tabs(text: str) -> str:
    """``\\overset{(a)}&=`` -> ``&\\overset{(a)}{=}``: amsmath sets the relation in the next column."""
    out: list[str] = []
    pos = 0
    for m in _SET_BEFORE_TAB.finditer(text):
        if m.start() < pos:
            continue
        above = read_argument(text, m.end())
        tab = None if above is None else skip_space(text, above[1])
        if tab is None or not text.startswith("&", tab):
            continue
        base = read_argument(text, tab + 1)
        if base is None:
            continue
        out += [text[pos : m.start()], f"&\\{m.group(1)}{{{above[0]}}}{{{base[0]}}}"]
        pos = base[1]
    out.append(text[pos:])
    return "".join(out)
