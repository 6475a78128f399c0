"""Plans and request bodies for tests: what a search would send for a query, made without a node or a converter.

`planned` makes the plan `SearchService` would (`make_plan`) for a formula given as its parts (structure, vector,
node vectors), and `requests_for` the ranked lists' bodies of that plan (`list_requests`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from eqsearch.engine.model.structure import FormulaStructure
from eqsearch.engine.search.plan import Offer, PlanSettings, QueryPlan, make_plan
from eqsearch.engine.search.query import HybridQuery, ListInputs, list_requests
from eqsearch.engine.search.rankers import FormulaRanking, get_ranker


@dataclass(frozen=True)
class FormulaParts:
    """The parts of a prepared query formula a plan reads (`engine.search.query_formula.QueryFormula`)."""

    structure: FormulaStructure | None = None
    vector: np.ndarray | None = None
    nodes: np.ndarray | None = None
    pattern: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(has_variables=False))
    approximation: str | None = None


def planned(
    query: HybridQuery,
    ranking: FormulaRanking | str = "embedding",
    *,
    structure: FormulaStructure | None = None,
    vector: np.ndarray | None = None,
    offer: Offer | None = None,
    depth: int = 100,
    context: bool = False,
) -> QueryPlan:
    """The plan of ``query`` with a formula of these parts (None of both: no formula)."""
    ranking = get_ranker(ranking) if isinstance(ranking, str) else ranking
    formula = None if structure is None and vector is None else FormulaParts(structure, vector)
    settings = PlanSettings(candidate_depth=depth, context_encoder=context)
    return make_plan(query, formula, ranking, offer or Offer(), settings)  # type: ignore[arg-type]


def requests_for(
    query: HybridQuery,
    ranking: FormulaRanking | str = "embedding",
    *,
    structure: FormulaStructure | None = None,
    vector: np.ndarray | None = None,
    context_vector: np.ndarray | None = None,
    rare_terms: list[str] | None = None,
    offer: Offer | None = None,
    depth: int = 100,
) -> dict[str, dict]:
    """The ranked lists' bodies of that plan, by list name."""
    plan = planned(
        query, ranking, structure=structure, vector=vector, offer=offer, depth=depth, context=context_vector is not None
    )
    inputs = ListInputs(structure=structure, vector=vector, context_vector=context_vector, rare_terms=rare_terms)
    return dict(list_requests(query, plan, inputs))
