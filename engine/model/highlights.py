"""Which parts of a hit's formula matched the query, as pre-order indices of its MathML elements.

For a query with variables, `pattern_highlight` turns a `engine.model.patterns.PatternMatch` into the matched run and
each variable's binding (written back as LaTeX-like text by `layout_text`). For a query without variables,
`shared_subexpression` (or one `SharedSubexpressions` per query, for many hits) finds the largest sub-expression a hit
shares with the query: exact, else with letters and numbers generalised, the rerank's notion of span. Both come back
as `FormulaHighlight`, whose element indices (`LayoutNode.elements`) the web UI marks when it renders the formula.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from eqsearch.engine.model.layout import (
    CanonicalText,
    LayoutNode,
    generalised_label,
    layout_baselines,
    layout_nodes,
    layout_size,
)

if TYPE_CHECKING:
    from eqsearch.engine.model.patterns import PatternMatch

__all__ = [
    "MAX_SHARED_RUN",
    "FormulaHighlight",
    "SharedSubexpressions",
    "VariableBinding",
    "layout_text",
    "pattern_highlight",
    "shared_subexpression",
]

#: Longest run of baseline symbols `shared_subexpression` compares.
MAX_SHARED_RUN = 12


@dataclass(frozen=True)
class VariableBinding:
    """What one variable matched in a hit.

    Attributes:
        text: the sub-expression, written back as LaTeX-like text (``x^{2}``, ``\\frac{a}{b}``).
        nodes: pre-order indices of the MathML elements it covers.
    """

    text: str
    nodes: tuple[int, ...]


@dataclass(frozen=True)
class FormulaHighlight:
    """Which elements of a hit's MathML matched the query formula.

    Attributes:
        kind: ``pattern`` (the sub-expression a query with variables matched) or ``shared`` (the largest
            sub-expression the hit shares with a query without variables).
        nodes: pre-order indices of the matched elements of the hit's MathML (``<math>`` = 0, elements only).
        bindings: ``?name`` -> what the variable bound (``pattern`` only).
    """

    kind: Literal["pattern", "shared"]
    nodes: tuple[int, ...]
    bindings: dict[str, VariableBinding] = field(default_factory=dict)


def _elements(nodes: tuple[LayoutNode, ...] | list[LayoutNode], consumed: frozenset[str] = frozenset()) -> list[int]:
    """The MathML elements of some symbols and all that hangs on them (less the last one's ``consumed``)."""
    out: list[int] = []
    for index, node in enumerate(nodes):
        out.extend(node.elements)
        skipped = consumed if index == len(nodes) - 1 else frozenset()
        for relation, attached in node.children.items():
            if relation not in skipped:
                out.extend(e for n in layout_nodes(attached) for e in n.elements)
    return out


def pattern_highlight(match: PatternMatch) -> FormulaHighlight:
    """A pattern match as a highlight: the matched run's elements, and each variable's binding."""
    bindings = {
        f"?{name}": VariableBinding(layout_text(list(nodes), consumed), tuple(sorted(set(_elements(nodes, consumed)))))
        for name, (nodes, consumed) in match.bindings.items()
    }
    return FormulaHighlight("pattern", tuple(sorted(set(_elements(match.run)))), bindings)


class SharedSubexpressions:
    """A query's sub-expressions (runs of at most ``max_run`` baseline symbols, with all that hangs on them, exact
    and generalised to ``V:*``/``N:*``), made once, to find the largest one each hit shares (`highlight`).

    Args:
        query: the query's layout tree.
        max_run: the longest run compared (no longer than the query's longest baseline).
    """

    def __init__(self, query: list[LayoutNode], max_run: int = MAX_SHARED_RUN) -> None:
        self.least = min(2, sum(1 for _ in layout_nodes(query)))
        lines = list(layout_baselines(query))
        self.max_run = min(max_run, max((len(line) for line in lines), default=0))
        self.runs: list[dict[str, int]] = []
        for general in (False, True):
            runs: dict[str, int] = {}
            text = CanonicalText(general)
            for line in lines:
                sizes = [layout_size([n]) for n in line]
                for start in range(len(line)):
                    for end in range(start, min(len(line), start + self.max_run)):
                        key = " ".join(text(n) for n in line[start : end + 1])
                        runs[key] = max(runs.get(key, 0), sum(sizes[start : end + 1]))
            self.runs.append(runs)
        # the labels a run's symbols carry: a candidate's symbol with another label starts or continues no run, and
        # its canonical string (which holds all that hangs on it) need not be made
        nodes = list(layout_nodes(query))
        self.labels = ({n.label for n in nodes}, {generalised_label(n.label) for n in nodes})

    def highlight(self, candidate: list[LayoutNode]) -> FormulaHighlight | None:
        """The largest sub-expression the candidate (read with element positions) shares with the query: exact if
        one is as large as any generalised one; None when they share nothing of two symbols or more (of the query's
        size, when smaller)."""
        if self.least == 0:
            return None
        best: tuple[int, int, tuple[LayoutNode, ...]] | None = None
        for exactness, runs in ((1, self.runs[0]), (0, self.runs[1])):
            text = CanonicalText(general=exactness == 0)
            labels = self.labels[1 - exactness]
            label_of = generalised_label if exactness == 0 else str
            for line in layout_baselines(candidate):
                texts = [text(n) if label_of(n.label) in labels else None for n in line]
                for start in range(len(line)):
                    key = ""
                    for end in range(start, min(len(line), start + self.max_run)):
                        if texts[end] is None:
                            break
                        key = f"{key} {texts[end]}" if key else texts[end]
                        size = runs.get(key)
                        if size is None:
                            break  # every prefix of a query run is one: no longer run from here can match
                        if size >= self.least and (best is None or (size, exactness) > best[:2]):
                            best = (size, exactness, tuple(line[start : end + 1]))
        if best is None:
            return None
        nodes = tuple(sorted(set(_elements(best[2]))))
        return FormulaHighlight("shared", nodes) if nodes else None


def shared_subexpression(
    query: list[LayoutNode], candidate: list[LayoutNode], *, max_run: int = MAX_SHARED_RUN
) -> FormulaHighlight | None:
    """The largest sub-expression a candidate shares with a query (`SharedSubexpressions.highlight`; make one
    `SharedSubexpressions` per query to highlight many hits)."""
    return SharedSubexpressions(query, max_run).highlight(candidate)


def layout_text(nodes: list[LayoutNode], consumed: frozenset[str] = frozenset()) -> str:
    """Symbols written back as LaTeX-like text (``x^{2}``, ``\\frac{a}{b}``, ``\\sqrt{x}``), for showing a
    variable's binding; the last symbol's ``consumed`` relations are left out."""
    parts: list[str] = []
    for index, node in enumerate(nodes):
        skipped = consumed if index == len(nodes) - 1 else frozenset()
        children = {r: b for r, b in node.children.items() if r not in skipped}
        kind, text = node.label[:2], node.label[2:]
        if node.label == "S:frac":
            piece = f"\\frac{{{layout_text(children.get('num', []))}}}{{{layout_text(children.get('den', []))}}}"
        elif node.label in ("S:sqrt", "S:root"):
            index_text = layout_text(children.get("idx", []))
            piece = f"\\sqrt{'[' + index_text + ']' if index_text else ''}{{{layout_text(children.get('in', []))}}}"
        elif node.label == "S:table":
            piece = "\\begin{matrix}" + layout_text(children.get("in", [])) + "\\end{matrix}"
        else:
            piece = ("\\" + text if kind == "F:" else text) or "{}"
        if node.label not in ("S:frac", "S:sqrt", "S:root", "S:table"):
            for relation, mark in (("sub", "_"), ("sup", "^")):
                if children.get(relation):
                    piece += f"{mark}{{{layout_text(children[relation])}}}"
        if parts and parts[-1].startswith("\\") and parts[-1][-1:].isalpha() and piece[:1].isalpha():
            parts.append(" ")  # \sin x, not \sinx
        parts.append(piece)
    return "".join(parts)
