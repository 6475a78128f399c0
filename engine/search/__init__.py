"""Hybrid search: a formula (kNN) and keywords (BM25), filtered alike, fused client-side into pages of hits.

`query` holds `HybridQuery` and the request bodies it becomes, `fusion` the rank fusion, `results` the hits and
pages, and `service` the `SearchService` that sends the requests and puts the rest together.
"""

from eqsearch.engine.search.fusion import Fused, linear_fusion, reciprocal_rank_fusion
from eqsearch.engine.search.query import MAX_PAGE_SIZE, MAX_RESULT_WINDOW, Fusion, HybridQuery
from eqsearch.engine.search.results import EquationHit, Matched, PaperGroup, SearchResults, group_hits
from eqsearch.engine.search.service import EquationNotFoundError, SearchError, SearchService

__all__ = [
    "MAX_PAGE_SIZE",
    "MAX_RESULT_WINDOW",
    "EquationHit",
    "EquationNotFoundError",
    "Fused",
    "Fusion",
    "HybridQuery",
    "Matched",
    "PaperGroup",
    "SearchError",
    "SearchResults",
    "SearchService",
    "group_hits",
    "linear_fusion",
    "reciprocal_rank_fusion",
]
