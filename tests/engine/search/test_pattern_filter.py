"""The pattern filter on a real node: a query with variables keeps only the formulas its pattern matches, with the
variables' bindings; a pattern that matches nothing says so while keywords still answer; a malformed variable is an
error that says where."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.query import HybridQuery

pytestmark = pytest.mark.es


def ids(results) -> list[str]:
    return [hit.eq_id for hit in results.hits]


def test_a_query_with_variables_returns_only_the_formulas_its_pattern_matches(service):
    results = service.search(HybridQuery(latex="?a^2 + ?b^2 = ?c^2", size=10))
    assert ids(results) == ["2203.00004:0", "2203.00004:1"]  # E^2 = (pc)^2 + (mc^2)^2 has another shape
    bound = [{name: b.text for name, b in hit.formula_highlight.bindings.items()} for hit in results.hits]
    assert bound == [{"?a": "a", "?b": "b", "?c": "c"}, {"?a": "x", "?b": "y", "?c": "z"}]
    assert all(hit.formula_highlight.kind == "pattern" and hit.formula_highlight.nodes for hit in results.hits)
    assert results.total == 2 and not results.warnings
    inside = service.search(HybridQuery(latex="(?x)^2 + (?y ?z^2)^2", size=10))
    assert ids(inside) == ["2101.00001:1"]  # a sub-expression of E^2 = (pc)^2 + (mc^2)^2
    bound = {name: b.text for name, b in inside.hits[0].formula_highlight.bindings.items()}
    assert bound == {"?x": "pc", "?y": "m", "?z": "c"}
    # a repeated variable binds the same thing each time: E outside, c inside, so no match
    assert ids(service.search(HybridQuery(latex="?a^2 = (?x)^2 + (?y ?a^2)^2", size=10))) == []


def test_a_pattern_that_matches_nothing_says_so_and_keywords_still_answer(service):
    results = service.search(HybridQuery(latex=r"\frac{?a}{?a}", keywords="oscillator", size=10))
    assert {hit.matched for hit in results.hits} == {"text"}
    assert any("matches the pattern" in warning for warning in results.warnings)


def test_a_malformed_variable_is_an_error_that_says_where(service):
    from eqsearch.engine.model.patterns import QueryVariableError

    with pytest.raises(QueryVariableError, match="character 5"):
        service.search(HybridQuery(latex="x + ?1x"))
