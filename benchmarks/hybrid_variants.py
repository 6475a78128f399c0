"""Variants of the combined ranking on the hybrid development queries (benchmarks/hybrid.md), one table row each.

::

    .venv/bin/python benchmarks/hybrid_variants.py --prefix hybdev [--split dev] [--out rows.json]
    .venv/bin/python benchmarks/hybrid_variants.py --queries evaluation/data/hybrid-dev2.tsv --prefix hybdev2 \
        --variants inline
    .venv/bin/python benchmarks/hybrid_variants.py --prefix hybdev --cost [--passes 5]

The papers and distractors must already be indexed under the prefix (`eqsearch evaluate hybrid --prefix P --papers
... --distractors ...` does it once). Every variant is the production `SearchService` with one setting changed: the
fusion (evidence, rrf, linear), the balance (`formula_weight`), the evidence fusion's paper share, and its
``inline_factor`` (`evidence_fusion`: an inline formula's formula evidence weighed in a combined search; the one
setting the service does not take, passed by wrapping the fusion the service calls). ``--variants sweep`` is the
first table of benchmarks/hybrid.md (inline factor 1, as then), ``--variants inline`` the third round's (the default
before it first, then the inline factor and the paper share; the same factor on an inline formula's whole score,
also tried, is at commit 644e8d5). The held-out rows are never read here unless ``--split heldout`` is asked, which
is done once, for the chosen variant only.

``--cost`` instead times what the fixed ranking depth costs: every dev query's combined search with the depth at 50
(the depth before exact paging) and at 100 (now), alternating query by query in one run, ``--passes`` times; it
prints the median wall time and the median process CPU time of the client per search.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial
from pathlib import Path
from unittest.mock import patch

import eqsearch.engine.search.service as service_module
from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model.encoder import load_encoder
from eqsearch.engine.search import SearchService
from eqsearch.engine.search.fusion import evidence_fusion
from eqsearch.evaluation.hybrid import DEFAULT_HYBRID_QUERIES, evaluate_hybrid, read_hybrid_queries, resolve_targets

#: The default before the third round (inline factor 1); today's is its ``inline_factor`` 0.8 row.
BEFORE = {"fusion": "evidence", "weight": 0.5, "paper_share": 0.75, "inline_factor": 1.0}
VARIANTS = {
    "sweep": [
        {**BEFORE, "fusion": "rrf"},
        {**BEFORE, "fusion": "linear"},
        *({**BEFORE, "paper_share": share} for share in (0.0, 0.25, 0.5, 0.75, 1.0)),
        *({**BEFORE, "weight": weight} for weight in (0.4, 0.6, 0.7)),
    ],
    "inline": [
        BEFORE,
        *({**BEFORE, "inline_factor": factor} for factor in (0.8, 0.6)),
        *({**BEFORE, "paper_share": share} for share in (0.6, 0.5)),
    ],
}


def cost(client: object, encoder: object, converter: object, prefix: str, rows: list, passes: int) -> None:
    """Median wall and client CPU milliseconds per combined search at depth 50 and 100, side by side."""
    services = {
        depth: SearchService(client, encoder, converter, index_prefix=prefix, candidate_depth=depth)
        for depth in (50, 100)
    }
    wall: dict[int, list[float]] = {50: [], 100: []}
    cpu: dict[int, list[float]] = {50: [], 100: []}
    for row in rows:  # warm both (KaTeX, the encoder, the node's caches)
        for service in services.values():
            service.search(row.query("both", size=10))
    for _ in range(passes):
        for row in rows:
            for depth, service in services.items():
                began, began_cpu = time.perf_counter(), time.process_time()
                service.search(row.query("both", size=10))
                wall[depth].append((time.perf_counter() - began) * 1000.0)
                cpu[depth].append((time.process_time() - began_cpu) * 1000.0)
    for depth in (50, 100):
        print(
            f"depth {depth}: median {statistics.median(wall[depth]):.1f} ms wall, "
            f"{statistics.median(cpu[depth]):.1f} ms client CPU per search ({len(wall[depth])} searches)"
        )
    ratio = statistics.median(wall[100]) / statistics.median(wall[50])
    print(f"depth 100 / depth 50: {ratio:.2f}x median wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, default=DEFAULT_HYBRID_QUERIES, help="the query file")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--variants", choices=sorted(VARIANTS), default="sweep")
    parser.add_argument("--split", choices=("dev", "heldout"), default="dev")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cost", action="store_true", help="time depth 50 against depth 100 instead")
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    rows = [row for row in read_hybrid_queries(args.queries) if row.split == args.split]
    client, _ = connect(EsConfig.from_env())
    encoder = load_encoder(None)
    results = []
    with KatexConverter() as converter:
        if args.cost:
            cost(client, encoder, converter, args.prefix, rows, args.passes)
            return
        for variant in VARIANTS[args.variants]:
            service = SearchService(
                client,
                encoder,
                converter,
                index_prefix=args.prefix,
                paper_share=variant["paper_share"],
                words_paper_share=variant["paper_share"],
            )
            targets = resolve_targets(client, service.equations_alias, rows)
            fusion = partial(evidence_fusion, inline_factor=variant["inline_factor"])
            with patch.object(service_module, "evidence_fusion", fusion):
                evaluation = evaluate_hybrid(
                    service, rows, targets, options={"formula_weight": variant["weight"], "fusion": variant["fusion"]}
                )
            figures = evaluation.figures()
            ranks = {
                row: {mode: found["equation"] for mode, found in modes.items()}
                for row, modes in evaluation.ranks.items()
            }
            results.append({**variant, "figures": figures, "moved": evaluation.moved(), "ranks": ranks})
            both, words, formula = figures["both"], figures["keywords"], figures["formula"]
            print(
                f"{variant['fusion']:<8} w={variant['weight']:.2f} paper={variant['paper_share']:.2f} "
                f"inline={variant['inline_factor']:.2f}  "
                f"both eq {both['equation_mrr']:.3f}/{both['equation_r10']:.3f} "
                f"paper {both['paper_mrr']:.3f}/{both['paper_r10']:.3f}   words eq {words['equation_mrr']:.3f} "
                f"paper {words['paper_mrr']:.3f}   formula eq {formula['equation_mrr']:.3f} "
                f"paper {formula['paper_mrr']:.3f}",
                flush=True,
            )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
