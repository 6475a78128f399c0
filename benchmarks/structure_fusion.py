"""The default ranker's fusion replayed offline, to screen encoders quickly on the development half: the structural
list (structure and rerank, the default's first stage) is searched once through the production service on indices an
evaluation kept (`eqsearch evaluate formulas --keep`) and cached; each bundle's kNN list is the exact cosine top
``depth`` over the collection's MathML (the formulas without MathML have no vector, as in the index); both lists are
min-max normalised and blended ``1 - share`` / ``share`` as `engine.search.fusion.linear_fusion` does. HNSW's
approximation aside, this is the production fusion; the figures that count still come from
`benchmarks/embedding_share.py` on indices ingested with the bundle.

    python benchmarks/structure_fusion.py --prefix eqsearch-eval-XXXXXXXX --cache STRUCT.json \\
        --dev-mathml .encdata/dev-mathml.json.gz --qrels Q.txt --bundle B1 [--bundle B2] --shares 0,0.1,0.2
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
from pathlib import Path

import numpy as np
from eqsearch.engine.model import load_encoder
from eqsearch.engine.search.fusion import linear_fusion
from eqsearch.evaluation.trec import evaluate_run, read_qrels, write_run


def structural_lists(prefix: str, topics: list[tuple[str, str]], depth: int) -> dict[str, list[tuple[str, float]]]:
    """Each topic's structural list (the default ranker with no embedding), ranked by the production service."""
    from eqsearch.engine.es import EsConfig, connect
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.search import SearchService
    from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
    from eqsearch.evaluation.formulas import formula_ranking

    client, _ = connect(EsConfig.from_env())
    ranking = dataclasses.replace(get_ranker(DEFAULT_RANKER), name="structure-only", structure=1.0, embedding=0.0)
    with KatexConverter() as converter:
        service = SearchService(
            client, load_encoder(None), converter, index_prefix=prefix, candidate_depth=depth, ranking=ranking
        )
        return {t: formula_ranking(service, latex, depth) for t, latex in topics}


def knn_lists(source: str, dev: dict, depth: int) -> dict[str, list[tuple[str, float]]]:
    """Each topic's exact cosine top ``depth`` among the collection's formulas with MathML, by a bundle's vectors, or
    by the vectors a structure-bag run saved (``dev-vectors.npz``: a model the runtime cannot serve yet)."""
    keep = [bool(m) for _, _, m in dev["collection"]]
    coll_ids = [i for i, _, m in dev["collection"] if m]
    if source.endswith(".npz"):
        with np.load(source) as saved:
            if list(saved["collection_ids"]) != [i for i, _, _ in dev["collection"]]:
                raise SystemExit(f"{source}: not this development set's collection")
            vectors = saved["collection"][np.asarray(keep)]
            queries = saved["topics"]
    else:
        encoder = load_encoder(source)
        vectors = encoder.encode([m for _, _, m in dev["collection"] if m])
        queries = np.stack(
            [encoder.encode([m])[0] if m else np.zeros(encoder.dim, np.float32) for _, _, m in dev["topics"]]
        )
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    out = {}
    for k, (topic, _, mathml) in enumerate(dev["topics"]):
        q = queries[k]
        if not mathml or not q.any():
            out[topic] = []
            continue
        scores = vectors @ (q / float(np.linalg.norm(q)))
        order = np.argsort(-scores, kind="stable")[:depth]
        out[topic] = [(coll_ids[j], (1.0 + float(scores[j])) / 2.0) for j in order]  # ES's cosine score
    return out


def fused_run(
    structure: dict[str, list],
    knn: dict[str, list[tuple[str, float]]],
    topics: list[str],
    qrels: dict,
    share: float,
    depth: int,
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, float]]:
    """The default's fusion of each topic's structural and kNN lists at ``share``, and its figures (4 decimals)."""
    run = {}
    for t in topics:
        lists = {"structure": [tuple(x) for x in structure[t]], "embedding": knn[t]}
        fused = linear_fusion(lists, {"structure": 1.0 - share, "embedding": share})
        run[t] = [(f.doc_id, f.score) for f in fused][:depth]
    means = evaluate_run({t: [d for d, _ in r] for t, r in run.items()}, qrels, topics=topics).means
    return run, {k: round(v, 4) for k, v in means.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", help="kept evaluation indices (to search the structural list; not needed cached)")
    parser.add_argument("--cache", type=Path, required=True, help="the structural lists' JSON (written when missing)")
    parser.add_argument("--dev-mathml", type=Path, required=True)
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--bundle", action="append", default=[], help="a bundle, or a run's dev-vectors.npz")
    parser.add_argument("--shares", default="0,0.05,0.1,0.15,0.2,0.3")
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument(
        "--runs", type=Path, help="also write each bundle's fused run per share here (TREC), for `evaluate trec`"
    )
    args = parser.parse_args()
    with gzip.open(args.dev_mathml, "rt", encoding="utf-8") as f:
        dev = json.load(f)
    topics = [(t, latex) for t, latex, _ in dev["topics"]]
    if not args.cache.exists():
        if not args.prefix:
            raise SystemExit(f"{args.cache} does not exist: give --prefix to search the structural lists")
        args.cache.write_text(json.dumps(structural_lists(args.prefix, topics, args.depth)), encoding="utf-8")
    structure = json.loads(args.cache.read_text(encoding="utf-8"))
    if args.runs:
        args.runs.mkdir(parents=True, exist_ok=True)
    qrels = read_qrels(args.qrels)
    ids = [t for t, _ in topics]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for bundle in args.bundle:
        knn = knn_lists(bundle, dev, args.depth)
        out[bundle] = {}
        for share in (float(s) for s in args.shares.split(",")):
            run, out[bundle][str(share)] = fused_run(structure, knn, ids, qrels, share, args.depth)
            if args.runs:
                name = f"{Path(bundle).parent.name}-{Path(bundle).name}-{share}.trec"
                write_run(args.runs / name, run, tag=f"share{share}")
            print(bundle, share, out[bundle][str(share)], flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
