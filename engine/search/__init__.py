"""Hybrid search: a formula (structural BM25 and kNN) and keywords (BM25), filtered alike, fused client-side into
pages of hits.

`query` holds `HybridQuery` and the request bodies it becomes, `rankers` the registered ways of ranking the formula
side, `fusion` the rank fusion, `results` the hits and pages, and `service` the `SearchService` whose `search` runs
the steps of the other modules in order (`query_formula`, `index_meta`, `requests`, `pattern_filter`, `maxsim`,
`highlight`; `errors` and `views` beside them).
"""

from eqsearch.engine.search.fusion import Fused, linear_fusion, reciprocal_rank_fusion
from eqsearch.engine.search.query import MAX_PAGE_SIZE, MAX_RESULT_WINDOW, Fusion, HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, RANKERS, FormulaRanking, get_ranker
from eqsearch.engine.search.results import EquationHit, Matched, PaperGroup, SearchResults, group_hits
from eqsearch.engine.search.service import EquationNotFoundError, SearchError, SearchService

__all__ = [
    "DEFAULT_RANKER",
    "MAX_PAGE_SIZE",
    "MAX_RESULT_WINDOW",
    "RANKERS",
    "EquationHit",
    "EquationNotFoundError",
    "FormulaRanking",
    "Fused",
    "Fusion",
    "HybridQuery",
    "Matched",
    "PaperGroup",
    "SearchError",
    "SearchResults",
    "SearchService",
    "get_ranker",
    "group_hits",
    "linear_fusion",
    "reciprocal_rank_fusion",
]
