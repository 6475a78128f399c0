"""Benchmark: cheaper MaxSim reranks (issue 26), their quality on the ARQMath-1 development half, offline.

The MaxSim rerank's cost in the node is candidates x query nodes x candidate nodes x dimensions. This script scores
variants that cut each factor on one kept evaluation index (``eqsearch evaluate formulas --keep``): the window (the
top 100, 50 or 30 of the formula side), the dimensions (the bundle's 64-d node projections, or a fixed linear
projection of the 512-d node states, `fit_projection`, fitted on node states of the *training corpus*, never on the
ARQMath collection), and which query nodes count (all; leaves only; inner nodes only). Each topic is searched once
through the production `SearchService` (the MaxSim ranker, the plain requests: its fused formula side to depth 1000
and the query's node states are captured where the service reranks); each variant then reranks that side with the
service's own `maxsim_rerank` (rows rounded to int8 as the index stores them, where asked) and is scored with
ARQMath's prime measures at depth 1000. The first two variants reproduce ``plugin_rerank.py quality`` on the same
index: the default ranker, and the MaxSim ranker as it was before update 15 (512-d, top 100; checked). Run from the
repository root::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/experiments/maxsim_variants.py fit --out /tmp/proj.npz
    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/experiments/maxsim_variants.py quality --prefix P \\
        --projection /tmp/proj.npz

Prints one JSON line per variant.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.model.featurize import featurize_many
from eqsearch.engine.model.nodes import load_node_encoder
from eqsearch.engine.search.maxsim import maxsim_rerank, maxsim_scores

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the siblings imported below
from devset import add_dev_files, fill_dev_files

CORPUS = Path.home() / ".cache" / "eqsearch" / "corpus" / "real-latex" / "papers.jsonl"
RANKER = "structure+embedding+rerank+maxsim"


def fit(args: argparse.Namespace) -> None:
    """Projections of the bundle's node states fitted on training-corpus formulas (`export.node_projection`), saved
    in one file for `quality` (``eqsearch export node-projection`` ships one in the bundle)."""
    from eqsearch.export.node_projection import corpus_mathml, fit_node_projection

    began = time.process_time()
    formulas = corpus_mathml(args.corpus, args.formulas, args.seed)
    out, kept = {}, {}
    for d in args.dims:
        out[f"p{d}"], kept[d] = fit_node_projection(None, formulas, d)
    np.savez(args.out, **out)
    print(json.dumps({"out": str(args.out), "formulas": len(formulas), "kept": kept,
                      "cpu_s": round(time.process_time() - began, 1)}))  # fmt: skip


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def int8_rows(rows: np.ndarray) -> np.ndarray:
    """Unit rows rounded as the index stores them (`documents.node_vectors_value`) and as the node rounds a query."""
    return np.clip(np.rint(unit(rows) * 127.0), -127, 127).astype(np.float32)


def leaf_mask(mathml: str, vocabulary: Any) -> np.ndarray:
    """Which of a formula's graph nodes (the featurizer's order) are leaves (no child)."""
    graph = featurize_many([mathml], vocabulary)
    parents = set(graph.edge_index[0].tolist())
    return np.array([node not in parents for node in range(len(graph.tag))])


@dataclass
class Topic:
    topic: str
    ranking: list[tuple[str, float]]
    query: np.ndarray  # node states
    leaves: np.ndarray
    projected: np.ndarray  # the bundle's 64-d node projections


@dataclass(frozen=True)
class Variant:
    name: str
    window: int
    nodes: str = "node_states"  # or "node_vectors" (the bundle's 64-d), or "p<d>" (a fitted projection)
    query_nodes: str = "all"  # "leaves", "inner"
    int8: bool = True


VARIANTS = (
    Variant("no MaxSim (the default ranker)", 0, int8=False),
    Variant("512-d node states, top 100, float (the ranker before update 15)", 100, int8=False),
    Variant("512-d, top 100, int8 (stored)", 100),
    Variant("512-d, top 50", 50),
    Variant("512-d, top 30", 30),
    Variant("512-d, top 100, leaf query nodes", 100, query_nodes="leaves"),
    Variant("512-d, top 100, inner query nodes", 100, query_nodes="inner"),
    Variant("64-d node projections (the bundle's), top 100", 100, nodes="node_vectors"),
    Variant("64-d node projections, top 30", 30, nodes="node_vectors"),
)


def capture(prefix: str, topics: list[tuple[str, str]]) -> list[Topic]:
    """Each topic's fused formula side (depth 1000) and its query's node states, as the service reranks them."""
    from eqsearch.engine.es import EsConfig, connect
    from eqsearch.engine.latex import KatexConverter
    from eqsearch.engine.model import load_encoder
    from eqsearch.engine.search.query import HybridQuery
    from eqsearch.engine.search.rankers import get_ranker
    from eqsearch.engine.search.service import SearchService

    client, _ = connect(EsConfig.from_env())
    out: list[Topic] = []
    with KatexConverter() as converter:
        service = SearchService(
            client, load_encoder(None), converter, index_prefix=prefix, candidate_depth=1000,
            ranking=replace(get_ranker(RANKER), maxsim_nodes="node_states"), plugin=False,
        )  # fmt: skip
        projections = load_node_encoder(None, output="node_vectors")
        seen: list[tuple[list[tuple[str, float]], np.ndarray]] = []
        service.maxsim.rerank = lambda ranking, nodes, *_: seen.append((ranking, nodes)) or ranking  # type: ignore
        for topic, latex in topics:
            seen.clear()
            service.search(HybridQuery(latex=latex, size=10))
            mathml = converter.convert(latex).mathml
            if not seen or mathml is None:
                out.append(Topic(topic, [], np.zeros((0, 512), np.float32), np.zeros(0, bool), np.zeros((0, 64))))
                continue
            ranking, nodes = seen[0]
            leaves = leaf_mask(mathml, service.node_encoder.vocabulary)
            out.append(Topic(topic, ranking, np.asarray(nodes), leaves, projections.encode([mathml])[0]))
    return out


def quality(args: argparse.Namespace) -> None:
    from eqsearch.engine.es import EsConfig, connect
    from eqsearch.engine.search.requests import fetch_sources
    from eqsearch.evaluation.formulas import read_formula_file
    from eqsearch.evaluation.trec import evaluate_run, read_qrels

    topics = read_formula_file(args.topics, "topic")
    qrels = read_qrels(args.qrels)
    captured = capture(args.prefix, topics)
    client, _ = connect(EsConfig.from_env())
    alias = f"{args.prefix}-equations"
    window = max(v.window for v in VARIANTS)
    ids = sorted({doc for t in captured for doc, _ in t.ranking[:window]})
    mathml: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        sources = fetch_sources(client, alias, {"terms": {"eq_id": part}}, len(part), ["eq_id", "mathml"])
        mathml.update({s["eq_id"]: s["mathml"] for s in sources if s.get("mathml")})
    encoders = {name: load_node_encoder(None, output=name) for name in ("node_states", "node_vectors")}
    nodes = {name: dict(zip(mathml, enc.encode(list(mathml.values())), strict=True)) for name, enc in encoders.items()}
    projections = dict(np.load(args.projection)) if args.projection else {}
    variants = list(VARIANTS) + [
        Variant(f"{key[1:]}-d projection of the states (training corpus), top {w}{', ' + q if q != 'all' else ''}",
                w, nodes=key, query_nodes=q)
        for key in sorted(k for k in projections if k.startswith("p")) for w in (100, 50, 30)
        for q in (("all", "leaves") if key == "p64" else ("all",))
    ]  # fmt: skip
    for variant in variants:
        run: dict[str, list[str]] = {}
        for t in captured:
            if not t.ranking or not variant.window:
                run[t.topic] = [doc.split(":")[0] for doc, _ in t.ranking[:1000]]
                continue
            query, candidates = t.query, nodes["node_states"]
            if variant.nodes == "node_vectors":
                query = t.projected
                candidates = nodes["node_vectors"]
            head = [doc for doc, _ in t.ranking[: variant.window]]
            rows = [candidates.get(doc, np.zeros((0, 1), np.float32)) for doc in head]
            if variant.nodes.startswith("p"):
                matrix = projections[variant.nodes]
                query, rows = unit(query) @ matrix, [unit(r) @ matrix if len(r) else r for r in rows]
            if variant.query_nodes != "all":
                keep = t.leaves if variant.query_nodes == "leaves" else ~t.leaves
                query = query[keep] if keep.any() else query
            if variant.int8:
                query, rows = int8_rows(query), [int8_rows(r) if len(r) else r for r in rows]
            scores = maxsim_scores(query, rows)
            maxsim = {doc: float(s) for doc, s in zip(head, scores, strict=True) if np.isfinite(s)}
            reranked = maxsim_rerank(t.ranking, maxsim, window=len(head), weight=0.3)
            run[t.topic] = [doc.split(":")[0] for doc, _ in reranked[:1000]]
        report = evaluate_run(run, qrels, topics=[topic for topic, _ in topics])
        means = {k: round(v, 4) for k, v in report.means.items()}
        print(json.dumps({"variant": variant.name, "window": variant.window, "nodes": variant.nodes,
                          "query_nodes": variant.query_nodes, "int8": variant.int8, **means}), flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    fitting = commands.add_parser("fit", help="fit the projections on training-corpus node states")
    fitting.add_argument("--corpus", type=Path, default=CORPUS)
    fitting.add_argument("--formulas", type=int, default=3000)
    fitting.add_argument("--seed", type=int, default=26)
    fitting.add_argument("--dims", type=int, nargs="+", default=[64, 128])
    fitting.add_argument("--out", type=Path, required=True)
    fitting.set_defaults(handler=fit)
    scoring = commands.add_parser("quality", help="each variant's development figures")
    scoring.add_argument("--prefix", required=True, help="a kept evaluation index (eqsearch evaluate --keep)")
    add_dev_files(scoring)
    scoring.add_argument("--projection", type=Path, help="projections written by 'fit'")
    scoring.set_defaults(handler=quality)
    args = parser.parse_args()
    fill_dev_files(args)
    args.handler(args)


if __name__ == "__main__":
    main()
