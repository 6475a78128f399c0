"""Array column specifications KaTeX lacks, rewritten into ones it has.

Grammars and case tables put material between columns with ``@{...}`` and ``!{...}``
(``\\begin{array}{l@{\\;::=\\;}l}``, or ``@{}`` to drop the padding), and the array package adds ``>{...}``/``<{...}``
(code before and after every cell of a column), ``p{..}``/``m{..}``/``b{..}`` (paragraph columns) and
``*{n}{spec}``; siunitx adds ``S[..]``, a column of numbers. KaTeX's ``array`` takes only ``l``, ``c``, ``r``, ``|``
and ``:``. The material between columns becomes a column of its own, put into every row; the code of ``>{}`` and
``<{}`` goes into the column's cells, less the paragraph-alignment commands (``\\raggedright\\arraybackslash``) that
mean nothing in a cell of one line; paragraph columns become ``l`` columns whose cells are text, as LaTeX sets them
(``$x$`` inside them is math); an ``S`` column becomes a ``c`` column, its options (rounding) dropped.

A ``tabular`` inside a display (a case table written as text) becomes an ``array`` whose cells are text:
``\\begin{tabular}{cc} 0 & $r<a$ \\\\ \\end{tabular}`` -> ``\\begin{array}{cc} \\text{0} & \\text{$r<a$} \\end{array}``.

mathtools' starred cases (``cases*``, ``dcases*``, ``rcases*``, ``drcases*``) set their second column as text; KaTeX has
the unstarred ones only: the second cell of each row goes into ``\\text{..}`` (``$x$`` inside it stays math).
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.scan import read_argument, read_optional

__all__ = ["rewrite_array_specs", "rewrite_starred_cases", "rewrite_tabulars", "split_top_level"]

_BEGIN_ARRAY = re.compile(r"\\begin\s*\{array\}\s*")
_ARRAY_TOKEN = re.compile(r"\\(begin|end)\s*\{array\}")
_UNSUPPORTED = re.compile(r"[@!<>*pmbS]")
_PARAGRAPH_LAYOUT = re.compile(
    r"\\(?:raggedright|raggedleft|RaggedRight|RaggedLeft|centering|arraybackslash)(?![A-Za-z@])\s*"
)


def rewrite_array_specs(latex: str) -> str:
    """Every ``array`` of ``latex`` whose column specification KaTeX would refuse, rewritten (module docstring)."""
    if "array" not in latex:
        return latex
    out: list[str] = []
    pos = 0
    for m in _BEGIN_ARRAY.finditer(latex):
        if m.start() < pos:
            continue
        spec = read_argument(latex, m.end())
        if spec is None or not _UNSUPPORTED.search(spec[0]):
            continue
        parsed = _parse(spec[0])
        body_end = _matching_end(latex, spec[1])
        if parsed is None or body_end is None:
            continue
        columns, inserts, before, after, paragraphs = parsed
        body = latex[spec[1] : body_end]
        new_spec, rows = _rebuild(columns, inserts, before, after, paragraphs, body)
        out += [latex[pos : m.start()], f"\\begin{{array}}{{{new_spec}}}", rows]
        pos = body_end
    out.append(latex[pos:])
    return "".join(out)


def _parse(spec: str) -> tuple[list[str], dict[int, str], dict[int, str], dict[int, str], set[int]] | None:
    """Columns (``l``/``c``/``r``, with any ``|`` or ``:`` before them), material between them by position, code
    before and after each column's cells, the paragraph columns; None for a specification this does not read."""
    spec = _repeat(spec)
    columns: list[str] = []
    inserts: dict[int, str] = {}
    before: dict[int, str] = {}
    after: dict[int, str] = {}
    paragraphs: set[int] = set()
    rules = ""
    pending_before = ""
    i = 0
    while i < len(spec):
        c = spec[i]
        if c.isspace():
            i += 1
        elif c in "|:":
            rules += c
            i += 1
        elif c in "lcr":
            columns.append(rules + c)
            if pending_before:
                before[len(columns) - 1] = pending_before
            rules = pending_before = ""
            i += 1
        elif c == "S":  # siunitx's number column (S[round-mode=places]): its cells centred, the options layout
            columns.append(rules + "c")
            if pending_before:
                before[len(columns) - 1] = pending_before
            rules = pending_before = ""
            i = read_optional(spec, i + 1)[1]
        elif c in "pmb":
            arg = read_argument(spec, i + 1)
            if arg is None:
                return None
            columns.append(rules + "l")
            paragraphs.add(len(columns) - 1)
            if pending_before:
                before[len(columns) - 1] = pending_before
            rules = pending_before = ""
            i = arg[1]
        elif c in "@!<>":
            arg = read_argument(spec, i + 1)
            if arg is None:
                return None
            if c in "@!":
                if arg[0].strip():
                    position = len(columns)
                    inserts[position] = inserts.get(position, "") + arg[0]
            elif c == ">":
                pending_before += _PARAGRAPH_LAYOUT.sub("", arg[0])
            elif columns:
                after[len(columns) - 1] = after.get(len(columns) - 1, "") + _PARAGRAPH_LAYOUT.sub("", arg[0])
            i = arg[1]
        else:
            return None
    if rules and columns:
        columns[-1] += rules
    return (columns, inserts, before, after, paragraphs) if columns else None


def _repeat(spec: str) -> str:
    """``*{3}{l}`` -> ``lll``."""
    for _ in range(8):
        star = spec.find("*")
        if star < 0:
            return spec
        count = read_argument(spec, star + 1)
        block = None if count is None else read_argument(spec, count[1])
        if block is None or not count[0].strip().isdigit():
            return spec
        spec = spec[:star] + block[0] * min(int(count[0]), 64) + spec[block[1] :]
    return spec


def _matching_end(latex: str, start: int) -> int | None:
    """Where the ``\\end{array}`` that closes the array whose body starts at ``start`` begins."""
    depth = 1
    for m in _ARRAY_TOKEN.finditer(latex, start):
        depth += 1 if m.group(1) == "begin" else -1
        if depth == 0:
            return m.start()
    return None


def _rebuild(
    columns: list[str],
    inserts: dict[int, str],
    before: dict[int, str],
    after: dict[int, str],
    paragraphs: set[int],
    body: str,
) -> tuple[str, str]:
    """The new specification and body: an extra ``c`` column per position with material, the cells' code, the cells
    of paragraph columns as text."""
    spec = ""
    for k in range(len(columns) + 1):
        if k in inserts:
            spec += "c"
        if k < len(columns):
            spec += columns[k]
    rows = []
    for row in split_top_level(body, "\\\\"):
        cells = split_top_level(row, "&")
        if len(cells) == 1 and not cells[0].strip():
            rows.append(row)
            continue
        out: list[str] = []
        for k in range(len(columns) + 1):
            if k in inserts and k <= len(cells):
                out.append(inserts[k])
            if k < len(cells):
                cell = before.get(k, "") + cells[k] + after.get(k, "")
                out.append(f"\\text{{{cell}}}" if k in paragraphs and cell.strip() else cell)
        rows.append(" & ".join(out))
    return spec, "\\\\".join(rows)


def split_top_level(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` (``&`` or ``\\\\``) outside brace groups and inner environments."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        c = text[i]
        if text.startswith(separator, i) and depth == 0 and (separator != "&" or (i == 0 or text[i - 1] != "\\")):
            parts.append(text[start:i])
            i += len(separator)
            start = i
            continue
        if c == "\\":
            if text.startswith("\\begin", i):
                depth += 1
            elif text.startswith("\\end", i):
                depth -= 1
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    parts.append(text[start:])
    return parts


_BEGIN_TABULAR = re.compile(r"\\begin\s*\{tabular\}\s*(?:\[[tbc]\]\s*)?")
_TABULAR_TOKEN = re.compile(r"\\(begin|end)\s*\{tabular\}")
_RULES = re.compile(r"\A\s*((?:\\(?:hline|toprule|midrule|bottomrule)(?![A-Za-z@])|\\cline\s*\{[^{}]*\}|\s)*)")


def rewrite_tabulars(latex: str) -> str:
    """Every ``tabular`` of ``latex`` as an ``array`` of text cells (module docstring); rules kept as ``\\hline``."""
    out: list[str] = []
    pos = 0
    for m in _BEGIN_TABULAR.finditer(latex):
        if m.start() < pos:
            continue
        spec = read_argument(latex, m.end())
        if spec is None:
            continue
        depth, end = 1, None
        for t in _TABULAR_TOKEN.finditer(latex, spec[1]):
            depth += 1 if t.group(1) == "begin" else -1
            if depth == 0:
                end = t
                break
        if end is None:
            continue
        rows = []
        for row in split_top_level(rewrite_tabulars(latex[spec[1] : end.start()]), "\\\\"):
            rules = _RULES.match(row)
            lead = "".join(
                "\\hline " for _ in re.finditer(r"\\(?:hline|toprule|midrule|bottomrule)(?![A-Za-z@])", rules.group(1))
            )
            cells = split_top_level(row[rules.end() :], "&")
            text = " & ".join(f"\\text{{{cell.strip()}}}" if cell.strip() else "" for cell in cells)
            rows.append(lead + text)
        while rows and not rows[-1].strip():
            rows.pop()
        out += [latex[pos : m.start()], f"\\begin{{array}}{{{spec[0]}}}", " \\\\ ".join(rows), "\\end{array}"]
        pos = end.end()
    out.append(latex[pos:])
    return "".join(out)


_STARRED_CASES = re.compile(r"\\begin\s*\{((?:d?r?)cases)\*\}")


def rewrite_starred_cases(latex: str) -> str:
    """mathtools' ``cases*`` family as the unstarred environments with the second column as text (module
    docstring)."""
    out: list[str] = []
    pos = 0
    for m in _STARRED_CASES.finditer(latex):
        if m.start() < pos:
            continue
        name = m.group(1)
        tokens = re.compile(r"\\(begin|end)\s*\{" + name + r"\*\}")
        depth, end = 1, None
        for t in tokens.finditer(latex, m.end()):
            depth += 1 if t.group(1) == "begin" else -1
            if depth == 0:
                end = t
                break
        if end is None:
            break
        rows = []
        for row in split_top_level(rewrite_starred_cases(latex[m.end() : end.start()]), "\\\\"):
            cells = split_top_level(row, "&")
            if len(cells) > 1 and cells[1].strip():
                cells[1] = f"\\text{{{cells[1].strip()}}}"
            rows.append("&".join(cells))
        out += [latex[pos : m.start()], f"\\begin{{{name}}}", "\\\\".join(rows), f"\\end{{{name}}}"]
        pos = end.end()
    out.append(latex[pos:])
    return "".join(out)
