"""What of a hit's formula matched, on a real node: the largest sub-expression shared with a query without
variables."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.query import HybridQuery

pytestmark = pytest.mark.es


def ids(results) -> list[str]:
    return [hit.eq_id for hit in results.hits]


def test_hits_of_a_formula_without_variables_show_the_largest_shared_sub_expression(service):
    results = service.search(HybridQuery(latex="E = mc^2", keywords="relativity", size=4))
    first = results.hits[0]
    assert first.eq_id == "2101.00001:0" and first.formula_highlight.kind == "shared"
    assert len(first.formula_highlight.nodes) == 5  # E, =, m, c, 2: all of it
    assert not first.formula_highlight.bindings
