"""The embedding's share of the default ranker, swept on indices an evaluation kept (`eqsearch evaluate formulas
--keep`): every share searches the same indices with the default's structure, rerank and first stage, the kNN
weighed ``share`` and the structure ``1 - share``; prints nDCG′, MAP′ and P′@10 per share (development topics only).

    python benchmarks/embedding_share.py --prefix eqsearch-eval-XXXXXXXX --bundle BUNDLE \\
        --topics T.tsv --qrels Q.txt --shares 0,0.05,0.1,0.2,0.3
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.search import SearchService
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.evaluation.formulas import formula_ranking, read_formula_file
from eqsearch.evaluation.trec import evaluate_run, read_qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--topics", required=True)
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--shares", default="0,0.05,0.1,0.2,0.3")
    args = parser.parse_args()
    client, _ = connect(EsConfig.from_env())
    encoder = load_encoder(args.bundle)
    qrels = read_qrels(args.qrels)
    topics = read_formula_file(args.topics, "topic")
    default = get_ranker(DEFAULT_RANKER)
    out = {}
    with KatexConverter() as converter:
        for share in (float(s) for s in args.shares.split(",")):
            ranking = dataclasses.replace(default, name=f"share-{share}", structure=1.0 - share, embedding=share)
            service = SearchService(
                client, encoder, converter, index_prefix=args.prefix, candidate_depth=1000, ranking=ranking
            )
            run = {t: [doc for doc, _ in formula_ranking(service, latex, 1000)] for t, latex in topics}
            means = evaluate_run(run, qrels, topics=[t for t, _ in topics]).means
            out[share] = {k: round(v, 4) for k, v in means.items()}
            print(share, out[share], flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
