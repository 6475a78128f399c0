"""A display environment's body as one KaTeX expression.

KaTeX has amsmath's inner environments, not the display environments papers write: `wrap_environment` turns
align/flalign into ``aligned``, alignat into ``alignedat``, gather/multline and breqn's dmath/dseries into
``gathered``, eqnarray and breqn's darray into ``array``, and the body of any other display (``equation``, ``$$``,
``\\[``) with a top-level ``&`` or ``\\\\`` into ``aligned``. A ``minipage`` inside a display becomes its text and the
displays it holds, one over the other (`rewrite_minipages`). `engine.latex.preprocess.preprocess_latex` calls both.
"""

from __future__ import annotations

import re

__all__ = ["rewrite_minipages", "wrap_environment"]

_ALIGN_LIKE = frozenset({"align", "flalign", "empheq", "split", "aligned"})
_ALIGNAT_LIKE = frozenset({"alignat", "xalignat", "xxalignat", "alignedat"})
_GATHER_LIKE = frozenset({"gather", "multline", "gathered", "dmath", "dseries"})
_ARRAY_LIKE = frozenset({"eqnarray", "IEEEeqnarray", "darray"})
#: Environments KaTeX knows that may come as a whole display: re-wrapped as they are.
_KATEX_ENVIRONMENTS = frozenset(
    {"array", "matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "cases", "dcases", "rcases", "CD"}
)
_TOKEN = re.compile(r"\\begin(?![A-Za-z])|\\end(?![A-Za-z])|\\(?:[A-Za-z@]+|.)|[{}&]", re.S)


def _top_level(body: str) -> tuple[bool, bool, int]:
    """(has a top-level ``&``, has a top-level ``\\\\``, most top-level ``&`` in one row)."""
    depth = 0
    has_amp = has_newline = False
    row_amps = max_amps = 0
    for m in _TOKEN.finditer(body):
        token = m.group(0)
        if token in ("{", "\\begin"):
            depth += 1
        elif token in ("}", "\\end"):
            depth -= 1
        elif depth == 0:
            if token == "&":
                has_amp = True
                row_amps += 1
                max_amps = max(max_amps, row_amps)
            elif token in ("\\\\", "\\cr"):
                has_newline = True
                row_amps = 0
    return has_amp, has_newline, max_amps


def _strip_trailing_newlines(body: str) -> str:
    body = body.strip()
    while body.endswith("\\\\"):  # a final row separator would add an empty row
        body = body[:-2].rstrip()
    if body.endswith("\\"):  # a control space ("X,\\ ") at the very end, its space stripped: only spacing
        body = body[:-1].rstrip()
    return body


def wrap_environment(body: str, environment: str) -> str:
    """One KaTeX expression for the body of a display environment.

    Args:
        body: the text between the delimiters, arguments excluded (``alignat``'s ``{2}`` may lead the body).
        environment: the environment name (a trailing ``*`` is ignored), or ``$$``, ``\\[``, ``math``.

    Returns:
        The body, wrapped in ``aligned``, ``alignedat``, ``gathered`` or ``array`` where needed.
    """
    name = environment.strip().rstrip("*")
    body = _strip_trailing_newlines(body)
    if name in _KATEX_ENVIRONMENTS:
        return f"\\begin{{{name}}}{body}\\end{{{name}}}"
    has_amp, has_newline, max_amps = _top_level(body)
    if name in _ALIGNAT_LIKE:
        m = re.match(r"\s*\{\s*(\d+)\s*\}", body)
        if m:
            columns, body = int(m.group(1)), body[m.end() :]
        else:
            columns = max(1, (max_amps + 2) // 2)
        return f"\\begin{{alignedat}}{{{columns}}}{body}\\end{{alignedat}}"
    if name in _ARRAY_LIKE:
        spec = "rcl" if name == "eqnarray" and max_amps <= 2 else "l" * (max_amps + 1)
        return f"\\begin{{array}}{{{spec}}}{body}\\end{{array}}"
    if name in _GATHER_LIKE:
        if has_amp:  # multline/gather have no alignment points; a stray & would be an error
            return f"\\begin{{aligned}}{body}\\end{{aligned}}"
        return f"\\begin{{gathered}}{body}\\end{{gathered}}" if has_newline else body
    if name in _ALIGN_LIKE or has_amp or has_newline:
        return f"\\begin{{aligned}}{body}\\end{{aligned}}"
    return body


_MINIPAGE = re.compile(r"\\begin\s*\{minipage\}\s*(?:\[[^\]]*\]\s*)*\{[^{}]*\}(.*?)\\end\s*\{minipage\}", re.S)
_INNER_DISPLAY = re.compile(
    r"\\begin\s*\{((?:equation|align|gather|multline|flalign)\*?)\}(.*?)\\end\s*\{\1\}|\\\[(.*?)\\\]", re.S
)


def rewrite_minipages(text: str) -> str:
    """A ``minipage`` inside a display (a column of constraints set beside a matrix): its text as ``\\text``, the
    displays it holds as the formulas they are, one over the other."""

    def rows(m: re.Match[str]) -> str:
        parts: list[str] = []
        pos = 0
        for d in _INNER_DISPLAY.finditer(m.group(1)):
            words = m.group(1)[pos : d.start()].strip()
            if words:
                parts.append(f"\\text{{{words}}}")
            parts.append(wrap_environment(d.group(2) if d.group(1) else d.group(3), d.group(1) or "\\["))
            pos = d.end()
        if m.group(1)[pos:].strip():
            parts.append(f"\\text{{{m.group(1)[pos:].strip()}}}")
        return parts[0] if len(parts) == 1 else "\\begin{gathered}" + " \\\\ ".join(parts) + "\\end{gathered}"

    return _MINIPAGE.sub(rows, text)
