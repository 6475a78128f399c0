"""Variants of the combined ranking on the hybrid development queries (benchmarks/hybrid.md), one table row each.

::

    .venv/bin/python benchmarks/hybrid_variants.py --prefix hybdev [--split dev] [--out rows.json]

The papers and distractors must already be indexed under the prefix (`eqsearch evaluate hybrid --prefix P --papers
... --distractors ...` does it once). Every variant is the production `SearchService` with one setting changed: the
fusion (evidence, rrf, linear), the balance (`formula_weight`) and the evidence fusion's paper share. The held-out
rows are never read here unless ``--split heldout`` is asked, which is done once, for the chosen variant only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model.encoder import load_encoder
from eqsearch.engine.search import SearchService
from eqsearch.evaluation.hybrid import evaluate_hybrid, read_hybrid_queries, resolve_targets

VARIANTS = [
    {"fusion": "rrf", "weight": 0.5, "paper_share": 0.5},
    {"fusion": "linear", "weight": 0.5, "paper_share": 0.5},
    *(
        {"fusion": "evidence", "weight": w, "paper_share": s}
        for w in (0.4, 0.5, 0.6, 0.7)
        for s in (0.0, 0.25, 0.5, 0.75, 1.0)
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--split", choices=("dev", "heldout"), default="dev")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [row for row in read_hybrid_queries() if row.split == args.split]
    client, _ = connect(EsConfig.from_env())
    encoder = load_encoder(None)
    results = []
    with KatexConverter() as converter:
        for variant in VARIANTS:
            service = SearchService(
                client, encoder, converter, index_prefix=args.prefix, paper_share=variant["paper_share"]
            )
            targets = resolve_targets(client, service.equations_alias, rows)
            evaluation = evaluate_hybrid(
                service, rows, targets, options={"formula_weight": variant["weight"], "fusion": variant["fusion"]}
            )
            figures = evaluation.figures()
            results.append({**variant, "figures": figures, "moved": evaluation.moved()})
            both, words = figures["both"], figures["keywords"]
            print(
                f"{variant['fusion']:<8} w={variant['weight']:.2f} paper={variant['paper_share']:.2f}  "
                f"both eq {both['equation_mrr']:.3f}/{both['equation_r10']:.3f} paper {both['paper_mrr']:.3f}/"
                f"{both['paper_r10']:.3f}   words eq {words['equation_mrr']:.3f} paper {words['paper_mrr']:.3f}",
                flush=True,
            )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
