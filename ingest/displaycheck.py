"""Nothing lost in silence: how many displays a source holds, counted apart from extraction, for a paper that came
out with none.

A paper whose extraction found no display while its files hold display environments, ``\\[``, ``$$`` or display
shortcuts (``\\def\\bea{\\begin{eqnarray}}`` then ``\\bea ... \\eea``) has lost them somewhere (the wrong file taken
for the document, an input not followed); it gets a warning ``no_displays_found`` with the count, which the
extraction statistics, the ingest job's record and its summary show. The count reads every LaTeX file of the
source at once, so that a shortcut defined in one file and used in another is counted.
"""

from __future__ import annotations

import contextlib
import re

from eqsearch.ingest.displaymacros import expand_display_macros
from eqsearch.ingest.errors import IngestError
from eqsearch.ingest.macros import extract_macros
from eqsearch.ingest.mathenv import DISPLAY_ENVIRONMENTS

__all__ = ["NO_DISPLAYS_FOUND", "count_display_openers"]

#: The warning's reason code.
NO_DISPLAYS_FOUND = "no_displays_found"

_NAMES = "|".join(sorted(DISPLAY_ENVIRONMENTS, key=len, reverse=True))
_BEGIN = re.compile(r"\\begin\s*\{(?:" + _NAMES + r")\*?\}")
_OPEN_BRACKET = re.compile(r"(?<!\\)(?:\\\\)*\\\[")
_DOUBLE_DOLLAR = re.compile(r"(?<!\\)\$\$")
_MAX_CHARS = 20_000_000


def count_display_openers(text: str) -> int:
    """The displays ``text`` opens (comments already removed): ``\\begin`` of a display environment or of an
    environment defined as one, ``\\[``, pairs of ``$$``, with display shortcuts expanded first; what sits inside a
    macro definition is not counted."""
    macros = extract_macros(text)
    inside = sorted(macros.spans)
    parts: list[str] = []
    pos = 0
    for start, end in inside:
        if start >= pos:
            parts.append(text[pos:start])
            pos = end
    parts.append(text[pos:])
    body = " ".join(parts)
    with contextlib.suppress(IngestError):  # shortcuts nesting past the limit: count what is spelled out
        body = expand_display_macros(body, macros.display, max_chars=_MAX_CHARS)
    count = len(_BEGIN.findall(body)) + len(_OPEN_BRACKET.findall(body)) + len(_DOUBLE_DOLLAR.findall(body)) // 2
    for alias in macros.environment_aliases:
        count += len(re.findall(r"\\begin\s*\{" + re.escape(alias) + r"\}", body))
    return count
