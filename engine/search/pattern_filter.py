"""The pattern filter: a query with variables keeps only the formula candidates its pattern matches.

A formula with variables (``?a^2 + ?b^2 = ?c^2``, `engine.model.patterns`) asks for that shape, as zbMATH's does, so
a near miss is not shown as a hit. The structural list of such a query reaches deeper (`SearchService`'s
``pattern_candidates``); the candidates of both formula lists are read in one request, their MathML (or LaTeX) only,
and unified with the pattern on their layout trees (`match_pattern`, bounded per candidate). The request keeps only
those whose structural terms hold every symbol the pattern names (no other can match), so the client parses fewer.
"""

from __future__ import annotations

from elasticsearch import Elasticsearch
from eqsearch.engine.index.mappings import STRUCTURE_FIELD
from eqsearch.engine.model.layout import LayoutNode, layout_nodes
from eqsearch.engine.model.patterns import match_pattern
from eqsearch.engine.search.query import FORMULA_LISTS
from eqsearch.engine.search.query_formula import layout_of
from eqsearch.engine.search.requests import fetch_sources

__all__ = ["pattern_matches"]

#: What the pattern match reads of each candidate.
_PATTERN_SOURCE = ["eq_id", "mathml", "latex"]


def pattern_matches(
    client: Elasticsearch, index: str, lists: dict[str, list[tuple[str, float]]], pattern: list[LayoutNode]
) -> dict[str, list[tuple[str, float]]]:
    """The ranked lists with the formula lists cut to the candidates the pattern matches (their order kept)."""
    pool = list(dict.fromkeys(eq_id for name in FORMULA_LISTS for eq_id, _ in lists.get(name, ())))
    if not pool:
        return lists
    symbols = sorted({node.label for node in layout_nodes(pattern) if node.variable is None})
    query = {
        "bool": {
            "filter": [
                {"terms": {"eq_id": pool}},
                {
                    "bool": {  # a document without structural terms (an old index) is parsed anyway
                        "should": [
                            {"bool": {"filter": [{"term": {STRUCTURE_FIELD: s}} for s in symbols]}},
                            {"bool": {"must_not": [{"exists": {"field": STRUCTURE_FIELD}}]}},
                        ],
                        "minimum_should_match": 1,
                    }
                },
            ]
        }
    }
    matched = {
        source["eq_id"]
        for source in fetch_sources(client, index, query, len(pool), _PATTERN_SOURCE)
        if match_pattern(pattern, layout_of(source.get("mathml"), source.get("latex"))) is not None
    }
    return {
        name: [(eq_id, score) for eq_id, score in ranking if eq_id in matched] if name in FORMULA_LISTS else ranking
        for name, ranking in lists.items()
    }
