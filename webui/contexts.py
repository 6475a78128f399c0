"""A hit's context with its math drawn: ``$b_j$`` in the stored words becomes a formula, sanitised as formulas are.

Contexts are stored as plain text in which inline math stays LaTeX between dollars and other display equations
read ``[math]`` (ingest keeps only the words around each formula). On the page each ``$...$`` is converted by
KaTeX (`ContextMath`, one batch per page, cached) and sanitised like any formula; a formula KaTeX refuses stays
its LaTeX, as code; ``[math]`` becomes a small marker that says "a display equation stood here"; the words are
escaped with the highlighter's marks kept (`sanitize_highlight`).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from eqsearch.webui.sanitize import sanitize_highlight, sanitize_mathml
from markupsafe import Markup, escape

if TYPE_CHECKING:
    from eqsearch.engine.latex.converter import KatexConverter

#: Inline math (``$...$``, at most 300 characters: longer is a stray dollar) or a display's placeholder.
_PIECE = re.compile(r"\$([^$]{1,300})\$|\[math\]")
_HIGHLIGHT_TAG = re.compile(r"</?em>")
#: Characters of a stored context shown when the search returned no highlight of it.
CONTEXT_CHARS = 240
#: Converted formulas kept per process.
CACHE_SIZE = 4096
DISPLAY_MARKER = Markup('<span class="display-marker" title="a display equation stood here">[display]</span>')


def inline_formulas(fragments: Iterable[str]) -> list[str]:
    """The LaTeX of each ``$...$`` in the fragments (highlight marks removed), once each, in order."""
    found: dict[str, None] = {}
    for fragment in fragments:
        for piece in _PIECE.finditer(fragment or ""):
            if piece.group(1) is not None:
                found.setdefault(_HIGHLIGHT_TAG.sub("", piece.group(1)).strip(), None)
    return [latex for latex in found if latex]


def render_context(fragment: str | None, mathml_of: Mapping[str, str | None]) -> Markup:
    """One context fragment as markup: words escaped (highlight marks as ``<mark>``), math drawn.

    Args:
        fragment: a highlight fragment or a stored context.
        mathml_of: LaTeX -> its MathML, or None where KaTeX refused it (missing: shown as LaTeX).
    """
    if not fragment:
        return Markup("")
    parts: list[str] = []
    position = 0
    for piece in _PIECE.finditer(fragment):
        parts.append(str(sanitize_highlight(fragment[position : piece.start()])))
        position = piece.end()
        if piece.group(1) is None:
            parts.append(str(DISPLAY_MARKER))
            continue
        latex = _HIGHLIGHT_TAG.sub("", piece.group(1)).strip()
        clean = sanitize_mathml(mathml_of.get(latex), inline=True)
        if clean:
            parts.append(f'<span class="formula inline-formula">{clean}</span>')
        else:
            parts.append(f'<code class="formula-source">{escape(latex)}</code>')
    parts.append(str(sanitize_highlight(fragment[position:])))
    return Markup("".join(parts))


#: LaTeX that only appears inside math: a command (``\\left``) or a braced script (``_{``).
_LATEX_ONLY = re.compile(r"\\[A-Za-z]{2,}|[_^]\{")


def trim_cut_formulas(text: str) -> str:
    """`text` without a formula cut by its start or its end.

    Ingest keeps a window of words around each formula, which may begin or end inside an inline formula
    (``\\left\\{(s', l) \\in y\\}$ the subset of $y$``): its dollars then pair the wrong way round. An end that holds
    LaTeX found only in math (`_LATEX_ONLY`) is taken as cut; with an odd number of dollars exactly one end is, the
    end unless only the start looks cut.
    """
    first, last = text.find("$"), text.rfind("$")
    if first < 0:
        return text
    head_cut = bool(_LATEX_ONLY.search(text[:first]))
    tail_cut = bool(_LATEX_ONLY.search(text[last + 1 :]))
    if text.count("$") % 2:
        head_cut, tail_cut = (True, False) if head_cut and not tail_cut else (False, True)
    elif not (head_cut and tail_cut):
        return text
    if tail_cut:
        text = text[:last]
    if head_cut:
        text = text[first + 1 :]
    return text


def aligned_fragment(fragment: str, context: str) -> str:
    """A highlight fragment cut so that it neither starts nor ends inside a ``$...$`` of its context.

    The highlighter cuts fragments anywhere: one that starts inside a formula would pair its dollars the wrong way
    round and set the words between two formulas as math. Where the fragment starts in the stored context says
    whether its first dollar opens or closes a formula; a formula cut by either end is left out.
    """
    context = trim_cut_formulas(context)
    plain = _HIGHLIGHT_TAG.sub("", fragment)
    start = context.find(plain)
    if start < 0:  # it begins in a part of the context that was cut away, or the stored text differs
        return trim_cut_formulas(fragment)
    opened = context[:start].count("$") % 2 == 1
    if opened:  # the first dollar closes a formula the fragment starts inside
        cut = fragment.find("$")
        fragment = fragment[cut + 1 :] if cut >= 0 else ""
    if fragment.count("$") % 2:  # the last dollar opens a formula the fragment ends inside
        fragment = fragment[: fragment.rfind("$")]
    return fragment


def context_snippet(context: str, chars: int = CONTEXT_CHARS) -> str:
    """The start of a stored context, cut at a word boundary outside any ``$...$`` (the page adds the ellipses)."""
    context = trim_cut_formulas(context)
    if len(context) <= chars:
        return context
    cut = context[:chars]
    if cut.count("$") % 2:  # inside a formula: cut before it
        cut = cut[: cut.rfind("$")]
    return cut.rsplit(" ", 1)[0]


class ContextMath:
    """Inline formulas of contexts -> MathML through KaTeX, in one batch per page, remembered per process.

    Args:
        converter: the app's KaTeX converter.
        size: formulas remembered.
    """

    def __init__(self, converter: KatexConverter, size: int = CACHE_SIZE) -> None:
        self.converter = converter
        self.size = size
        self._known: OrderedDict[str, str | None] = OrderedDict()
        self._lock = threading.Lock()

    def mathml_of(self, formulas: Iterable[str]) -> dict[str, str | None]:
        """LaTeX -> MathML (None where KaTeX refused it) for each of `formulas`."""
        wanted = list(dict.fromkeys(formulas))
        with self._lock:
            missing = [latex for latex in wanted if latex not in self._known]
        if missing:
            results = self.converter.convert_many([(latex, "equation") for latex in missing])
            with self._lock:
                for latex, result in zip(missing, results, strict=True):
                    self._known[latex] = result.mathml
                while len(self._known) > self.size:
                    self._known.popitem(last=False)
        with self._lock:
            return {latex: self._known.get(latex) for latex in wanted}
