"""Finding the math of a document body: displays (environments, starred too, ``\\[ \\]`` and ``$$``) and inline
formulas (``$...$``, ``\\(...\\)``, ``\\begin{math}``).

The scanner walks the text once, skipping escaped characters, recording inline math, and jumping past each display
it finds: an environment nested in a display (``split`` in ``equation``, ``aligned`` in ``\\[``) stays part of the
outer body and is never extracted twice. A ``$$`` inside a ``tabular`` or a ``tikzpicture`` is an empty formula
(TeX reads a table cell or a node's text in restricted horizontal mode, where ``$$`` opens no display), not a
display. breqn's ``dgroup`` is a grouping, like
``subequations``: the ``dmath`` inside it are the displays. A display written in the body of a definition made in the
text (``\\renewcommand{\\tab}[1]{\\begin{align*}##1\\end{align*}}`` inside a macro a display macro expands) is the
definition's, set where the macro is used, not a display where it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eqsearch.engine.latex.scan import group_end, read_optional, skip_space

# Display environments and how many mandatory arguments follow \begin{...} (alignat{2}, IEEEeqnarray{rCl}).
DISPLAY_ENVIRONMENTS: dict[str, int] = {
    "equation": 0,
    "align": 0,
    "gather": 0,
    "multline": 0,
    "flalign": 0,
    "alignat": 1,
    "xalignat": 1,
    "xxalignat": 1,
    "eqnarray": 0,
    "displaymath": 0,
    "dmath": 0,
    "dseries": 0,
    "darray": 1,
    "IEEEeqnarray": 1,
    "empheq": 1,
}


# Displays whose \\begin takes an optional argument before the body (breqn: ``\\begin{dmath}[label=eq:1]``).
_OPTIONAL_ARGUMENT = frozenset({"dmath", "dseries", "darray", "empheq"})


@dataclass(frozen=True)
class InlineMath:
    """One inline formula found in a text.

    Attributes:
        body: the text between the delimiters.
        start: offset of the opening delimiter.
        end: offset just past the closing delimiter.
        delimiter: ``$``, ``\\(`` or ``math``.
    """

    body: str
    start: int
    end: int
    delimiter: str


@dataclass(frozen=True)
class DisplayMath:
    """One display found in a text.

    Attributes:
        environment: environment name incl. ``*``, or ``$$`` / ``\\[``.
        body: the text between the delimiters (arguments of the environment excluded).
        start: offset of the opening delimiter.
        end: offset just past the closing delimiter (or where scanning resumed when unterminated).
        args: mandatory arguments of the environment.
        terminated: False when the closing delimiter was never found.
    """

    environment: str
    body: str
    start: int
    end: int
    args: tuple[str, ...] = ()
    terminated: bool = True


def _env_names(aliases: dict[str, str]) -> list[str]:
    names = set(DISPLAY_ENVIRONMENTS) | set(aliases)
    return sorted(names, key=len, reverse=True)


def find_displays(text: str, aliases: dict[str, str] | None = None) -> list[DisplayMath]:
    """All display math in ``text``, in order, outermost only (see `scan_math`)."""
    return scan_math(text, aliases)[0]


def scan_math(text: str, aliases: dict[str, str] | None = None) -> tuple[list[DisplayMath], list[InlineMath]]:
    """All display math and inline formulas in ``text``, in order; displays outermost only.

    Args:
        text: document body with comments and verbatim already removed.
        aliases: user environments that wrap a display (``eqn`` -> ``equation``), from the macro table.

    Returns:
        ``(displays, inline)``. An unterminated display is returned with ``terminated=False`` and a body cut at the
        next paragraph or 2000 characters so that it can be recorded as a failed equation; an unclosed ``$`` ends at
        the paragraph, as TeX's error recovery does, and is not an inline formula.
    """
    aliases = aliases or {}
    names = "|".join(re.escape(n) for n in _env_names(aliases))
    token = re.compile(r"\\begin\s*\{(?:(" + names + r")(\*?)|(math))\}|\\[\\$\[(]|\$\$?")
    out: list[DisplayMath] = []
    inline: list[InlineMath] = []
    tables = _table_spans(text) if "$$" in text and "\\begin" in text else []
    definitions = _definition_spans(text) if "#" in text else []
    pos = 0
    n = len(text)
    while True:
        m = token.search(text, pos)
        if m is None:
            return out, inline
        s = m.group(0)
        inside = next((end for start, end in definitions if start < m.start() < end), None)
        if inside is not None:
            pos = inside  # a definition's body: its math is set where the definition is used
        elif s in ("\\\\", "\\$"):
            pos = m.end()
        elif s in ("$", "\\(") or m.group(3):
            closer = {"$": "$", "\\(": "\\)"}.get(s, "\\end{math}")
            pos, body_end = _skip_inline(text, m.end(), closer)
            if body_end >= 0:
                inline.append(InlineMath(text[m.end() : body_end], m.start(), pos, "math" if m.group(3) else s))
        elif s == "$$" and _inside(tables, m.start()):
            pos = m.end()  # an empty formula: in a table cell (restricted horizontal mode) $$ opens no display
        elif s in ("$$", "\\["):
            closer = "$$" if s == "$$" else "\\]"
            close = _find_closer(text, m.end(), closer)
            if close < 0:
                cut = _cut(text, m.end())
                out.append(DisplayMath(s, text[m.end() : cut], m.start(), cut, terminated=False))
                pos = cut
            else:
                out.append(DisplayMath(s, text[m.end() : close], m.start(), close + len(closer)))
                pos = close + len(closer)
        else:
            name = m.group(1) + m.group(2)
            base = aliases.get(m.group(1), m.group(1))
            environment = base if base.endswith("*") else base + m.group(2)
            body_start = m.end()
            if base.rstrip("*") in _OPTIONAL_ARGUMENT:
                body_start = read_optional(text, body_start)[1]
            args: list[str] = []
            for _ in range(DISPLAY_ENVIRONMENTS.get(base.rstrip("*"), 0)):
                brace = skip_space(text, body_start)
                end = group_end(text, brace)  # only a brace group: a lone token would be the body's first
                if end is None:
                    break
                args.append(text[brace + 1 : end - 1])
                body_start = end
            close_start, close_end = _find_end(text, body_start, name)
            if close_start < 0:
                cut = _cut(text, body_start)
                out.append(DisplayMath(environment, text[body_start:cut], m.start(), cut, tuple(args), False))
                pos = cut
            else:
                out.append(DisplayMath(environment, text[body_start:close_start], m.start(), close_end, tuple(args)))
                pos = close_end
        if pos >= n:
            return out, inline


# table cells and TikZ node texts: TeX reads them in restricted horizontal mode, where $$ is an empty formula
_TABULAR = re.compile(r"\\(begin|end)\s*\{(?:tabular\*?|tabularx|tabulary|longtable\*?|tikzpicture)\}")


def _table_spans(text: str) -> list[tuple[int, int]]:
    """The outermost ``tabular``-like environments of ``text`` (start, end), an unclosed one running to the end."""
    spans: list[tuple[int, int]] = []
    depth, start = 0, 0
    for m in _TABULAR.finditer(text):
        if m.group(1) == "begin":
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                spans.append((start, m.end()))
    if depth:
        spans.append((start, len(text)))
    return spans


# \newcommand{\x}[1]{..}, \renewcommand*\x{..}, \def\x#1{..}, \NewDocumentCommand{\x}{m}{..}: the body's brace
_DEFINITION = re.compile(
    r"\\(?:(?:re|provide)?newcommand\*?\s*(?:\{\s*\\[A-Za-z@]+\s*\}|\\[A-Za-z@]+)\s*(?:\[\d\]\s*)?(?:\[[^\]]*\]\s*)?"
    r"|[gex]?def\s*\\[A-Za-z@]+[^{]*"
    r"|(?:New|Renew|Provide|Declare)DocumentCommand\s*(?:\{\s*\\[A-Za-z@]+\s*\}|\\[A-Za-z@]+)\s*\{[^{}]*\}\s*)(?=\{)"
)


def _definition_spans(text: str) -> list[tuple[int, int]]:
    """The bodies (start, end) of the definitions made in ``text`` whose bodies take parameters (``#1``, ``##1``)."""
    spans: list[tuple[int, int]] = []
    for m in _DEFINITION.finditer(text):
        end = group_end(text, m.end())
        if end is not None and "#" in text[m.end() : end]:
            spans.append((m.end(), end))
    return spans


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    return any(start < offset < end for start, end in spans)


_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def _cut(text: str, start: int) -> int:
    """Where to resume after an unterminated display: the next blank line, at most 2000 characters on."""
    para = _PARAGRAPH.search(text, start, min(len(text), start + 2000))
    return para.start() if para else min(len(text), start + 2000)


def _skip_inline(text: str, start: int, closer: str) -> tuple[int, int]:
    """Past the end of inline math, and where its body ends (-1 when unclosed: it ends at the paragraph)."""
    closing = r"\\end\s*\{math\}" if closer.startswith("\\end") else re.escape(closer)
    pattern = re.compile(r"(" + closing + r")|\\.|\n[ \t]*\n", re.DOTALL)
    pos = start
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return len(text), -1
        if m.group(1) is not None:
            return m.end(), m.start()
        if m.group(0).startswith("\n"):
            return m.start(), -1
        pos = m.end()


def _find_closer(text: str, start: int, closer: str) -> int:
    pattern = re.compile(r"\\[\\$\]]|" + re.escape(closer))
    pos = start
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return -1
        if m.group(0) == closer:
            return m.start()
        if closer == "\\]" and m.group(0) == "\\]":
            return m.start()
        pos = m.end()


def _find_end(text: str, start: int, name: str) -> tuple[int, int]:
    """Offsets of the ``\\end{name}`` matching a ``\\begin{name}`` (same-name nesting counted)."""
    pattern = re.compile(r"\\(begin|end)\s*\{" + re.escape(name) + r"\}")
    depth = 1
    pos = start
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return -1, -1
        depth += 1 if m.group(1) == "begin" else -1
        if depth == 0:
            return m.start(), m.end()
        pos = m.end()


_LABEL = re.compile(r"\\label\s*\{([^{}]*)\}")


def labels_in(body: str) -> list[str]:
    """The ``\\label`` keys in an equation body."""
    return [label.strip() for label in _LABEL.findall(body)]
