"""Low-level LaTeX scanning: comments, verbatim, brace groups and arguments.

Everything here works on plain strings with regular expressions and index arithmetic: no TeX engine, no
catcode changes. It follows what LaTeX does for the common cases arXiv papers use.
"""

from __future__ import annotations

import re

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


def skip_space(text: str, pos: int) -> int:
    """Index of the first non-blank character at or after ``pos``."""
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def find_group_end(text: str, open_pos: int) -> int:
    """Index just past the ``}`` matching the ``{`` at ``open_pos``, or -1 when unbalanced."""
    depth = 0
    i = open_pos
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


_CONTROL_WORD = re.compile(r"\\(?:[A-Za-z@]+|.)", re.DOTALL)


def read_argument(text: str, pos: int) -> tuple[str, int] | None:
    """Read one mandatory TeX argument at ``pos``: a brace group (without its braces) or a single token.

    Returns:
        ``(content, end)`` or None at the end of the text or on an unbalanced group.
    """
    pos = skip_space(text, pos)
    if pos >= len(text):
        return None
    c = text[pos]
    if c == "{":
        end = find_group_end(text, pos)
        return None if end < 0 else (text[pos + 1 : end - 1], end)
    if c == "\\":
        m = _CONTROL_WORD.match(text, pos)
        assert m is not None
        return m.group(0), m.end()
    if c == "}":
        return None
    return c, pos + 1


def read_optional(text: str, pos: int) -> tuple[str | None, int]:
    """Read an optional ``[...]`` argument at ``pos`` (braces inside are respected).

    Returns:
        ``(content, end)``; content is None (and end == pos) when there is none.
    """
    p = skip_space(text, pos)
    if p >= len(text) or text[p] != "[":
        return None, pos
    depth = 0
    i = p + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "]" and depth <= 0:
            return text[p + 1 : i], i + 1
        i += 1
    return None, pos


def document_body(text: str) -> tuple[str, str, int]:
    """Split a document into preamble and body at ``\\begin{document}`` / ``\\end{document}``.

    Returns:
        ``(preamble, body, body_offset)``; a fragment without ``\\begin{document}`` is all body.
    """
    begin = re.search(r"\\begin\s*\{document\}", text)
    if begin is None:
        return "", text, 0
    end = re.search(r"\\end\s*\{document\}", text[begin.end() :])
    stop = len(text) if end is None else begin.end() + end.start()
    return text[: begin.start()], text[begin.end() : stop], begin.end()
