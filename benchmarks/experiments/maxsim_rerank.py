"""Benchmark: Amador & Zanibbi's MaxSim rerank (#15) on the ARQMath-1 development half, and what it costs.

The development collection is ingested once through the production ingest job (`evaluation.formulas`, indices of
their own, prefix ``eqmaxsim-…``, deleted at the end); every variant (node kind, window, weight, fused ranking) is
then searched through the production `SearchService` exactly as ``eqsearch evaluate formulas --ranker NAME`` does
(formula-only queries, paged to depth 1000) and scored with ARQMath's prime measures. The MaxSim rerank's client CPU
is measured with ``time.process_time`` around the service's rerank step, on the first page of each topic (cold
candidate cache: the cost a new query pays), median over the topics. Run from the repository root::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/experiments/maxsim_rerank.py grid   # each variant
    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/experiments/maxsim_rerank.py cost   # bytes, ms

``cost`` compares the two places node vectors could live: computed at rerank time from the candidates' stored
MathML (one fetch, featurize, the node-states sidecar), or stored per equation as a ``binary`` field (int8 or
float16; measured on an index of its own with that field, fetched through ``_source``). Each prints JSON lines.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.model.featurize import featurize_many
from eqsearch.engine.model.nodes import load_node_encoder
from eqsearch.engine.search import FormulaRanking
from eqsearch.engine.search.maxsim import maxsim_scores
from eqsearch.engine.search.rankers import get_ranker
from eqsearch.evaluation.formulas import IndexedCollection, formula_ranking, indexed_collection, read_formula_file
from eqsearch.evaluation.trec import evaluate_run, read_qrels

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the siblings imported below
from devset import add_dev_argument, dev_dir


def _with_maxsim(
    base: FormulaRanking, name: str, nodes: str, window: int, weight: float, symmetric: bool = False
) -> FormulaRanking:
    """``base`` with a MaxSim rerank of its first ``window`` hits."""
    return replace(
        base,
        name=name,
        maxsim_window=window,
        maxsim_weight=weight,
        maxsim_nodes=nodes,
        maxsim_symmetric=symmetric,
    )


def _variants() -> list[FormulaRanking]:
    """The grid: round values only (windows 100/300, weights 0.1/0.3/0.5 on the default; 1.0 alone on kNN)."""
    default = get_ranker("structure+embedding+rerank")
    embedding = get_ranker("embedding")
    out = [embedding, default]
    for nodes in ("node_vectors", "node_states"):
        for window in (100, 300):
            out.append(_with_maxsim(embedding, f"maxsim[{nodes},w{window}]", nodes, window, 1.0))
    for nodes in ("node_vectors", "node_states"):
        for window in (100, 300):
            for weight in (0.1, 0.3, 0.5):
                name = f"default+maxsim[{nodes},w{window},{weight}]"
                out.append(_with_maxsim(default, name, nodes, window, weight))
    for window in (100, 300):  # both directions of MaxSim, on the node states (the better kind above)
        name = f"maxsim[node_states,w{window},sym]"
        out.append(_with_maxsim(embedding, name, "node_states", window, 1.0, symmetric=True))
        for weight in (0.1, 0.3, 0.5):
            name = f"default+maxsim[node_states,w{window},{weight},sym]"
            out.append(_with_maxsim(default, name, "node_states", window, weight, symmetric=True))
    return out


@contextmanager
def _dev_collection(dev: Path, client: Any, encoder: Any) -> Iterator[tuple[KatexConverter, IndexedCollection]]:
    """The development collection ingested once into indices of its own (``eqmaxsim-…``), deleted afterwards."""
    formulas = read_formula_file(dev / "collection.tsv", "visual_id")
    prefix = f"eqmaxsim-{uuid.uuid4().hex[:8]}"
    with (
        KatexConverter() as converter,
        indexed_collection(
            client, encoder, converter, formulas, str(dev / "collection.tsv"), index_prefix=prefix
        ) as indexed,
    ):
        yield converter, indexed


def _timed(service: Any, log: list[float]) -> None:
    """Record the client CPU of each call of the service's MaxSim rerank step."""
    inner = service.maxsim.rerank

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            log.append((time.process_time() - began) * 1000.0)

    service.maxsim.rerank = wrapped


def grid(args: argparse.Namespace) -> None:
    client, _ = connect(EsConfig.from_env())
    encoder = load_encoder()
    qrels = read_qrels(args.dev / "qrels.txt")
    topics = read_formula_file(args.dev / "topics.tsv", "topic")
    variants = _variants()
    if args.only:
        variants = [v for v in variants if any(word in v.name for word in args.only)]
    with _dev_collection(args.dev, client, encoder) as (converter, indexed):
        for ranking in variants:
            service = indexed.service(encoder, converter, ranking=ranking, depth=1000)
            first_page: list[float] = []
            run, wall = {}, []
            for topic, latex in topics:
                log: list[float] = []
                if ranking.maxsim_window:
                    _timed(service, log)
                began = time.perf_counter()
                run[topic] = formula_ranking(service, latex, 1000)
                wall.append((time.perf_counter() - began) * 1000.0)
                if log:
                    first_page.append(log[0])
                    service.maxsim.vectors.clear()  # each topic pays its own candidates (no help from earlier topics)
            report = evaluate_run(
                {t: [d for d, _ in r] for t, r in run.items()}, qrels, topics=[t for t, _ in topics], depth=1000
            )
            print(
                json.dumps(
                    {
                        "ranker": ranking.name,
                        "ndcg_prime": round(report.means["ndcg_prime"], 4),
                        "map_prime": round(report.means["map_prime"], 4),
                        "p_prime_10": round(report.means["p_prime_10"], 4),
                        "maxsim_cpu_ms_median": round(statistics.median(first_page), 1) if first_page else None,
                        "topic_wall_ms_median": round(statistics.median(wall), 1),
                    }
                ),
                flush=True,
            )


def cost(args: argparse.Namespace) -> None:
    client, _ = connect(EsConfig.from_env())
    encoder = load_encoder()
    with _dev_collection(args.dev, client, encoder) as (_, indexed):
        alias = f"{indexed.prefix}-equations"
        hits = client.search(index=alias, size=10_000, source_includes=["eq_id", "mathml"], query={"match_all": {}})
        docs = [
            (h["_source"]["eq_id"], h["_source"]["mathml"]) for h in hits["hits"]["hits"] if h["_source"].get("mathml")
        ]
        mathml = [m for _, m in docs]
        for output in ("node_vectors", "node_states"):
            nodes = load_node_encoder(output=output)
            began = time.process_time()
            vectors = nodes.encode(mathml)
            per_eq = (time.process_time() - began) * 1000.0 / len(mathml)
            counts = np.array([len(v) for v in vectors])
            print(
                json.dumps(
                    {
                        "measure": "encode",
                        "output": output,
                        "equations": len(mathml),
                        "nodes_mean": round(float(counts.mean()), 1),
                        "nodes_median": float(np.median(counts)),
                        "cpu_ms_per_equation": round(per_eq, 3),
                        "bytes_per_equation_float16": round(float(counts.mean()) * nodes.dim * 2, 0),
                        "bytes_per_equation_int8": round(float(counts.mean()) * (nodes.dim + 4), 0),
                    }
                ),
                flush=True,
            )
        began = time.process_time()
        encoder.encode(mathml)
        print(
            json.dumps(
                {
                    "measure": "encode",
                    "output": "formula vector (model.onnx)",
                    "cpu_ms_per_equation": round((time.process_time() - began) * 1000.0 / len(mathml), 3),
                }
            )
        )
        # (b) stored: an index of its own holding only eq_id and the node vectors (int8 rows plus a float32 scale per
        # row, base64 in a binary field): its merged size over the equations is what the field would add per equation
        nodes = load_node_encoder(output="node_vectors")
        vectors = nodes.encode(mathml)
        stored = f"{indexed.prefix}-stored"
        client.indices.create(
            index=stored,
            mappings={
                "properties": {
                    "eq_id": {"type": "keyword"},
                    "node_vectors": {"type": "binary", "doc_values": False},
                }
            },
            settings={"number_of_shards": 1, "number_of_replicas": 0},
        )
        try:
            from elasticsearch.helpers import bulk

            def encoded(v: np.ndarray) -> str:
                scale = np.abs(v).max(axis=1, keepdims=True) / 127.0
                scale[scale == 0] = 1.0
                q = np.round(v / scale).astype(np.int8)
                return base64.b64encode(scale.astype(np.float32).tobytes() + q.tobytes()).decode()

            bulk(
                client,
                (
                    {"_index": stored, "_id": eq, "eq_id": eq, "node_vectors": encoded(v)}
                    for (eq, m), v in zip(docs, vectors, strict=True)
                ),
            )
            client.indices.refresh(index=stored)
            client.indices.forcemerge(index=stored, max_num_segments=1)
            sizes = client.indices.stats(index=[stored, alias], metric="store")["indices"]
            print(
                json.dumps(
                    {
                        "measure": "store",
                        **{k: v["primaries"]["store"]["size_in_bytes"] for k, v in sizes.items()},
                        "equations": len(docs),
                    }
                )
            )
            rng = np.random.default_rng(0)
            states = load_node_encoder(output="node_states")
            for window in (100, 300):
                compute_ms, stored_ms, compute_wall, stored_wall = [], [], [], []
                parts: dict[str, list[float]] = {"fetch": [], "featurize": [], "onnx": [], "maxsim": []}
                for _ in range(22):
                    ids = [docs[k][0] for k in rng.choice(len(docs), window, replace=False)]
                    began, wall = time.process_time(), time.perf_counter()
                    got = client.search(
                        index=alias,
                        size=window,
                        query={"terms": {"eq_id": ids}},
                        source_includes=["eq_id", "mathml"],
                        filter_path=["hits.hits._source"],
                    )
                    fetched = time.process_time()
                    batch = featurize_many([h["_source"]["mathml"] for h in got["hits"]["hits"]], states.vocabulary)
                    featurized = time.process_time()
                    candidates = states.run_batch(batch)
                    encoded = time.process_time()
                    maxsim_scores(candidates[0], candidates)
                    scored = time.process_time()
                    compute_ms.append((scored - began) * 1000.0)
                    compute_wall.append((time.perf_counter() - wall) * 1000.0)
                    for name, (start, end) in {
                        "fetch": (began, fetched),
                        "featurize": (fetched, featurized),
                        "onnx": (featurized, encoded),
                        "maxsim": (encoded, scored),
                    }.items():
                        parts[name].append((end - start) * 1000.0)
                    began, wall = time.process_time(), time.perf_counter()
                    got = client.search(
                        index=stored,
                        size=window,
                        query={"terms": {"eq_id": ids}},
                        source_includes=["node_vectors"],
                        filter_path=["hits.hits._source"],
                    )
                    for h in got["hits"]["hits"]:
                        raw = base64.b64decode(h["_source"]["node_vectors"])
                        n = len(raw) // (4 + nodes.dim)
                        scale = np.frombuffer(raw[: 4 * n], dtype=np.float32)
                        _ = np.frombuffer(raw[4 * n :], dtype=np.int8).reshape(n, nodes.dim) * scale[:, None]
                    stored_ms.append((time.process_time() - began) * 1000.0)
                    stored_wall.append((time.perf_counter() - wall) * 1000.0)
                print(
                    json.dumps(
                        {
                            "measure": "fetch+vectors per query",
                            "window": window,
                            "computed_node_states_cpu_ms_median": round(statistics.median(compute_ms), 1),
                            **{f"{k}_cpu_ms_median": round(statistics.median(v), 1) for k, v in parts.items()},
                            "computed_node_states_wall_ms_median": round(statistics.median(compute_wall), 1),
                            "stored_int8_cpu_ms_median": round(statistics.median(stored_ms), 1),
                            "stored_int8_wall_ms_median": round(statistics.median(stored_wall), 1),
                        }
                    ),
                    flush=True,
                )
        finally:
            client.indices.delete(index=stored)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grid", help="every variant's dev figures")
    g.add_argument("--only", nargs="*", help="only variants whose name contains one of these")
    g.set_defaults(handler=grid)
    sub.add_parser("cost", help="bytes and ms: computed at rerank time vs stored").set_defaults(handler=cost)
    add_dev_argument(parser)
    args = parser.parse_args(argv)
    args.dev = dev_dir(args.dev)
    args.handler(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
