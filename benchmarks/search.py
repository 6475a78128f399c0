"""Benchmark: ingest throughput, the vector-mapping decision, and hybrid query latency on the local node.

Run from the repository root against a running node (``eqsearch es start``); every index it makes starts with
``--prefix`` (default ``eqbench``) and ``cleanup`` deletes them::

    .venv/bin/python benchmarks/search.py ingest --sources py:sympy py:mpmath   # end-to-end ingest eq/s
    .venv/bin/python benchmarks/search.py decide --n 100000                    # similarity / index type / grouping
    .venv/bin/python benchmarks/search.py latency --n 100000 --clients 8       # p50/p95/p99, size, memory
    .venv/bin/python benchmarks/search.py cleanup

Data: real equations, extracted from installed packages' docstrings by the real ingest job (KaTeX conversion
included). Large corpora replicate them with perturbed vectors (Gaussian noise, 0.15 of the vector's norm) and
copied text, which is what the issue allows; say so when quoting the figures. Vectors come from the model bundle
when one is installed, else from the hashing stand-in of the tests (feature hashing of MathML tokens, rescaled
to norms in (0.5, 1) so that inner product and cosine differ as they do for the KDD'20 model's soft-normalised
vectors). Each command prints one JSON object per measurement.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.config import EsConfig
from eqsearch.engine.es_client import connect
from eqsearch.engine.indices import IndexAdmin, bulk_index
from eqsearch.engine.mappings import IndexOptions, index_definition
from eqsearch.engine.search import HybridQuery, SearchService

ROOT = Path(__file__).resolve().parent.parent
BASE_INDEX = "{prefix}-base"  # the ingest command's deployment prefix


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def load_encoder_or_standin() -> Any:
    """The installed model bundle's encoder, else the tests' hashing encoder with soft-normalised norms."""
    try:
        from eqsearch.engine.encoder import load_encoder

        return load_encoder()
    except Exception as error:  # no bundle yet: the stand-in
        spec = importlib.util.spec_from_file_location("_hashing_encoder", ROOT / "tests/hashing_encoder.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        hashing = module.HashingEncoder()

        class SoftNormHashing:
            kind, dim, similarity = "hashing-standin", hashing.dim, "max_inner_product"

            def encode(self, mathml: list[str]) -> np.ndarray:
                unit = hashing.encode(mathml)
                sizes = np.array([len(hashing._features(m)) for m in mathml], dtype=np.float32)
                return unit * (sizes / (1.0 + sizes))[:, None] ** 0.5 * (0.5 + 0.5 * (sizes > 3))[:, None]

        emit(note="no model bundle, using the hashing stand-in", error=str(error)[:200])
        return SoftNormHashing()


def client_from_env():
    client, info = connect(EsConfig.from_env())
    return client.options(request_timeout=300), info


# -- ingest ----------------------------------------------------------------------------------------------------
def cmd_ingest(args: argparse.Namespace) -> None:
    from eqsearch.engine.latex import KatexConverter
    from eqsearch.ingest.job import IngestJob, IngestJobConfig

    client, info = client_from_env()
    encoder = load_encoder_or_standin()
    prefix = BASE_INDEX.format(prefix=args.prefix)
    config = IngestJobConfig(sources=tuple(args.sources), index_prefix=prefix, workers=0, restart=True)
    with KatexConverter() as converter:
        report = IngestJob(client, encoder, config, converter=converter).run()
    emit(
        measure="ingest",
        es=info.version,
        sources=args.sources,
        papers=report.counts["papers"],
        equations=report.counts["equations"],
        indexed=report.counts["equations_indexed"],
        with_vector=report.counts["equations_with_vector"],
        seconds=round(report.seconds, 1),
        equations_per_s=round(report.equations_per_second, 1),
        errors=dict(sorted(report.errors_by_reason.items(), key=lambda kv: -kv[1])[:8]),
    )


# -- corpus replication ----------------------------------------------------------------------------------------
def base_documents(client, prefix: str) -> list[dict[str, Any]]:
    admin = IndexAdmin(client, BASE_INDEX.format(prefix=prefix))
    index = admin.current("equations")
    if index is None:
        sys.exit("run the 'ingest' command first")
    docs = [source for _, source in admin.scan(index) if source.get("vector")]
    docs.sort(key=lambda d: d["eq_id"])
    return docs


def replicate(base: list[dict[str, Any]], n: int, seed: int = 0) -> tuple[list[dict[str, Any]], np.ndarray]:
    """``n`` documents: the base equations cycled, vectors perturbed, ids and paper ids made unique."""
    rng = np.random.default_rng(seed)
    matrix = np.array([d["vector"] for d in base], dtype=np.float32)
    picks = np.arange(n) % len(base)
    norms = np.linalg.norm(matrix[picks], axis=1, keepdims=True)
    noise = rng.normal(size=(n, matrix.shape[1])).astype(np.float32)
    noise *= 0.15 * norms / np.sqrt(matrix.shape[1])
    vectors = matrix[picks] + noise
    vectors[: len(base)] = matrix[: min(n, len(base))]  # the first copy keeps the real vectors
    docs = []
    for i, pick in enumerate(picks):
        doc = base[pick]
        copy = i // len(base)
        docs.append({"i": i, "src": doc, "copy": copy})
    return docs, vectors


def document(entry: dict[str, Any], vector: np.ndarray, *, normalise: bool) -> dict[str, Any]:
    src, copy = entry["src"], entry["copy"]
    v = vector / np.linalg.norm(vector) if normalise else vector
    paper = f"{src['paper_id']}-r{copy}"
    return {
        **{k: v2 for k, v2 in src.items() if k not in ("vector", "indexed_at", "job_id")},
        "eq_id": f"{paper}:{src['number']}",
        "paper_id": paper,
        "paper_key": paper,
        "vector": [round(float(x), 6) for x in v],
    }


def build_index(client, name: str, definition: dict[str, Any], docs, vectors, *, normalise: bool) -> dict[str, Any]:
    client.indices.delete(index=name, ignore_unavailable=True)
    settings = {**definition["settings"], "refresh_interval": "-1"}
    client.indices.create(index=name, settings=settings, mappings=definition["mappings"])
    began = time.perf_counter()
    report = bulk_index(
        client,
        (
            {"_index": name, "_id": str(e["i"]), "_source": document(e, vectors[e["i"]], normalise=normalise)}
            for e in docs
        ),
        chunk_size=1000,
    )
    load_s = time.perf_counter() - began
    client.indices.put_settings(index=name, settings={"index": {"refresh_interval": None}})
    client.indices.refresh(index=name)
    began = time.perf_counter()
    client.indices.forcemerge(index=name, max_num_segments=1, wait_for_completion=True)
    merge_s = time.perf_counter() - began
    client.indices.refresh(index=name)
    return {"docs": report.ok, "failed": report.failed, "load_s": round(load_s, 1), "merge_s": round(merge_s, 1)}


def index_size(client, name: str) -> int:
    return int(client.indices.stats(index=name, metric="store")["indices"][name]["primaries"]["store"]["size_in_bytes"])


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int, similarity: str) -> list[set[int]]:
    if similarity == "cosine":
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    out = []
    for start in range(0, len(queries), 50):
        scores = queries[start : start + 50] @ vectors.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        out.extend(set(row.tolist()) for row in top)
    return out


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "mean": round(statistics.fmean(ordered), 2)}


def cmd_decide(args: argparse.Namespace) -> None:
    client, _ = client_from_env()
    base = base_documents(client, args.prefix)
    docs, vectors = replicate(base, args.n)
    rng = np.random.default_rng(1)
    query_rows = rng.choice(len(vectors), size=args.queries, replace=False)
    queries = vectors[query_rows] + rng.normal(size=(args.queries, vectors.shape[1])).astype(np.float32) * 0.05
    variants = [
        ("max_inner_product", "int8_hnsw"),
        ("max_inner_product", "hnsw"),
        ("cosine", "int8_hnsw"),
        ("cosine", "hnsw"),
    ]
    for similarity, index_type in variants:
        name = f"{args.prefix}-decide-{similarity.replace('_', '')}-{index_type.replace('_', '')}"
        options = IndexOptions(dims=vectors.shape[1], similarity=similarity, index_type=index_type)
        built = build_index(
            client, name, index_definition("equations", options), docs, vectors, normalise=similarity == "cosine"
        )
        truth = exact_top(vectors, queries, args.k, similarity)
        recalls, latencies = [], []
        for row, query in enumerate(queries):
            q = query / np.linalg.norm(query) if similarity == "cosine" else query
            body = {"field": "vector", "query_vector": q.tolist(), "k": args.k, "num_candidates": args.num_candidates}
            began = time.perf_counter()
            hits = client.search(index=name, knn=body, size=args.k, source=False)["hits"]["hits"]
            latencies.append((time.perf_counter() - began) * 1000)
            recalls.append(len({int(h["_id"]) for h in hits} & truth[row]) / args.k)
        emit(
            measure="decide-vector",
            n=args.n,
            similarity=similarity,
            index_type=index_type,
            recall_at_10=round(statistics.fmean(recalls), 4),
            latency_ms=percentiles(latencies[5:]),
            size_mb=round(index_size(client, name) / 2**20, 1),
            **built,
        )
        if not args.keep:
            client.indices.delete(index=name)
    if args.grouping:
        decide_grouping(client, args, docs, vectors, queries)


def decide_grouping(client, args, docs, vectors, queries) -> None:
    """Collapse on paper_id over one-document-per-equation versus papers with nested equation vectors."""
    flat = f"{args.prefix}-decide-flat"
    options = IndexOptions(dims=vectors.shape[1])
    build_index(client, flat, index_definition("equations", options), docs, vectors, normalise=False)
    nested = f"{args.prefix}-decide-nested"
    client.indices.delete(index=nested, ignore_unavailable=True)
    vector_mapping = index_definition("equations", options)["mappings"]["properties"]["vector"]
    client.indices.create(
        index=nested,
        settings={"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
        mappings={
            "properties": {
                "paper_id": {"type": "keyword"},
                "title": {"type": "text"},
                "equations": {
                    "type": "nested",
                    "properties": {"eq_id": {"type": "keyword"}, "vector": vector_mapping},
                },
            }
        },
    )
    papers: dict[str, list[dict[str, Any]]] = {}
    for entry in docs:
        doc = document(entry, vectors[entry["i"]], normalise=False)
        papers.setdefault(doc["paper_id"], []).append({"eq_id": str(entry["i"]), "vector": doc["vector"]})
    began = time.perf_counter()
    bulk_index(
        client,
        ({"_index": nested, "_id": p, "_source": {"paper_id": p, "equations": eqs}} for p, eqs in papers.items()),
        chunk_size=200,
    )
    load_s = time.perf_counter() - began
    client.indices.put_settings(index=nested, settings={"index": {"refresh_interval": None}})
    client.indices.forcemerge(index=nested, max_num_segments=1, wait_for_completion=True)
    client.indices.refresh(index=nested)
    groups = 10
    for label, index, make in (
        (
            "collapse",
            flat,
            lambda q: {
                "knn": {"field": "vector", "query_vector": q, "k": groups * 5, "num_candidates": 200},
                "collapse": {"field": "paper_id"},
                "size": groups,
                "_source": False,
            },
        ),
        (
            "nested",
            nested,
            lambda q: {
                "knn": {
                    "field": "equations.vector",
                    "query_vector": q,
                    "k": groups,
                    "num_candidates": 200,
                    "inner_hits": {"size": 3, "_source": False, "fields": ["equations.eq_id"]},
                },
                "size": groups,
                "_source": False,
            },
        ),
    ):
        latencies = []
        for query in queries:
            began = time.perf_counter()
            client.search(index=index, body=make(query.tolist()))
            latencies.append((time.perf_counter() - began) * 1000)
        emit(
            measure="decide-grouping",
            n=args.n,
            design=label,
            latency_ms=percentiles(latencies[5:]),
            size_mb=round(index_size(client, index) / 2**20, 1),
            load_s=round(load_s, 1) if label == "nested" else None,
        )
    if not args.keep:
        client.indices.delete(index=f"{flat},{nested}")


# -- latency ---------------------------------------------------------------------------------------------------
class CachedConverter:
    """The real converter behind a cache filled before timing, so that timings measure search, not KaTeX."""

    def __init__(self, converter: Any, latexes: list[str]) -> None:
        self.cache = {latex: converter.convert(latex, "equation", ()) for latex in latexes}
        self.converter = converter

    def convert(self, latex: str, environment: str = "equation", macros: Any = ()) -> Any:
        return self.cache[latex]


def query_makers(formulas: list[str], keyword_queries: list[str]) -> dict[str, Any]:
    """Query kind -> a function from a query number to the query."""

    def formula(i: int) -> str:
        return formulas[i % len(formulas)]

    def keywords(i: int) -> str:
        return keyword_queries[i % len(keyword_queries)]

    return {
        "formula": lambda i: HybridQuery(latex=formula(i), size=10),
        "keyword": lambda i: HybridQuery(keywords=keywords(i), size=10),
        "hybrid": lambda i: HybridQuery(latex=formula(i), keywords=keywords(i), size=10),
        "hybrid-grouped": lambda i: HybridQuery(latex=formula(i), keywords=keywords(i), size=10, group_by_paper=True),
    }


def run_clients(service: SearchService, make: Any, queries: int, clients: int) -> tuple[list[float], float]:
    """``queries`` searches spread over ``clients`` threads; returns the latencies (ms) and the wall time."""
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(queries))

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            began = time.perf_counter()
            service.search(make(i))
            elapsed = (time.perf_counter() - began) * 1000
            with lock:
                latencies.append(elapsed)

    began = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(worker) for _ in range(clients)]:
            future.result()
    return latencies, time.perf_counter() - began


def cmd_latency(args: argparse.Namespace) -> None:
    from elasticsearch import Elasticsearch
    from eqsearch.engine.latex import KatexConverter

    client, _ = client_from_env()
    encoder = load_encoder_or_standin()
    base = base_documents(client, args.prefix)
    for n in args.n:
        prefix = f"{args.prefix}-lat{n}"
        admin = IndexAdmin(client, prefix)
        if admin.current("equations") is None or args.rebuild:
            for index in admin.versions("equations"):
                client.indices.delete(index=f"{prefix}-equations-v{index}")
            docs, vectors = replicate(base, n)
            options = IndexOptions(
                dims=vectors.shape[1], similarity=getattr(encoder, "similarity", "max_inner_product")
            )
            name = f"{prefix}-equations-v1"
            built = build_index(client, name, index_definition("equations", options), docs, vectors, normalise=False)
            client.indices.put_alias(index=name, name=f"{prefix}-equations")
            emit(measure="build", n=n, **built, size_mb=round(index_size(client, name) / 2**20, 1))
        rng = random.Random(3)
        formulas = [d["latex"] for d in rng.sample(base, min(200, len(base))) if len(d["latex"]) < 300]
        words = [w for d in base for w in (d.get("title") or "").split() + (d.get("context") or "").split()[:30]]
        words = [w.strip(".,;:()").lower() for w in words if w.isalpha() and len(w) > 4]
        keyword_queries = [" ".join(rng.sample(words, 2)) for _ in range(200)]
        with KatexConverter() as katex:
            converter = CachedConverter(katex, formulas)
            formulas = [f for f in formulas if converter.cache[f].mathml is not None]
            http = Elasticsearch(client.transport.node_pool.get().base_url, connections_per_node=args.clients * 2)
            service = SearchService(http, encoder, converter, index_prefix=prefix)
            kinds = query_makers(formulas, keyword_queries)
            for kind, make in kinds.items():
                for i in range(20):  # warm-up
                    service.search(make(i))
                latencies, wall = run_clients(service, make, args.queries, args.clients)
                emit(
                    measure="latency",
                    n=n,
                    kind=kind,
                    clients=args.clients,
                    queries=len(latencies),
                    qps=round(len(latencies) / wall, 1),
                    latency_ms=percentiles(latencies),
                )
        node = client.nodes.stats(metric="jvm,os,process")["nodes"]
        stats = next(iter(node.values()))
        emit(
            measure="memory",
            n=n,
            heap_used_mb=round(stats["jvm"]["mem"]["heap_used_in_bytes"] / 2**20),
            heap_max_mb=round(stats["jvm"]["mem"]["heap_max_in_bytes"] / 2**20),
            process_rss_mb=round(stats["process"]["mem"]["total_virtual_in_bytes"] / 2**20),
            index_size_mb=round(index_size(client, admin.current("equations") or "") / 2**20, 1),
        )
        if not args.keep:
            for name in client.indices.get(index=f"{prefix}-*"):
                client.indices.delete(index=name)


def cmd_cleanup(args: argparse.Namespace) -> None:
    client, _ = client_from_env()
    names = list(client.indices.get(index=f"{args.prefix}-*", ignore_unavailable=True))
    for name in names:
        client.indices.delete(index=name)
    emit(measure="cleanup", deleted=names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefix", default="eqbench", help="index prefix of everything this makes (eqbench)")
    commands = parser.add_subparsers(dest="command", required=True)
    ingest = commands.add_parser("ingest", help="end-to-end ingest of real sources; equations/s")
    ingest.add_argument("--sources", nargs="+", default=["py:sympy"])
    ingest.set_defaults(handler=cmd_ingest)
    decide = commands.add_parser("decide", help="recall/latency/size of the vector mapping variants")
    decide.add_argument("--n", type=int, default=100_000)
    decide.add_argument("--queries", type=int, default=200)
    decide.add_argument("--k", type=int, default=10)
    decide.add_argument("--num-candidates", type=int, default=100)
    decide.add_argument("--grouping", action="store_true", help="also collapse vs nested")
    decide.add_argument("--keep", action="store_true")
    decide.set_defaults(handler=cmd_decide)
    latency = commands.add_parser("latency", help="query latency with concurrent clients")
    latency.add_argument("--n", type=int, nargs="+", default=[100_000])
    latency.add_argument("--clients", type=int, default=8)
    latency.add_argument("--queries", type=int, default=800)
    latency.add_argument("--rebuild", action="store_true")
    latency.add_argument("--keep", action="store_true")
    latency.set_defaults(handler=cmd_latency)
    cleanup = commands.add_parser("cleanup", help="delete every index of --prefix")
    cleanup.set_defaults(handler=cmd_cleanup)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    tempfile.tempdir = tempfile.gettempdir()
    main()
