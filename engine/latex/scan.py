"""Reading LaTeX source without a TeX engine: comments and verbatim material, brace groups and arguments.

The project's one TeX scanner: ingest reads a document's text, macro definitions and headings with it, and the
KaTeX layer (`preprocess`, `macros`) the arguments of the commands it rewrites or expands. It works on plain
strings with regular expressions and index arithmetic (no catcode changes, no expansion) and follows what LaTeX
does for the cases arXiv papers use; where TeX would stop with an error, it recovers so that braces stay balanced.
"""

from __future__ import annotations

import functools
import re

__all__ = [
    "CONTROL_SEQUENCE",
    "MAX_OPTIONAL_LENGTH",
    "VERBATIM_ENVIRONMENTS",
    "document_body",
    "group_end",
    "read_argument",
    "read_arguments",
    "read_optional",
    "skip_space",
    "strip_comments",
    "strip_sweave",
    "verbatim_environments",
]

# Environments whose content TeX does not read as LaTeX: dropped before anything else looks at the text.
VERBATIM_ENVIRONMENTS = frozenset(
    {
        "verbatim",
        "verbatim*",
        "Verbatim",
        "Verbatim*",
        "BVerbatim",
        "LVerbatim",
        "SaveVerbatim",
        "VerbatimOut",
        "lstlisting",
        "minted",
        "comment",
        "filecontents",
        "filecontents*",
        "Sinput",
        "Soutput",
        "Scode",
        "Schunk",
        "tcblisting",
        "LTXexample",
    }
)

_VERBATIM_DEFINERS = re.compile(
    r"\\(?:DefineVerbatimEnvironment|lstnewenvironment|newtcblisting|NewTCBListing|RecustomVerbatimEnvironment|"
    r"CustomVerbatimEnvironment|excludecomment|specialcomment)\s*\*?\s*\{([A-Za-z*@]+)\}"
)
_IF_TOKEN = re.compile(r"\\(?:if[a-zA-Z@]*|fi)(?![a-zA-Z@])")
_SWEAVE_CHUNK = re.compile(r"^<<[^\n]*>>=[ \t]*\n.*?^@[ \t]*$", re.MULTILINE | re.DOTALL)
_SEXPR = re.compile(r"\\Sexpr\{[^{}]*\}")


def verbatim_environments(text: str) -> frozenset[str]:
    """The verbatim-like environments of a document: the standard ones plus those its preamble defines."""
    extra = {m.group(1) for m in _VERBATIM_DEFINERS.finditer(text)}
    return VERBATIM_ENVIRONMENTS | extra if extra else VERBATIM_ENVIRONMENTS


def strip_sweave(text: str) -> str:
    """Remove the R code chunks (``<<>>= ... @``) and ``\\Sexpr{}`` of a Sweave/knitr ``.Rnw`` file."""
    return _SEXPR.sub("", _SWEAVE_CHUNK.sub("\n", text))


def strip_comments(text: str, verbatim: frozenset[str] = VERBATIM_ENVIRONMENTS) -> str:
    """Remove comments, verbatim material and ``\\iffalse ... \\fi`` blocks the way TeX reads them.

    A ``%`` starts a comment unless escaped by an odd number of backslashes (``\\%`` is a percent sign, ``\\\\%``
    a line break then a comment); the comment eats the end of line and the next line's leading blanks. Verbatim
    environments and ``\\verb`` are removed entirely so that the math scanner never sees example code.

    Args:
        text: the LaTeX source of one file.
        verbatim: environment names whose content is skipped.

    Returns:
        The text TeX would read, minus verbatim material.
    """
    names = "|".join(re.escape(n) for n in sorted(verbatim, key=len, reverse=True))
    token = re.compile(
        r"\\[\\%]|\\verb\*?(?![a-zA-Z])|\\begin\s*\{(" + names + r")\}|\\iffalse(?![a-zA-Z@])|%",
    )
    out: list[str] = []
    pos = 0
    n = len(text)
    while True:
        m = token.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        s = m.group(0)
        if s in ("\\\\", "\\%"):
            out.append(text[pos : m.end()])
            pos = m.end()
            continue
        out.append(text[pos : m.start()])
        if s == "%":
            eol = text.find("\n", m.end())
            if eol < 0:
                pos = n
                break
            pos = eol + 1
            while pos < n and text[pos] in " \t":
                pos += 1
        elif s.startswith("\\verb"):
            end = m.end()
            if end >= n:
                pos = n
                break
            delim = text[end]
            close = text.find(delim, end + 1)
            eol = text.find("\n", end + 1)
            unterminated = close < 0 or 0 <= eol < close  # TeX errors; drop the rest of the line
            pos = (eol if eol >= 0 else n) if unterminated else close + 1
        elif s.startswith("\\begin"):
            end_pattern = re.compile(r"\\end\s*\{" + re.escape(m.group(1)) + r"\}")
            close = end_pattern.search(text, m.end())
            pos = n if close is None else close.end()
            out.append("\n")
        else:  # \iffalse: skip to the matching \fi, counting nested conditionals
            depth = 1
            p = m.end()
            while depth:
                t = _IF_TOKEN.search(text, p)
                if t is None:
                    p = n
                    break
                depth += -1 if t.group(0) == "\\fi" else 1
                p = t.end()
            pos = p
    return "".join(out)


# --------------------------------------------------------------------------------------------------------------
# Arguments: the one reader of brace groups, mandatory and optional arguments, for ingest and the KaTeX layer alike.
# The text must be free of comments (`strip_comments`, `preprocess.clean_latex`): a ``%`` is an ordinary character.

#: A control sequence: a backslash and a word of letters (``@`` counts as one, as in a package), or one character.
CONTROL_SEQUENCE = re.compile(r"\\(?:[A-Za-z@]+|.)", re.DOTALL)
#: Brackets ending further than this from their ``[`` are not an optional argument. LaTeX has no such limit, but
#: real optional arguments are short, and the bound keeps a stray ``[`` from costing a scan to the end of the text.
MAX_OPTIONAL_LENGTH = 500

_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)
_BRACKET_TOKEN = re.compile(r"\\.|[{}\]]", re.DOTALL)


def skip_space(text: str, pos: int) -> int:
    """Index of the first character at or after ``pos`` that is not a space, tab or line end."""
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


@functools.lru_cache(maxsize=4)
def _known_groups(text: str) -> dict[int, int]:
    """The group ends `group_end` has found in ``text``: ``{`` offset -> offset past its ``}``, or -1 (unbalanced)."""
    return {}


def group_end(text: str, start: int) -> int | None:
    """Index just past the ``}`` that closes the ``{`` at ``start``.

    An escaped brace (``\\{``, ``\\}``) is not a brace, and ``\\\\`` is a line break, so the brace after it is one.
    Groups are remembered per text (the last few texts), so asking again, or about a group inside one already
    read, costs nothing, and reading every group of a text costs one pass over it even when braces are unbalanced.

    Args:
        text: comment-free LaTeX.
        start: offset of a ``{``.

    Returns:
        The end offset (exclusive), or None when the group is never closed or ``text[start]`` is not ``{``.
    """
    if not 0 <= start < len(text) or text[start] != "{":
        return None
    known = _known_groups(text)
    end = known.get(start)
    if end is None:
        end = _read_group(text, start, known)
    return end if end >= 0 else None


def _read_group(text: str, start: int, known: dict[int, int]) -> int:
    opened = [start]
    search = _BRACE_TOKEN.search
    pos = start + 1
    while (m := search(text, pos)) is not None:
        pos = m.end()
        token = m.group()
        if token == "{":
            end = known.get(m.start())
            if end is None:
                opened.append(m.start())
            elif end < 0:
                break  # a group inside never closes, so neither does any group around it
            else:
                pos = end
        elif token == "}":
            known[opened.pop()] = pos
            if not opened:
                return pos
    for offset in opened:
        known[offset] = -1
    return -1


def read_argument(text: str, pos: int) -> tuple[str, int] | None:
    """Read one mandatory argument at ``pos`` (spaces and line ends before it skipped), as TeX reads it.

    The argument is a brace group, returned without its braces, or else one token: a control sequence
    (``\\alpha``, ``\\,``) or one character.

    Returns:
        ``(content, end)``, or None when there is no argument: the end of the text, a ``}`` (it closes an outer
        group; TeX stops with an error there), a group that is never closed, or a lone ``\\`` at the very end.
    """
    pos = skip_space(text, pos)
    if pos >= len(text):
        return None
    c = text[pos]
    if c == "{":
        end = group_end(text, pos)
        return None if end is None else (text[pos + 1 : end - 1], end)
    if c == "}":
        return None
    if c == "\\":
        m = CONTROL_SEQUENCE.match(text, pos)
        return None if m is None else (m.group(), m.end())
    return c, pos + 1


def read_arguments(text: str, pos: int, count: int) -> tuple[list[str], int]:
    """Read up to ``count`` mandatory arguments from ``pos`` (`read_argument` each), stopping at the first missing one.

    Returns:
        ``(arguments, end)``: the arguments read (fewer than ``count`` when one is missing) and the offset just past
        the last of them (``pos`` when none was read).
    """
    args: list[str] = []
    for _ in range(count):
        arg = read_argument(text, pos)
        if arg is None:
            break
        args.append(arg[0])
        pos = arg[1]
    return args, pos


def read_optional(text: str, pos: int) -> tuple[str | None, int]:
    """Read an optional ``[...]`` argument at ``pos`` (spaces and line ends before it skipped), as LaTeX reads it.

    The first ``]`` outside brace groups ends it (``[a{]}]`` holds ``a{]}``; ``[a[b]c]`` holds ``a[b``), and an
    escaped ``\\]`` does not. Brackets are not an optional argument when they do not close within
    `MAX_OPTIONAL_LENGTH` characters, when a group inside them never closes, or when a ``}`` closes an outer group
    before the ``]`` (the brackets are then ordinary characters, and the braces stay balanced).

    Returns:
        ``(content, end)``; ``(None, pos)`` when there is no optional argument.
    """
    start = skip_space(text, pos)
    if start >= len(text) or text[start] != "[":
        return None, pos
    stop = min(len(text), start + MAX_OPTIONAL_LENGTH)
    search = _BRACKET_TOKEN.search
    i = start + 1
    while (m := search(text, i, stop)) is not None:
        token = m.group()
        if token == "]":
            return text[start + 1 : m.start()], m.end()
        if token == "}":
            break
        if token == "{":
            end = group_end(text, m.start())
            if end is None:
                break
            i = end
        else:
            i = m.end()
    return None, pos


def document_body(text: str) -> tuple[str, str, int]:
    """Split a document into preamble and body at ``\\begin{document}`` / ``\\end{document}``.

    Only delimiters outside brace groups count: a ``\\begin{document}`` inside a macro definition
    (``\\newcommand{\\filestart}{\\ifsubfiles\\begin{document}\\fi}``) does not start the body.

    Returns:
        ``(preamble, body, body_offset)``; a fragment without ``\\begin{document}`` is all body.
    """
    begin = _top_level(_BEGIN_DOCUMENT, text, 0)
    if begin is None:
        return "", text, 0
    end = _top_level(_END_DOCUMENT, text, begin.end())
    stop = len(text) if end is None else end.start()
    return text[: begin.start()], text[begin.end() : stop], begin.end()


_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_END_DOCUMENT = re.compile(r"\\end\s*\{document\}")


def _top_level(pattern: re.Pattern[str], text: str, start: int) -> re.Match[str] | None:
    """The first match of ``pattern`` at or after ``start`` that is outside brace groups (counted from ``start``)."""
    depth = 0
    pos = start
    for m in pattern.finditer(text, start):
        for brace in _BRACE_TOKEN.finditer(text, pos, m.start()):
            token = brace.group()
            depth += 1 if token == "{" else -1 if token == "}" else 0
        pos = m.start()
        if depth <= 0:
            return m
    return None
