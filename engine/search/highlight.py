"""Which elements of a hit's formula matched the query formula, for the page to mark.

With variables, the pattern's match and each variable's binding; without, the largest sub-expression the hit
shares with the query (`engine.model.highlights.SharedSubexpressions`). Indices point into the hit's MathML, so a
hit without MathML (its LaTeX did not convert) gets none.
"""

from __future__ import annotations

from eqsearch.engine.model.highlights import FormulaHighlight, pattern_highlight
from eqsearch.engine.model.layout import parse_layout
from eqsearch.engine.model.patterns import match_pattern
from eqsearch.engine.search.query_formula import QueryFormula

__all__ = ["formula_highlight"]


def formula_highlight(formula: QueryFormula, mathml: str | None) -> FormulaHighlight | None:
    """What of ``mathml`` matches the query formula; None without MathML or a match."""
    if not mathml or not formula.layout:
        return None
    try:
        layout = parse_layout(mathml, positions=True)
    except ValueError:
        return None
    if formula.pattern.has_variables:
        match = match_pattern(formula.layout, layout)
        return pattern_highlight(match) if match is not None else None
    return formula.shared.highlight(layout) if formula.shared is not None else None
