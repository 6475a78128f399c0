"""The prepared query formulas on a real node: converted and encoded once per cache entry."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService
from hashing_encoder import HashingEncoder

pytestmark = pytest.mark.es


def ids(results) -> list[str]:
    return [hit.eq_id for hit in results.hits]


class CountingConverter:
    """The real KaTeX converter, recording what it is asked to convert."""

    def __init__(self, converter) -> None:
        self.converter = converter
        self.calls: list[str] = []

    def convert(self, latex, environment="equation", macros=()):
        self.calls.append(latex)
        return self.converter.convert(latex, environment, macros)


def test_query_formulas_are_converted_and_encoded_once_per_cache_entry(es_client, corpus, converter):
    counting = CountingConverter(converter)
    service = SearchService(es_client, HashingEncoder(), counting, index_prefix=corpus, formula_cache_size=1)
    uncached = SearchService(es_client, HashingEncoder(), converter, index_prefix=corpus, formula_cache_size=0)
    query = HybridQuery(latex="E = mc^2", keywords="relativity energy", size=2)
    first, second = service.search(query), service.search(HybridQuery(**{**query.__dict__, "page": 2}))
    assert counting.calls == ["E = mc^2"]  # the next page reuses the conversion and the vector
    assert ids(first) + ids(second) == ids(uncached.search(HybridQuery(**{**query.__dict__, "size": 4})))
    service.search(HybridQuery(latex="x^2"))  # the cache holds one formula: E = mc^2 goes
    service.search(HybridQuery(latex="E = mc^2"))
    assert counting.calls == ["E = mc^2", "x^2", "E = mc^2"]
    for _ in range(2):
        assert service.search(HybridQuery(latex=r"\frac{a}{")).latex_error
    assert counting.calls.count(r"\frac{a}{") == 2  # failures are not kept
