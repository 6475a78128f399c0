"""The embedding's share of the default ranker, swept on indices an evaluation kept (`eqsearch evaluate formulas
--keep`): every share searches the same indices with the default's structure, rerank and first stage, the kNN
weighed ``share`` and the structure ``1 - share``; prints nDCG′, MAP′ and P′@10 per share (development topics only).

    python benchmarks/experiments/embedding_share.py --prefix eqsearch-eval-XXXXXXXX --bundle BUNDLE \\
        --topics T.tsv --qrels Q.txt --shares 0,0.05,0.1,0.2,0.3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.search import SearchService
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.evaluation.formulas import formula_ranking, read_formula_file
from eqsearch.evaluation.trec import evaluate_run, read_qrels, write_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--topics", required=True)
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--shares", default="0,0.05,0.1,0.2,0.3")
    parser.add_argument("--runs", help="also write each share's run here (TREC, share-S.trec), for `evaluate trec`")
    args = parser.parse_args()
    client, _ = connect(EsConfig.from_env())
    encoder = load_encoder(args.bundle)
    qrels = read_qrels(args.qrels)
    topics = read_formula_file(args.topics, "topic")
    default = get_ranker(DEFAULT_RANKER)
    out = {}
    if args.runs:
        Path(args.runs).mkdir(parents=True, exist_ok=True)
    with KatexConverter() as converter:
        for share in (float(s) for s in args.shares.split(",")):
            ranking = dataclasses.replace(default, name=f"share-{share}", structure=1.0 - share, embedding=share)
            service = SearchService(
                client, encoder, converter, index_prefix=args.prefix, candidate_depth=1000, ranking=ranking
            )
            run = {t: formula_ranking(service, latex, 1000) for t, latex in topics}
            if args.runs:
                write_run(Path(args.runs) / f"share-{share}.trec", run, tag=f"share{share}")
            means = evaluate_run({t: [d for d, _ in r] for t, r in run.items()}, qrels, topics=[t for t, _ in topics])
            means = means.means
            out[share] = {k: round(v, 4) for k, v in means.items()}
            print(share, out[share], flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
