"""xcolor colours in formulas, made into colours KaTeX takes.

KaTeX accepts a colour name of letters or a ``#`` hex code; xcolor's models (``\\textcolor[rgb]{0.1,0.5,0}{x}``,
``[HTML]{FF0000}``, ``[gray]{0.5}``), mixes (``red!50!black``) and names a document defines with other characters
(``\\definecolor{color2}{..}``) are a parse error there, which loses the whole formula. Models become the hex code,
a mix its first colour, other names their letters: the colour may differ, the formula is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eqsearch.engine.latex.scan import read_argument, read_optional

__all__ = ["color_rule"]


def color_rule(count: int) -> Callable[[str, int], tuple[str, int]]:
    """`engine.latex.preprocess.clean_latex`'s rule for a colour command taking ``count`` colours (module docstring):
    given the text and the offset past the command, the rewritten command and its colours, and where to resume."""

    def rule(text: str, end: int) -> tuple[str, int]:
        command = text[text.rfind("\\", 0, end) : end]
        model, pos = read_optional(text, end)
        names: list[str] = []
        for _ in range(count):
            arg = read_argument(text, pos)
            if arg is None:
                return command, end
            names.append(_katex_color(model, arg[0].strip()))
            pos = arg[1]
        return command + "".join(f"{{{name}}}" for name in names), pos

    return rule


_KATEX_COLOR = re.compile(r"[A-Za-z]+|#[0-9A-Fa-f]{3,8}|#\d")


def _katex_color(model: str | None, spec: str) -> str:
    """A colour KaTeX accepts for xcolor's ``[model]{spec}`` (``#1`` in a macro body is left as it is)."""
    if _KATEX_COLOR.fullmatch(spec):
        return spec
    try:
        values = [float(v) for v in spec.split(",")] if model else []
    except ValueError:
        values = []
    if model == "HTML" and re.fullmatch(r"[0-9A-Fa-f]{6}", spec):
        return f"#{spec}"
    if model in ("rgb", "RGB") and len(values) == 3:
        scale = 1.0 if model == "RGB" else 255.0
        return "#" + "".join(f"{max(0, min(255, round(v * scale))):02x}" for v in values)
    if model == "gray" and len(values) == 1:
        return "#" + f"{max(0, min(255, round(values[0] * 255))):02x}" * 3
    base = re.sub(r"[^A-Za-z]", "", spec.split("!")[0])  # red!50!black -> red; color2 -> color
    return base or "black"
