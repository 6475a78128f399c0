"""Benchmark: what a query with variables (``?a^2 + ?b^2``) costs beside the same formula with letters.

Run from the repository root against a running node holding an index (default: the ``demo`` prefix that ``make run``
fills)::

    .venv/bin/python benchmarks/query_variables.py --prefix demo --passes 7

For each pattern it runs, through the real `SearchService` (KaTeX, the installed bundle), the pattern and the same
formula with each ``?name`` written as the letter ``name``, first page of 10, the conversion cached (a warm-up pass
first), and prints the median wall milliseconds of each, the candidates the pattern was checked against (``pool``),
those that hold every symbol the pattern names and so were parsed (``parsed``), how many matched, and the client CPU
of the unification alone (`match_pattern` over them, MathML parsing included).
One JSON object per pattern.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time

from eqsearch.engine.es.client import connect
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.index.mappings import STRUCTURE_FIELD
from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.engine.model.encoder import load_encoder
from eqsearch.engine.model.layout import layout_nodes, parse_layout, parse_layout_latex
from eqsearch.engine.model.patterns import mark_variables, match_pattern, read_query_variables
from eqsearch.engine.search import HybridQuery, SearchService
from eqsearch.engine.search.requests import ranked_lists

PATTERNS = [
    r"?a^2 + ?b^2 = ?c^2",
    r"\frac{?a}{?b}",
    r"\sum_{?i=1}^{?n} ?x_{?i}",
    r"e^{?x}",
    r"\sqrt{?x}",
    r"(?a + ?b)^2",
    r"\int_{?a}^{?b} ?f \, dx",
    r"?f(?x) = ?g(?x)",
    r"\log(?x ?y) = \log ?x + \log ?y",
    r"\|?x\|_2",
]


def _median_ms(service: SearchService, latex: str, passes: int) -> float:
    service.search(HybridQuery(latex=latex))  # warm-up: conversion and encoding cached from here on
    times = []
    for _ in range(passes):
        began = time.perf_counter()
        service.search(HybridQuery(latex=latex))
        times.append((time.perf_counter() - began) * 1000.0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", default="demo")
    parser.add_argument("--passes", type=int, default=7)
    args = parser.parse_args()
    client, _ = connect(EsConfig.from_env())
    encoder = load_encoder(None)
    with KatexConverter() as converter:
        service = SearchService(client, encoder, converter, index_prefix=args.prefix)
        for latex in PATTERNS:
            literal = re.sub(r"\?([A-Za-z][A-Za-z0-9]*)", r"\1", latex)
            pattern_ms = _median_ms(service, latex, args.passes)
            literal_ms = _median_ms(service, literal, args.passes)
            # the pool as the service reads it: the structural list, pattern_candidates deep, and the kNN list
            pattern = read_query_variables(latex)
            formula = service.formulas.get(pattern)
            lists = ranked_lists(client, service.equations_alias, service.requests(HybridQuery(latex=latex))).lists
            pool = list(dict.fromkeys(i for name in ("structure", "embedding") for i, _ in lists.get(name, ())))
            layout = mark_variables(formula.layout, pattern)
            symbols = sorted({node.label for node in layout_nodes(layout) if node.variable is None})
            filters = [{"terms": {"eq_id": pool}}, *({"term": {STRUCTURE_FIELD: s}} for s in symbols)]
            docs = client.search(
                index=service.equations_alias,
                query={"bool": {"filter": filters}},
                size=len(pool),
                source_includes=["mathml", "latex"],
            )["hits"]["hits"]
            began = time.process_time()
            matched = 0
            for doc in docs:
                source = doc["_source"]
                try:
                    candidate = parse_layout(source["mathml"]) if source.get("mathml") else None
                except ValueError:
                    candidate = None
                if candidate is None:
                    candidate = parse_layout_latex(source.get("latex") or "")
                matched += match_pattern(layout, candidate) is not None
            unify_ms = (time.process_time() - began) * 1000.0
            print(
                json.dumps(
                    {
                        "pattern": latex,
                        "pattern_ms": round(pattern_ms, 1),
                        "literal_ms": round(literal_ms, 1),
                        "pool": len(pool),
                        "parsed": len(docs),
                        "matched": matched,
                        "unify_cpu_ms": round(unify_ms, 1),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
