"""Benchmark: ingest throughput, the vector-mapping decision, and hybrid query latency on the local node.

Run from the repository root against a running node (``eqsearch es start``); every index it makes starts with
``--prefix`` (default ``eqbench``) and ``cleanup`` deletes them::

    .venv/bin/python benchmarks/search.py ingest --sources py:sympy py:mpmath   # end-to-end ingest eq/s
    .venv/bin/python benchmarks/search.py decide --n 100000                    # similarity / index type / grouping
    .venv/bin/python benchmarks/search.py latency --n 100000 --clients 8       # p50/p95/p99, size, memory
    .venv/bin/python benchmarks/search.py replay --n 100000 --clients 8        # the same, Elasticsearch alone
    .venv/bin/python benchmarks/search.py structure-cost --n 1000000           # the structural list's parts
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
import inspect
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.es.client import connect
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.index import (
    IndexAdmin,
    IndexOptions,
    bulk_index,
    equation_id,
    index_definition,
    recommended_layout,
)
from eqsearch.engine.index.admin import data_node_count
from eqsearch.engine.index.mappings import STRUCTURE_FIELD
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService

ROOT = Path(__file__).resolve().parent.parent
BASE_INDEX = "{prefix}-base"  # the ingest command's deployment prefix


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def load_encoder_or_standin(bundle: str | None = None, quiet: bool = False) -> Any:
    """The encoder of ``bundle`` (a model bundle directory; ``"standin"`` for the stand-in; None: the installed
    bundle, else the tests' hashing encoder with soft-normalised norms).

    Query vectors must come from the model that encoded the indexed equations (the base ingest's), so a bundle
    that was asked for and does not load is an error, never a silent switch to the stand-in.
    """
    if bundle != "standin":
        try:
            from eqsearch.engine.model.encoder import load_encoder

            return load_encoder(bundle)
        except Exception as error:
            if bundle is not None:
                raise
            if not quiet:
                emit(note="no model bundle, using the hashing stand-in", error=str(error)[:200])
    spec = importlib.util.spec_from_file_location("_hashing_encoder", ROOT / "tests/hashing_encoder.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    hashing = module.HashingEncoder()

    class SoftNormHashing:
        kind, dim, similarity, identity = "hashing-standin", hashing.dim, "max_inner_product", "hashing-standin:1"

        def encode(self, mathml: list[str]) -> np.ndarray:
            unit = hashing.encode(mathml)
            sizes = np.array([len(hashing._features(m)) for m in mathml], dtype=np.float32)
            return unit * (sizes / (1.0 + sizes))[:, None] ** 0.5 * (0.5 + 0.5 * (sizes > 3))[:, None]

    return SoftNormHashing()


def encoder_identity(encoder: Any) -> dict[str, str]:
    """Which model made the query vectors: the bundle directory and the first digits of its ONNX file's sha256."""
    manifest = getattr(encoder, "manifest", None)
    if manifest is None:
        return {"encoder": str(getattr(encoder, "kind", "?"))}
    sha = ((manifest.raw.get("files") or {}).get("model.onnx") or {}).get("sha256", "")
    return {"encoder": manifest.encoder, "bundle": str(manifest.path), "model_sha256": sha[:12]}


def bundle_spec(encoder: Any) -> str:
    """What a client process loads to get the same encoder as this one."""
    manifest = getattr(encoder, "manifest", None)
    return str(manifest.path) if manifest is not None else "standin"


def client_from_env():
    client, info = connect(EsConfig.from_env())
    return client.options(request_timeout=300), info


# -- ingest ----------------------------------------------------------------------------------------------------
def cmd_ingest(args: argparse.Namespace) -> None:
    """The real ingest job, end to end, on ``--sources``; with ``--ratio``, the encoder alone on the same equations
    and the same cores right after (the issue's ingest ratio); with ``--profile``, where the job's time goes."""
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.ingest.jobs import IngestJob, IngestJobConfig

    client, info = client_from_env()
    encoder = load_encoder_or_standin(args.bundle)
    emit(measure="setup", command=args.command, **encoder_identity(encoder), load=load_average())
    prefix = BASE_INDEX.format(prefix=args.prefix)
    config = IngestJobConfig(sources=tuple(args.sources), index_prefix=prefix, workers=args.workers, restart=True)
    node_cpu, cpu = node_cpu_ms(client), time.process_time()
    children = os.times()
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    with KatexConverter() as converter:
        report = IngestJob(client, encoder, config, converter=converter).run()
    if profiler is not None:
        profiler.disable()
    job_cpu = time.process_time() - cpu
    after = os.times()
    children_cpu = (after.children_user + after.children_system) - (children.children_user + children.children_system)
    node_cpu = node_cpu_ms(client) - node_cpu
    equations = report.counts["equations_with_vector"]
    emit(
        measure="ingest",
        es=info.version,
        sources=args.sources,
        workers=args.workers,
        papers=report.counts["papers"],
        equations=report.counts["equations"],
        indexed=report.counts["equations_indexed"],
        with_vector=equations,
        seconds=round(report.seconds, 1),
        equations_per_s=round(report.equations_per_second, 1),
        with_vector_per_s=round(equations / report.seconds, 1),
        # CPU per equation with a vector: the job's process, its child processes (extraction workers, KaTeX's Node
        # workers once they have exited), and the node
        cpu_ms_per_equation={
            "job": round(job_cpu * 1000 / max(equations, 1), 2),
            "children": round(children_cpu * 1000 / max(equations, 1), 2),
            "node": round(node_cpu / max(equations, 1), 2),
        },
        errors=dict(sorted(report.errors_by_reason.items(), key=lambda kv: -kv[1])[:8]),
        load=load_average(),
    )
    if profiler is not None:
        emit(measure="ingest-profile", **stage_seconds(profiler, report.seconds))
    if args.ratio:
        admin = IndexAdmin(client, prefix)
        sources = (source for _, source in admin.scan(admin.current("equations") or ""))
        mathml = [source["mathml"] for source in sources if source.get("vector") and source.get("mathml")]
        rates = [encoder_rate(mathml, args.bundle, args.encoder_processes) for _ in range(3)]
        rate = statistics.median(rates)
        emit(
            measure="ingest-ratio",
            equations=len(mathml),
            encoder_processes=args.encoder_processes,
            encoder_alone_per_s=round(rate, 1),
            encoder_alone_runs=[round(r, 1) for r in rates],
            # every formula the job encoded (display and inline), over the job's wall time
            ingest_per_s=round(len(mathml) / report.seconds, 1),
            ratio=round(len(mathml) / report.seconds / rate, 3),
            load=load_average(),
        )


#: The job's stages, by the functions that do them (cumulative seconds under each in the job's process).
INGEST_STAGES = {
    "extract + convert (in the job's process; with workers: waiting for them)": ("_papers",),
    "encode (featurize + ONNX)": ("_encode",),
    "structural terms": ("structure_fields",),
    "paper documents": ("paper_documents",),
    "bulk writes (waiting for Elasticsearch)": ("bulk",),
    "stale-equation pruning": ("prune",),
    "job record writes": ("write",),
}


def stage_seconds(profiler: Any, total: float) -> dict[str, Any]:
    """Cumulative seconds of each `INGEST_STAGES` stage, from a cProfile of the job (a function counted once: its
    outermost call's cumulative time, which pstats records)."""
    import pstats

    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    out: dict[str, Any] = {"total_s": round(total, 1)}
    for stage, names in INGEST_STAGES.items():
        seconds = 0.0
        for (filename, _, name), (_, _, _, cumulative, _) in stats.items():
            if name in names and filename.startswith(str(ROOT)):  # eqsearch's own functions of that name
                seconds = max(seconds, cumulative)
        out[stage] = round(seconds, 2)
    return out


def _encode_share(task: tuple[str | None, list[str]]) -> tuple[int, float]:
    bundle, mathml = task
    encoder = load_encoder_or_standin(bundle, quiet=True)
    encoder.encode(mathml[:32])  # warm up
    began = time.perf_counter()
    for start in range(0, len(mathml), 32):
        encoder.encode(mathml[start : start + 32])
    return len(mathml), time.perf_counter() - began


def encoder_rate(mathml: list[str], bundle: str | None, processes: int) -> float:
    """Equations per second of the encoder alone (MathML -> vector, batches of 32, one thread per process) over
    ``mathml`` split across ``processes`` processes, all started together."""
    import multiprocessing

    shares = [(bundle, mathml[i::processes]) for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        began = time.perf_counter()
        done = pool.map(_encode_share, shares)
        wall = time.perf_counter() - began
    # each share timed itself after its own model load; the slowest share bounds the rate
    return sum(n for n, _ in done) / max(max(seconds for _, seconds in done), 1e-9) if wall else 0.0


# -- index cost ------------------------------------------------------------------------------------------------
#: Field subsets whose indexing cost `index-cost` compares: each variant leaves these fields out of the documents.
INDEX_COST_VARIANTS = {
    "all fields": (),
    "no vector": ("vector",),
    "no structure_spans": ("structure_spans",),
    "no structure": ("structure",),
    "no structural fields": ("structure", "structure_spans"),
    "no vector, no structural fields": ("vector", "structure", "structure_spans"),
}


def cmd_index_cost(args: argparse.Namespace) -> None:
    """What the node spends indexing one equation document, and on which fields: the documents of existing
    deployments (``--base``) bulk-loaded again into fresh indices, once per field subset, node CPU per document."""
    client, _ = client_from_env()
    base = base_documents(base_client(args, client), args.prefix, args.base)[: args.limit]
    emit(measure="setup", command=args.command, documents=len(base), load=load_average())
    dims = len(base[0]["vector"])
    similarity = "cosine" if abs(float(np.linalg.norm(base[0]["vector"])) - 1.0) < 1e-3 else "max_inner_product"
    definition = index_definition("equations", IndexOptions(dims=dims, similarity=similarity))
    for repeat in range(args.repeats):
        for variant, dropped in INDEX_COST_VARIANTS.items():
            name = f"{args.prefix}-indexcost"
            client.indices.delete(index=name, ignore_unavailable=True)
            client.indices.create(index=name, settings={**definition["settings"], "refresh_interval": "-1"},
                                  mappings=definition["mappings"])  # fmt: skip
            time.sleep(1.5)  # the node's process stats are cached for a second
            node_cpu, began = node_cpu_ms(client), time.perf_counter()
            report = bulk_index(
                client,
                (
                    {"_index": name, "_id": doc["eq_id"], "_source": {k: v for k, v in doc.items() if k not in dropped}}
                    for doc in base
                ),
                chunk_size=500,
            )
            client.indices.refresh(index=name)
            wall = time.perf_counter() - began
            time.sleep(1.5)
            cpu = node_cpu_ms(client) - node_cpu
            size = index_size(client, name)
            emit(
                measure="index-cost",
                repeat=repeat,
                variant=variant,
                documents=report.ok,
                node_cpu_ms_per_document=round(cpu / max(report.ok, 1), 2),
                wall_s=round(wall, 1),
                store_kb_per_document=round(size / 1024 / max(report.ok, 1), 2),
                load=load_average(),
            )
            client.indices.delete(index=name)


# -- corpus replication ----------------------------------------------------------------------------------------
def base_client(args: argparse.Namespace, client: Any) -> Any:
    """Where the base deployments are: ``--base-url`` (another cluster, e.g. the single node the base was ingested
    into, while the benchmark's index goes to a local 3-node cluster), else the benchmark's own cluster."""
    if not getattr(args, "base_url", None):
        return client
    from elasticsearch import Elasticsearch

    return Elasticsearch(args.base_url, request_timeout=300)


def base_documents(client, prefix: str, base_prefixes: list[str] | None = None) -> list[dict[str, Any]]:
    """The equations with a vector of the base deployment (``<prefix>-base``, what ``ingest`` made), or of the
    deployments ``base_prefixes`` (``--base`` ...: e.g. the make-run corpus and a kept ARQMath collection), their
    duplicates (the same LaTeX) dropped so that the base counts distinct formulas."""
    docs: dict[str, dict[str, Any]] = {}
    for name in base_prefixes or [BASE_INDEX.format(prefix=prefix)]:
        admin = IndexAdmin(client, name)
        index = admin.current("equations")
        if index is None:
            sys.exit(f"no {name}-equations: run the 'ingest' command first (or name an existing deployment)")
        for _, source in admin.scan(index):
            if source.get("vector"):
                docs.setdefault(" ".join(source["latex"].split()), source)
    return sorted(docs.values(), key=lambda d: d["eq_id"])


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
        "eq_id": copy_eq_id(src, copy),
        "paper_id": paper,
        "paper_key": paper,
        "vector": [round(float(x), 6) for x in v],
    }


def build_index(
    client, name: str, definition: dict[str, Any], docs, vectors, *, normalise: bool, eq_ids: bool = False
) -> dict[str, Any]:
    """A fresh, force-merged index of the replicated documents.

    Document ids are the row numbers of ``vectors`` (what ``decide`` compares against brute force), or with
    ``eq_ids`` the documents' ``eq_id`` as the ingest job writes them (what the latency indices use).
    """
    client.indices.delete(index=name, ignore_unavailable=True)
    settings = {**definition["settings"], "refresh_interval": "-1"}
    client.indices.create(index=name, settings=settings, mappings=definition["mappings"])
    began = time.perf_counter()
    report = bulk_index(
        client,
        (
            {"_index": name, "_id": source["eq_id"] if eq_ids else str(e["i"]), "_source": source}
            for e in docs
            for source in (document(e, vectors[e["i"]], normalise=normalise),)
        ),
        chunk_size=1000,
    )
    load_s = time.perf_counter() - began
    client.indices.put_settings(index=name, settings={"index": {"refresh_interval": None}})
    client.indices.refresh(index=name)
    began = time.perf_counter()
    # a merge of a million documents takes longer than a request's usual timeout
    client.options(request_timeout=3600).indices.forcemerge(index=name, max_num_segments=1, wait_for_completion=True)
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
    base = base_documents(base_client(args, client), args.prefix, args.base)
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
    """LaTeX -> MathML from a table filled before timing, so that timings measure search, not KaTeX.

    KaTeX runs in its own Node workers (a few ms per formula: ``benchmarks/convert_featurize.py``); every client
    process gets the table instead of its own workers.
    """

    def __init__(self, cache: dict[str, Any]) -> None:
        self.cache = cache

    @classmethod
    def convert_all(cls, latexes: list[str]) -> CachedConverter:
        from eqsearch.engine.latex.converter import KatexConverter

        with KatexConverter() as katex:
            return cls({latex: katex.convert(latex, "equation", ()) for latex in latexes})

    def convert(self, latex: str, environment: str = "equation", macros: Any = ()) -> Any:
        return self.cache[latex]


def query_makers(formulas: list[str], keyword_queries: list[str], query_class: Any = HybridQuery) -> dict[str, Any]:
    """Query kind -> a function from a query number to the query."""

    def formula(i: int) -> str:
        return formulas[i % len(formulas)]

    def keywords(i: int) -> str:
        return keyword_queries[i % len(keyword_queries)]

    return {
        "formula": lambda i: query_class(latex=formula(i), size=10),
        "keyword": lambda i: query_class(keywords=keywords(i), size=10),
        "hybrid": lambda i: query_class(latex=formula(i), keywords=keywords(i), size=10),
        "hybrid-grouped": lambda i: query_class(latex=formula(i), keywords=keywords(i), size=10, group_by_paper=True),
    }


def run_threads(service: SearchService, make: Any, numbers: list[int], clients: int) -> tuple[list[float], float]:
    """The queries ``numbers`` spread over ``clients`` threads of this process; latencies (ms) and wall time (s).

    Kept to compare with the first figures: the threads share one GIL, so client-side work (encoder, JSON,
    fusion) serialises and is charged to the latency of every thread waiting for it.
    """
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(numbers)

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


def client_process(conn: Any, barrier: Any, setup: dict[str, Any]) -> None:
    """One benchmark client: its own encoder, HTTP connection and service; runs the query numbers it is sent."""
    from elasticsearch import Elasticsearch

    encoder = load_encoder_or_standin(setup["bundle"], quiet=True)
    client = Elasticsearch(setup["url"], request_timeout=300)
    converter = CachedConverter(setup["conversions"])
    service_class, query_class = service_classes(argparse.Namespace(service_file=setup["service_file"]))
    service = service_class(client, encoder, converter, index_prefix=setup["prefix"], **setup["service_options"])
    makers = query_makers(setup["formulas"], setup["keyword_queries"], query_class)
    serve_tasks(conn, barrier, lambda kind, i: service.search(makers[kind](i)))


def serve_tasks(conn: Any, barrier: Any, run: Any) -> None:
    """A client process's loop: for each ``(kind, warmup, numbers)`` task, ``run(kind, i)`` the warm-up numbers,
    wait for every client, run the measured ones, and answer ``(latencies ms, began, ended, CPU s)``."""
    while (task := conn.recv()) is not None:
        kind, warmup, numbers = task
        for i in warmup:
            run(kind, i)
        barrier.wait()
        began = time.perf_counter()
        cpu = time.process_time()
        latencies = []
        for i in numbers:
            start = time.perf_counter()
            run(kind, i)
            latencies.append((time.perf_counter() - start) * 1000)
        conn.send((latencies, began, time.perf_counter(), time.process_time() - cpu))


class ClientProcesses:
    """``count`` closed-loop client processes (spawned, so no state is shared with this one) on one index.

    ``target`` is what each process runs: `client_process` (a `SearchService`) or `replay_process` (recorded HTTP
    requests); both take the same ``(kind, warmup, numbers)`` tasks and answer the same way.
    """

    def __init__(self, count: int, setup: dict[str, Any], target: Any = None) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.barrier = context.Barrier(count)
        self.pipes = []
        self.processes = []
        for _ in range(count):
            parent, child = context.Pipe()
            process = context.Process(target=target or client_process, args=(child, self.barrier, setup), daemon=True)
            process.start()
            self.pipes.append(parent)
            self.processes.append(process)

    def run(self, kind: str, numbers: list[int], warmup: list[int]) -> tuple[list[float], float, float]:
        """Every client warms up on ``warmup``, then they run ``numbers`` (split evenly) at the same time.

        Returns:
            The latencies (ms), the wall time from the first start to the last finish (s), and the clients'
            CPU time (s) in all.
        """
        count = len(self.pipes)
        for rank, pipe in enumerate(self.pipes):
            pipe.send((kind, warmup[rank::count], numbers[rank::count]))
        results = [pipe.recv() for pipe in self.pipes]
        latencies = [ms for result in results for ms in result[0]]
        wall = max(r[2] for r in results) - min(r[1] for r in results)
        return latencies, wall, sum(r[3] for r in results)

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.send(None)
        for process in self.processes:
            process.join(timeout=30)


def node_memory(client) -> dict[str, Any]:
    """The node's JVM heap and, when the node runs on this machine and /proc is readable, its resident memory."""
    stats = next(iter(client.nodes.stats(metric="jvm,process")["nodes"].values()))
    info = next(iter(client.nodes.info(metric="process")["nodes"].values()))
    rss = None
    try:
        status = Path(f"/proc/{info['process']['id']}/status").read_text()
        rss = round(int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))) / 1024)
    except (OSError, StopIteration, KeyError, ValueError):
        pass  # a remote node: no resident size
    return {
        "heap_used_mb": round(stats["jvm"]["mem"]["heap_used_in_bytes"] / 2**20),
        "heap_max_mb": round(stats["jvm"]["mem"]["heap_max_in_bytes"] / 2**20),
        "process_virtual_mb": round(stats["process"]["mem"]["total_virtual_in_bytes"] / 2**20),
        "process_rss_mb": rss,
    }


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine_cpu_s() -> float | None:
    """CPU seconds this machine's cores have been busy so far (all processes), from /proc/stat; None elsewhere."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def ensure_latency_index(client, base: list[dict[str, Any]], encoder: Any, n: int, prefix: str, rebuild: bool) -> None:
    """The replicated index of ``n`` equations behind ``<prefix>-equations``, built unless it exists."""
    admin = IndexAdmin(client, prefix)
    if admin.current("equations") is not None and not rebuild:
        return
    for version in admin.versions("equations"):
        client.indices.delete(index=f"{prefix}-equations-v{version}")
    docs, vectors = replicate(base, n)
    # the layout eqsearch gives this cluster (one shard and no replica on one node; on 3 nodes 3 shards, 1 replica)
    shards, replicas = recommended_layout(data_node_count(client) or 1)
    similarity = getattr(encoder, "similarity", "max_inner_product")
    options = IndexOptions(dims=vectors.shape[1], similarity=similarity, shards=shards, replicas=replicas)
    name = f"{prefix}-equations-v1"
    definition = index_definition("equations", options)
    built = build_index(client, name, definition, docs, vectors, normalise=False, eq_ids=True)
    client.indices.put_alias(index=name, name=f"{prefix}-equations")
    emit(
        measure="build",
        n=n,
        shards=shards,
        replicas=replicas,
        **built,
        size_mb=round(index_size(client, name) / 2**20, 1),
    )


def cmd_latency(args: argparse.Namespace) -> None:
    client, _ = client_from_env()
    encoder = load_encoder_or_standin(args.bundle)
    emit(measure="setup", command=args.command, **encoder_identity(encoder))
    base = base_documents(base_client(args, client), args.prefix, args.base)
    url = client.transport.node_pool.get().base_url
    warmup_count = 4 * args.clients
    formulas, keyword_queries, converter = usable_queries(base, args.queries + warmup_count)
    # measured queries are distinct, and distinct from the warm-up ones: no cache (query vectors, Elasticsearch's
    # request cache, which size>0 searches skip anyway) sees a query twice
    warmup = list(range(len(formulas) - warmup_count, len(formulas)))
    numbers = list(range(len(formulas) - warmup_count))
    kinds = args.kinds or list(query_makers(formulas, keyword_queries))
    for n in args.n:
        prefix = f"{args.prefix}-lat{n}"
        ensure_latency_index(client, base, encoder, n, prefix, args.rebuild)
        index = IndexAdmin(client, prefix).current("equations") or ""
        options = service_options(args, service_classes(args)[0])
        for clients in args.clients_list or [args.clients]:
            setup = {
                "url": url,
                "prefix": prefix,
                "conversions": converter.cache,
                "formulas": formulas,
                "keyword_queries": keyword_queries,
                "service_options": options,
                "service_file": args.service_file,
                "bundle": bundle_spec(encoder),
            }
            pool = ClientProcesses(clients, setup) if args.client_mode == "processes" else None
            threaded = None
            if pool is None:
                from elasticsearch import Elasticsearch

                http = Elasticsearch(url, connections_per_node=clients * 2, request_timeout=300)
                service_class, query_class = service_classes(args)
                threaded = service_class(http, encoder, converter, index_prefix=prefix, **options)
            try:
                for kind in kinds:
                    node_cpu, busy = node_cpu_ms(client), machine_cpu_s()
                    if pool is not None:
                        latencies, wall, client_cpu = pool.run(kind, numbers, warmup)
                    else:
                        make = query_makers(formulas, keyword_queries, query_class)[kind]
                        for i in warmup:
                            threaded.search(make(i))  # type: ignore[union-attr]
                        cpu = time.process_time()
                        latencies, wall = run_threads(threaded, make, numbers, clients)  # type: ignore[arg-type]
                        client_cpu = time.process_time() - cpu
                    node_cpu = node_cpu_ms(client) - node_cpu
                    busy = None if busy is None else (machine_cpu_s() or 0.0) - busy
                    # what else kept the cores busy meanwhile (other users of the machine): busy time not spent by
                    # the clients or the node, in cores; the load average would count this benchmark's own clients
                    others = None if busy is None else round((busy - client_cpu - node_cpu / 1000) / wall, 2)
                    emit(
                        measure="latency",
                        n=n,
                        kind=kind,
                        clients=clients,
                        client_mode=args.client_mode,
                        queries=len(latencies),
                        qps=round(len(latencies) / wall, 1),
                        latency_ms=percentiles(latencies),
                        # CPU per query: the clients' (encoder, HTTP, JSON, fusion) and the node's (all its threads,
                        # including anything else the shared node did meanwhile)
                        client_cpu_ms=round(client_cpu * 1000 / len(latencies), 2),
                        node_cpu_ms=round(node_cpu / len(latencies), 2),
                        other_cores_busy=others,
                        load=load_average(),
                        **({"service_options": printable(options)} if options else {}),
                    )
            finally:
                if pool is not None:
                    pool.close()
        emit(measure="memory", n=n, index_size_mb=round(index_size(client, index) / 2**20, 1), **node_memory(client))
        if not args.keep:
            for name in client.indices.get(index=f"{prefix}-*"):
                client.indices.delete(index=name)


# -- web tier --------------------------------------------------------------------------------------------------
def inprocess_client(conn: Any, barrier: Any, setup: dict[str, Any]) -> None:
    """A client process calling a `SearchService` built as the web app builds it: real KaTeX, default options."""
    from elasticsearch import Elasticsearch
    from eqsearch.engine.latex.converter import KatexConverter

    encoder = load_encoder_or_standin(setup["bundle"], quiet=True)
    client = Elasticsearch(setup["url"], request_timeout=300)
    with KatexConverter() as converter:
        service = SearchService(client, encoder, converter, index_prefix=setup["prefix"])
        makers = query_makers(setup["formulas"], setup["keyword_queries"])
        serve_tasks(conn, barrier, lambda kind, i: service.search(makers[kind](i)))


def web_client(conn: Any, barrier: Any, setup: dict[str, Any]) -> None:
    """A client process sending the same searches to the web app's JSON API over one keep-alive connection."""
    import http.client
    import urllib.parse

    formulas, keyword_queries = setup["formulas"], setup["keyword_queries"]
    connection = http.client.HTTPConnection("127.0.0.1", setup["port"], timeout=300)

    def run(kind: str, i: int) -> None:
        params = {"latex": formulas[i % len(formulas)], "size": "10"}
        if kind == "hybrid":
            params["q"] = keyword_queries[i % len(keyword_queries)]
        connection.request("GET", "/api/search?" + urllib.parse.urlencode(params))
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:300]!r}")

    serve_tasks(conn, barrier, run)


def cmd_web(args: argparse.Namespace) -> None:
    """Queries/s of the web tier (gunicorn, `eqsearch serve --production`, the JSON API over HTTP) beside the search
    service called in-process the way the web app calls it, on the same kept latency index and the same queries;
    each side with ``--clients`` closed-loop client processes, one after the other."""
    import subprocess
    import urllib.request

    client, encoder, base, prefix, _ = kept_index(args)
    url = client.transport.node_pool.get().base_url
    warmup_count = 4 * args.clients
    formulas, keyword_queries, _ = usable_queries(base, args.queries + warmup_count)
    warmup = list(range(len(formulas) - warmup_count, len(formulas)))
    numbers = list(range(len(formulas) - warmup_count))
    setup = {"url": url, "prefix": prefix, "formulas": formulas, "keyword_queries": keyword_queries,
             "bundle": bundle_spec(encoder), "port": args.port}  # fmt: skip
    results: dict[str, dict[str, float]] = {}
    for side in ("in-process", "web"):
        server = None
        if side == "web":
            env = {**os.environ, "EQSEARCH_ES_URL": url, "EQSEARCH_INDEX_PREFIX": prefix}
            command = [sys.executable, "-m", "eqsearch", "serve", "--production", "--port", str(args.port)]
            if args.workers:
                command += ["--workers", str(args.workers)]
            server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 120
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{args.port}/api/openapi.json", timeout=5).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        server.kill()
                        sys.exit("the web app did not start")
                    time.sleep(0.5)
        pool = ClientProcesses(args.clients, setup, target=web_client if side == "web" else inprocess_client)
        try:
            for kind in args.kinds:
                latencies, wall, _ = pool.run(kind, numbers, warmup)
                qps = len(latencies) / wall
                results.setdefault(kind, {})[side] = qps
                emit(measure="web", side=side, kind=kind, clients=args.clients, queries=len(latencies),
                     qps=round(qps, 1), latency_ms=percentiles(latencies), load=load_average())  # fmt: skip
        finally:
            pool.close()
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
    for kind, sides in results.items():
        emit(measure="web-ratio", kind=kind, ratio=round(sides["web"] / sides["in-process"], 3))


# -- replay ----------------------------------------------------------------------------------------------------
def recording_node_class() -> tuple[type, list[tuple[str, str, bytes | None, dict[str, str]]]]:
    """An elastic_transport HTTP node class (for ``Elasticsearch(node_class=...)``) and the list it records
    ``(method, target, body, headers)`` into."""
    from elastic_transport import Urllib3HttpNode

    sent: list[tuple[str, str, bytes | None, dict[str, str]]] = []

    class RecordingNode(Urllib3HttpNode):
        def perform_request(self, method: str, target: str, body: bytes | None = None, headers: Any = None,
                            **kwargs: Any) -> Any:  # fmt: skip
            sent.append((method, target, body, dict(headers or {})))
            return super().perform_request(method, target, body=body, headers=headers, **kwargs)

    return RecordingNode, sent


def replay_process(conn: Any, barrier: Any, setup: dict[str, Any]) -> None:
    """One replay client: sends each query's recorded requests, one after the other, over one keep-alive
    `http.client` connection; nothing else runs in it (no encoder, no JSON, no fusion)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(setup["url"])
    http_conn = http.client.HTTPConnection(parts.hostname, parts.port or 9200, timeout=300)
    recorded = setup["requests"]

    def send(_: str, number: int) -> None:
        for method, target, body, headers in recorded[number]:
            http_conn.request(method, target, body=body, headers=headers)
            response = http_conn.getresponse()
            payload = response.read()
            if response.status != 200:
                raise RuntimeError(f"{method} {target} answered {response.status}: {payload[:300]!r}")

    serve_tasks(conn, barrier, send)


def cmd_replay(args: argparse.Namespace) -> None:
    """Elasticsearch's share of the query latency: the requests `SearchService` sent for each query, recorded
    once (sequentially), then replayed by closed-loop client processes that do nothing else.

    The difference with ``latency`` on the same queries is what the Python side (encoder, client library, JSON,
    fusion) adds, on top of the CPU it takes from the node on a shared machine. Each query has run once before it
    is replayed (its page fetch depends on the fused ranking), so Elasticsearch has seen its pages already.
    """
    from elasticsearch import Elasticsearch

    client, encoder, base, prefix, _ = kept_index(args)
    warmup_count = 4 * args.clients
    formulas, keyword_queries, converter = usable_queries(base, args.queries + warmup_count)
    url = client.transport.node_pool.get().base_url
    node_class, sent = recording_node_class()
    recording = Elasticsearch(url, node_class=node_class, request_timeout=300)
    service_class, query_class = service_classes(args)
    options = service_options(args, service_class)
    service = service_class(recording, encoder, converter, index_prefix=prefix, **options)
    service.search(query_class(keywords="warm up"))  # reads the index's _meta: not part of any query
    makers = query_makers(formulas, keyword_queries, query_class)
    warmup = list(range(len(formulas) - warmup_count, len(formulas)))
    numbers = list(range(len(formulas) - warmup_count))
    for kind in args.kinds:
        requests = []
        for i in range(len(formulas)):
            sent.clear()
            service.search(makers[kind](i))
            searches = [entry for entry in sent if entry[1].split("?")[0].endswith(("_search", "_msearch"))]
            requests.append(searches[:1] if args.ranking_only else searches)
        pool = ClientProcesses(args.clients, {"url": url, "requests": requests}, target=replay_process)
        try:
            node_cpu, busy = node_cpu_ms(client), machine_cpu_s()
            latencies, wall, client_cpu = pool.run(kind, numbers, warmup)
            node_cpu = node_cpu_ms(client) - node_cpu
            busy = None if busy is None else (machine_cpu_s() or 0.0) - busy
        finally:
            pool.close()
        emit(
            measure="replay",
            n=args.n,
            kind=kind,
            clients=args.clients,
            queries=len(latencies),
            requests_per_query=round(statistics.fmean(len(r) for r in requests), 2),
            ranking_only=args.ranking_only,
            qps=round(len(latencies) / wall, 1),
            latency_ms=percentiles(latencies),
            client_cpu_ms=round(client_cpu * 1000 / len(latencies), 2),
            node_cpu_ms=round(node_cpu / len(latencies), 2),
            other_cores_busy=None if busy is None else round((busy - client_cpu - node_cpu / 1000) / wall, 2),
            load=load_average(),
            **({"service_options": printable(options)} if options else {}),
        )


# -- profile ---------------------------------------------------------------------------------------------------
def node_cpu_ms(client, max_wait_s: float = 2.0) -> int:
    """CPU time the Elasticsearch nodes' processes have used so far (all their threads; every node of a cluster), in
    ms, as of now.

    A node answers its process statistics from a cache refreshed at most once a second
    (``monitor.process.refresh_interval``), so a plain read can be up to a second old: a stage of a few seconds
    would then be charged for work done before it began, or not for its last second. This waits until every node's
    figure is stamped after the call (up to ``max_wait_s``, for nodes whose clocks differ from this one's); the
    wait is idle time, which `measure_stage` discounts.
    """
    asked = time.time() * 1000
    deadline = time.monotonic() + max_wait_s
    while True:
        nodes = client.nodes.stats(metric="process")["nodes"]
        fresh = all(int(node["process"].get("timestamp", 0)) >= asked for node in nodes.values())
        if fresh or time.monotonic() >= deadline:
            return sum(int(node["process"]["cpu"]["total_in_millis"]) for node in nodes.values())
        time.sleep(0.05)


def shard_search_ms(client, index: str) -> dict[str, int]:
    """The index's cumulative query-phase and fetch-phase times and counts (per shard request)."""
    stats = client.indices.stats(index=index, metric="search")["indices"]
    search = next(iter(stats.values()))["primaries"]["search"]
    return {
        key: int(search[key]) for key in ("query_total", "query_time_in_millis", "fetch_total", "fetch_time_in_millis")
    }


def measure_stage(client, index: str, run: Any, count: int, idle_ms_per_s: float) -> dict[str, float]:
    """Run ``run(i)`` for i < count sequentially; per call: wall, this process's CPU, the node's CPU, shard times.

    The node's CPU is net of its idle rate (``idle_ms_per_s``, measured before), so that background work and
    other users of the shared node are not charged to the query (as far as they are steady).
    """
    cpu0, shards0, py0, wall0 = (
        node_cpu_ms(client),
        shard_search_ms(client, index),
        time.process_time(),
        time.perf_counter(),
    )
    latencies = []
    for i in range(count):
        began = time.perf_counter()
        run(i)
        latencies.append((time.perf_counter() - began) * 1000)
    wall = time.perf_counter() - wall0
    py = time.process_time() - py0
    cpu1, shards1 = node_cpu_ms(client), shard_search_ms(client, index)
    window = time.perf_counter() - wall0  # the stage and the wait for a fresh node figure after it
    delta = {key: shards1[key] - shards0[key] for key in shards0}
    return {
        "wall_ms": round(wall * 1000 / count, 2),
        "p50_ms": percentiles(latencies)["p50"],
        "python_cpu_ms": round(py * 1000 / count, 2),
        "es_cpu_ms": round((cpu1 - cpu0 - idle_ms_per_s * window) / count, 2),
        "shard_query_ms": round(delta["query_time_in_millis"] / count, 2),
        "shard_fetch_ms": round(delta["fetch_time_in_millis"] / count, 2),
        "shard_queries": round(delta["query_total"] / count, 2),
        "shard_fetches": round(delta["fetch_total"] / count, 2),
    }


def idle_rate(client, seconds: float = 3.0) -> float:
    """The node's CPU ms per second while this benchmark sends nothing."""
    before = node_cpu_ms(client)
    time.sleep(seconds)
    return (node_cpu_ms(client) - before) / seconds


def kept_index(args: argparse.Namespace) -> tuple[Any, Any, list[dict[str, Any]], str, str]:
    """The common start of the commands that work on a kept ``latency`` index: a client, the encoder (announced),
    the base documents, the index prefix and the concrete index; exits when the index was not kept."""
    client, _ = client_from_env()
    encoder = load_encoder_or_standin(args.bundle)
    emit(measure="setup", command=args.command, **encoder_identity(encoder))
    base = base_documents(base_client(args, client), args.prefix, args.base)
    prefix = f"{args.prefix}-lat{args.n}"
    index = IndexAdmin(client, prefix).current("equations")
    if index is None:
        sys.exit(f"no index for n={args.n}: run 'latency --n {args.n} --keep' first")
    return client, encoder, base, prefix, index


def usable_queries(base: list[dict[str, Any]], count: int) -> tuple[list[str], list[str], CachedConverter]:
    """`pick_queries`, converted once, keeping those whose formula converts: formulas, keywords, the converter."""
    formulas, keyword_queries = pick_queries(base, count)
    converter = CachedConverter.convert_all(formulas)
    usable = [i for i, f in enumerate(formulas) if converter.cache[f].mathml is not None]
    return [formulas[i] for i in usable], [keyword_queries[i] for i in usable], converter


def pick_queries(base: list[dict[str, Any]], count: int, seed: int = 3) -> tuple[list[str], list[str]]:
    """Up to ``count`` distinct formulas (LaTeX under 300 characters) and ``count`` keyword pairs, drawn from the
    base equations' text with its word frequencies (common words come up more often, as in real queries)."""
    rng = random.Random(seed)
    latexes = sorted({d["latex"] for d in base if len(d["latex"]) < 300})
    formulas = rng.sample(latexes, min(count, len(latexes)))
    words = [w for d in base for w in (d.get("title") or "").split() + (d.get("context") or "").split()[:30]]
    words = [w.strip(".,;:()").lower() for w in words if w.isalpha() and len(w) > 4]
    return formulas, [" ".join(rng.sample(words, 2)) for _ in range(count)]


class RecordingClient:
    """Passes every call to the real client and keeps the keyword arguments of its ``search`` and ``msearch`` calls,
    so that the profile replays exactly the requests a `SearchService` (of any version) sends."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def search(self, **kwargs: Any) -> Any:
        self.calls.append(("search", kwargs))
        return self.client.search(**kwargs)

    def msearch(self, **kwargs: Any) -> Any:
        self.calls.append(("msearch", kwargs))
        return self.client.msearch(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def cmd_profile(args: argparse.Namespace) -> None:
    """Where one query's CPU goes: each request kind alone, sequentially, on a kept ``latency`` index."""
    import cProfile
    import pstats

    client, encoder, base, prefix, index = kept_index(args)
    formulas, keyword_queries, converter = usable_queries(base, args.queries)
    count = len(formulas)
    mathml = [converter.cache[f].mathml for f in formulas]
    service_class, query_class = service_classes(args)
    options = service_options(args, service_class)
    service = service_class(client, encoder, converter, index_prefix=prefix, **options)
    # one hybrid search per query through a recording client: its ranking and page requests, replayed below
    recorder = RecordingClient(client)
    recorded = service_class(recorder, encoder, converter, index_prefix=prefix, **options)
    knn, text, both, fetch = [], [], [], []
    for latex, keywords in zip(formulas, keyword_queries, strict=True):
        recorder.calls.clear()
        recorded.search(query_class(latex=latex, keywords=keywords))
        (_, ranking), (_, page) = [c for c in recorder.calls if c[0] in ("msearch", "search")][:2]
        searches = ranking["searches"]
        knn.append({**{k: v for k, v in ranking.items() if k != "searches"}, "searches": searches[0:2]})
        text.append({**{k: v for k, v in ranking.items() if k != "searches"}, "searches": searches[2:4]})
        both.append(ranking)
        fetch.append(page)
    stages = {
        "encode (python only)": lambda i: service.formulas.encode(mathml[i]),
        "knn ranking": lambda i: client.msearch(**knn[i]),
        "bm25 ranking": lambda i: client.msearch(**text[i]),
        "msearch knn+bm25": lambda i: client.msearch(**both[i]),
        "page fetch + highlight": lambda i: client.search(**fetch[i]),
        "formula (search)": lambda i: service.search(query_class(latex=formulas[i])),
        "keyword (search)": lambda i: service.search(query_class(keywords=keyword_queries[i])),
        "hybrid (search)": lambda i: service.search(query_class(latex=formulas[i], keywords=keyword_queries[i])),
    }
    if "formula_cache_size" in options:
        # the same hybrid queries again, their formulas already converted and encoded (e.g. the next page)
        cached = service_class(
            client, encoder, converter, index_prefix=prefix, **{**options, "formula_cache_size": count}
        )
        for latex in formulas:  # as a first page leaves them for the next: formula, vector, term statistics
            cached.search(query_class(latex=latex))
        stages["hybrid (search, formula cached)"] = lambda i: cached.search(
            query_class(latex=formulas[i], keywords=keyword_queries[i])
        )
    for repeat in range(args.repeats):
        idle = idle_rate(client)
        for name, run in stages.items():
            if args.stages and not any(name.startswith(wanted) for wanted in args.stages):
                continue
            for i in range(min(20, count)):
                run(i)  # warm-up
            emit(measure="profile", n=args.n, stage=name, repeat=repeat, queries=count, load=load_average(),
                 idle_node_cpu_ms_per_s=round(idle, 1), **measure_stage(client, index, run, count, idle))  # fmt: skip
    if args.cprofile:
        # process_time as the timer: the profile shows CPU spent in this process, not the wait for Elasticsearch
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for i in range(count):
            service.search(query_class(latex=formulas[i], keywords=keyword_queries[i]))
        profiler.disable()
        totals: dict[str, float] = {}
        for (filename, _, function), entry in pstats.Stats(profiler).stats.items():  # type: ignore[attr-defined]
            name = f"{Path(filename).name}:{function}"
            totals[name] = totals.get(name, 0.0) + entry[3]
        top = sorted(totals.items(), key=lambda kv: -kv[1])[: args.cprofile]
        emit(measure="profile-python", n=args.n, queries=count,
             cumulative_cpu_ms_per_query={name: round(t * 1000 / count, 3) for name, t in top})  # fmt: skip
    if args.es_profile:
        es_profile(client, knn, text, fetch, min(args.es_profile, count))


def es_profile(client, knn: list[Any], text: list[Any], fetch: list[Any], count: int) -> None:
    """Elasticsearch's own profile of each recorded request kind, averaged over ``count`` queries: ms per part."""

    def walk(node: dict[str, Any], into: dict[str, float], prefix: str) -> None:
        name = f"{prefix}{node.get('type') or node.get('name')}"
        into[name] = into.get(name, 0.0) + node.get("time_in_nanos", 0) / 1e6
        for part, nanos in (node.get("breakdown") or {}).items():
            if prefix.startswith("fetch") and not part.endswith("_count") and nanos:
                into[f"{name} [{part}]"] = into.get(f"{name} [{part}]", 0.0) + nanos / 1e6
        for child in node.get("children") or ():
            walk(child, into, name + " > ")

    def add(totals: dict[str, float], key: str, ms: float) -> None:
        totals[key] = totals.get(key, 0.0) + ms

    for label, requests in (("knn ranking", knn), ("bm25 ranking", text), ("page fetch + highlight", fetch)):
        totals: dict[str, float] = {}
        for i in range(count):
            kwargs = requests[i]
            if "searches" in kwargs:
                header, body = kwargs["searches"]
                response = client.search(index=header["index"], body={**body, "profile": True})
            else:
                response = client.search(index=kwargs["index"], body={**kwargs["body"], "profile": True})
            shard = response["profile"]["shards"][0]
            for search in shard.get("searches") or ():
                for query in search.get("query") or ():
                    walk(query, totals, "query: ")
                add(totals, "collector", sum(c.get("time_in_nanos", 0) for c in search.get("collector") or ()) / 1e6)
                add(totals, "rewrite", search.get("rewrite_time", 0) / 1e6)
            for section in (shard.get("dfs") or {}).get("knn") or ():
                for query in section.get("query") or ():
                    walk(query, totals, "knn: ")
                add(totals, "knn rewrite (the graph search)", section.get("rewrite_time", 0) / 1e6)
            if shard.get("fetch"):
                walk(shard["fetch"], totals, "fetch: ")
            add(totals, "took (whole request)", response["took"])
        top = sorted(totals.items(), key=lambda kv: -kv[1])[:16]
        emit(measure="es-profile", request=label, queries=count, ms_per_query={k: round(v / count, 3) for k, v in top})


def structure_parts(searches: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """One recorded ranking ``_msearch`` (header and body lines, the structural search first) as the variants that
    `cmd_structure_cost` replays: without the structural search, its first stage alone (collecting the page's depth,
    or the rescore window through a rescore that changes no score), with each of its rescores alone, and whole; a
    variant the query cannot make (no structural search, a single rescore) is left out."""
    if len(searches) < 2 or "rescore" not in searches[1]:
        return {}
    header, body, others = searches[0], searches[1], searches[2:]
    rescores = body["rescore"] if isinstance(body["rescore"], list) else [body["rescore"]]
    first = {key: value for key, value in body.items() if key != "rescore"}
    window = max(rescore["window_size"] for rescore in rescores)
    unchanged = {"window_size": window, "query": {"rescore_query": {"match_all": {}}, "rescore_query_weight": 0.0}}

    def with_structure(rescore: Any = None) -> list[dict[str, Any]]:
        return [header, first if rescore is None else {**first, "rescore": rescore}, *others]

    parts = {
        "lists without the structural search": others,
        "+ structural first stage, no rescore": with_structure(),
        "+ first stage collecting the rescore window": with_structure(unchanged),
        "+ whole structural search (as sent)": searches,
    }
    if len(rescores) == 2:
        parts["+ first stage, the BM25 rescore"] = with_structure(rescores[0])
        parts["+ first stage, the sub-expression rescore"] = with_structure(rescores[1])
    return parts


def cmd_structure_cost(args: argparse.Namespace) -> None:
    """Where the structural list's node CPU goes: each query's ranking ``_msearch`` (as the service sends it for a
    hybrid query) replayed sequentially without the structural search, with its first stage only, with each of its
    two rescores alone, and whole; then the term-statistics request the first stage needs, with an empty cache.
    Rounds alternate the variants, so that load drifts reach them alike; medians of the rounds."""
    from eqsearch.engine.model.structure import formula_structure
    from eqsearch.engine.search.termstats import TermStatistics

    client, encoder, base, prefix, index = kept_index(args)
    formulas, keyword_queries, converter = usable_queries(base, args.queries)
    service_class, query_class = service_classes(args)
    options = service_options(args, service_class)
    recorder = RecordingClient(client)
    service = service_class(recorder, encoder, converter, index_prefix=prefix, **options)
    variants: dict[str, list[dict[str, Any]]] = {}
    for latex, keywords in zip(formulas, keyword_queries, strict=True):
        recorder.calls.clear()
        service.search(query_class(latex=latex, keywords=keywords))
        ranking = next(kwargs for name, kwargs in recorder.calls if name == "msearch")
        for name, searches in structure_parts(ranking["searches"]).items():
            variants.setdefault(name, []).append({**ranking, "searches": searches})
    structures = [formula_structure(converter.cache[latex].mathml, latex) for latex in formulas]
    measured: dict[str, list[dict[str, float]]] = {}
    for _ in range(args.repeats):
        idle = idle_rate(client)
        for name, requests in variants.items():
            for kwargs in requests[:20]:
                client.msearch(**kwargs)  # warm-up
            measured.setdefault(name, []).append(
                measure_stage(client, index, lambda i, r=requests: client.msearch(**r[i]), len(requests), idle)
            )
        frequencies = TermStatistics(client.termvectors, STRUCTURE_FIELD).frequencies  # an empty cache each round

        def read(i: int, frequencies: Any = frequencies) -> None:
            frequencies(index, structures[i].tokens)

        measured.setdefault("term statistics (first stage)", []).append(
            measure_stage(client, index, read, len(structures), idle)
        )
    for name, rounds in measured.items():
        emit(
            measure="structure-cost",
            n=args.n,
            variant=name,
            queries=len(variants.get(name, structures)),
            rounds=len(rounds),
            node_cpu_ms=round(statistics.median(r["es_cpu_ms"] for r in rounds), 2),
            node_cpu_ms_rounds=[r["es_cpu_ms"] for r in rounds],
            python_cpu_ms=round(statistics.median(r["python_cpu_ms"] for r in rounds), 2),
            p50_ms=round(statistics.median(r["p50_ms"] for r in rounds), 2),
            load=load_average(),
        )


def service_classes(args: argparse.Namespace) -> tuple[Any, Any]:
    """`SearchService` and `HybridQuery`, from engine/search/service.py or from ``--service-file`` (another version
    of it, e.g. ``git show REV:engine/search/service.py > old.py``, to compare two versions back to back on the same
    index)."""
    if not getattr(args, "service_file", None):
        return SearchService, HybridQuery
    spec = importlib.util.spec_from_file_location("_service_under_test", args.service_file)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["_service_under_test"] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.SearchService, module.HybridQuery


def service_options(args: argparse.Namespace, service_class: Any = SearchService) -> dict[str, Any]:
    """`SearchService` settings given on the command line (the service's defaults otherwise)."""
    names = ("candidate_depth", "num_candidates_factor")
    options = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    if getattr(args, "ranker", None) and "ranking" in inspect.signature(service_class).parameters:
        from eqsearch.engine.search.rankers import get_ranker

        options["ranking"] = get_ranker(args.ranker)
    if "formula_cache_size" in inspect.signature(service_class).parameters:
        # off unless asked for: every kind reuses the same formulas in the same client, so a cache would serve the
        # hybrid queries the vectors the formula queries left (cached figures are measured apart, see profile)
        options["formula_cache_size"] = getattr(args, "formula_cache_size", 0)
    return options


def printable(options: dict[str, Any]) -> dict[str, Any]:
    """Service options as JSON can show them (a ranking by its name)."""
    return {key: getattr(value, "name", value) for key, value in options.items()}


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--service-file", help="engine/search/service.py of another version, to compare (see profile)")
    parser.add_argument("--candidate-depth", type=int, help="SearchService candidate_depth (its default)")
    parser.add_argument("--num-candidates-factor", type=int, help="SearchService num_candidates_factor")
    parser.add_argument("--formula-cache-size", type=int, default=0, help="SearchService formula_cache_size (0)")
    parser.add_argument("--ranker", help="the formula ranking (eqsearch evaluate formulas --list-rankers; default: "
                        "production's)")  # fmt: skip


# -- recall ----------------------------------------------------------------------------------------------------
def cmd_recall(args: argparse.Namespace) -> None:
    """recall@10 of formula search against exact (brute-force) inner product, per candidate depth and
    ``num_candidates`` factor, on a kept ``latency`` index; and how far hybrid page 1 moves from the first setting."""
    client, encoder, base, prefix, _ = kept_index(args)
    docs, vectors = replicate(base, args.n)  # the vectors the latency index holds (same seed)
    row_of = {document_eq_id(entry): entry["i"] for entry in docs}
    formulas, keyword_queries, converter = usable_queries(base, args.queries)
    reference = SearchService(client, encoder, converter, index_prefix=prefix)
    query_vectors = np.array([reference.formulas.encode(converter.cache[f].mathml) for f in formulas])
    truth = exact_top(vectors, query_vectors, 10, getattr(encoder, "similarity", "max_inner_product"))
    first_pages: list[list[str]] | None = None
    for depth in args.depths:
        for factor in args.factors:
            service = SearchService(
                client, encoder, converter, index_prefix=prefix, candidate_depth=depth, num_candidates_factor=factor
            )
            recalls = []
            for row, latex in enumerate(formulas):
                hits = service.search(HybridQuery(latex=latex, size=10)).hits
                recalls.append(len({row_of[h.eq_id] for h in hits} & truth[row]) / 10)
            pages = [
                [h.eq_id for h in service.search(HybridQuery(latex=latex, keywords=keywords, size=10)).hits]
                for latex, keywords in zip(formulas, keyword_queries, strict=True)
            ]
            first_pages = first_pages or pages
            overlap = [len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(first_pages, pages, strict=True)]
            emit(
                measure="recall",
                n=args.n,
                candidate_depth=depth,
                num_candidates=min(10_000, max(100, depth * factor)),
                queries=len(formulas),
                recall_at_10=round(statistics.fmean(recalls), 4),
                hybrid_page1_overlap_with_first=round(statistics.fmean(overlap), 4),
            )


def document_eq_id(entry: dict[str, Any]) -> str:
    """The ``eq_id`` `document` gives a replicated entry."""
    return copy_eq_id(entry["src"], entry["copy"])


def copy_eq_id(src: dict[str, Any], copy: int) -> str:
    """The id of copy ``copy`` of a base equation: its own id under the copy's paper key (an inline formula keeps
    its ``:i<n>``, so that it does not overwrite the display of the same number)."""
    own = str(src.get("eq_id") or "")
    if ":" in own:
        return f"{src['paper_id']}-r{copy}:{own.rsplit(':', 1)[1]}"
    return equation_id(f"{src['paper_id']}-r{copy}", src["number"])


def cmd_cleanup(args: argparse.Namespace) -> None:
    client, _ = client_from_env()
    names = list(client.indices.get(index=f"{args.prefix}-*", ignore_unavailable=True))
    for name in names:
        client.indices.delete(index=name)
    emit(measure="cleanup", deleted=names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefix", default="eqbench", help="index prefix of everything this makes (eqbench)")
    parser.add_argument(
        "--bundle",
        help="model bundle to encode with (default: the installed one; 'standin': the hashing stand-in); it must be "
        "the one the base ingest used, or query vectors and indexed vectors come from different models",
    )
    parser.add_argument(
        "--base",
        action="append",
        metavar="PREFIX",
        help="a deployment whose equations are (part of) the base to replicate (repeatable; default: PREFIX-base, "
        "made by 'ingest'); duplicates dropped",
    )
    parser.add_argument("--base-url", help="the cluster holding the --base deployments (default: the configured one)")
    commands = parser.add_subparsers(dest="command", required=True)
    ingest = commands.add_parser("ingest", help="end-to-end ingest of real sources; equations/s")
    ingest.add_argument("--sources", nargs="+", default=["py:sympy"])
    ingest.add_argument(
        "--workers", type=int, default=0, help="extraction processes (0: in the job's process, one KaTeX worker)"
    )
    ingest.add_argument("--ratio", action="store_true", help="then the encoder alone on the same equations and cores")
    ingest.add_argument("--encoder-processes", type=int, default=2, help="encoder processes for --ratio (2: the cores)")
    ingest.add_argument("--profile", action="store_true", help="where the job's time goes (cProfile, by stage)")
    ingest.set_defaults(handler=cmd_ingest)
    web = commands.add_parser("web", help="queries/s of the web tier (gunicorn) beside the service in-process")
    web.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    web.add_argument("--clients", type=int, default=8)
    web.add_argument("--queries", type=int, default=400, help="distinct queries per kind (400)")
    web.add_argument("--kinds", nargs="+", default=["formula", "hybrid"], choices=("formula", "hybrid"))
    web.add_argument("--port", type=int, default=5077)
    web.add_argument("--workers", type=int, help="gunicorn workers (default: serve's, one per core)")
    web.set_defaults(handler=cmd_web)
    index_cost = commands.add_parser("index-cost", help="node CPU per indexed equation document, by field")
    index_cost.add_argument("--limit", type=int, default=20_000, help="documents of the base to load (20000)")
    index_cost.add_argument("--repeats", type=int, default=2)
    index_cost.set_defaults(handler=cmd_index_cost)
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
    latency.add_argument("--clients-list", type=int, nargs="+", metavar="C", help="several client counts in a row")
    latency.add_argument("--client-mode", choices=("processes", "threads"), default="processes")
    latency.add_argument("--kinds", nargs="+", choices=("formula", "keyword", "hybrid", "hybrid-grouped"))
    latency.add_argument("--queries", type=int, default=800, help="distinct queries per kind (800)")
    latency.add_argument("--rebuild", action="store_true")
    latency.add_argument("--keep", action="store_true")
    add_service_arguments(latency)
    latency.set_defaults(handler=cmd_latency)
    profile = commands.add_parser("profile", help="CPU per query by request kind (Python vs Elasticsearch)")
    profile.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    profile.add_argument("--queries", type=int, default=200, help="distinct queries per stage (200)")
    profile.add_argument("--repeats", type=int, default=3)
    profile.add_argument("--cprofile", type=int, default=0, metavar="TOP", help="cProfile the hybrid stage, top N")
    profile.add_argument("--es-profile", type=int, default=0, metavar="Q", help="ES profile API over Q queries")
    profile.add_argument("--stages", nargs="+", help="only the stages whose names start with these")
    add_service_arguments(profile)
    profile.set_defaults(handler=cmd_profile)
    replay = commands.add_parser(
        "replay", help="Elasticsearch's share of the latency: recorded requests replayed by bare HTTP clients"
    )
    replay.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    replay.add_argument("--clients", type=int, default=8)
    replay.add_argument("--queries", type=int, default=800, help="distinct queries per kind (800)")
    replay.add_argument(
        "--kinds", nargs="+", default=["hybrid"], choices=("formula", "keyword", "hybrid", "hybrid-grouped")
    )
    replay.add_argument(
        "--ranking-only",
        action="store_true",
        help="replay only each query's first request (the ranked lists), not the page fetch: what the ranking costs",
    )
    add_service_arguments(replay)
    replay.set_defaults(handler=cmd_replay)
    structure_cost = commands.add_parser(
        "structure-cost",
        help="node CPU of the structural list by part (first stage, each rescore), replayed from hybrid queries",
    )
    structure_cost.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    structure_cost.add_argument("--queries", type=int, default=200, help="distinct hybrid queries (200)")
    structure_cost.add_argument("--repeats", type=int, default=3, help="rounds over every variant (3)")
    add_service_arguments(structure_cost)
    structure_cost.set_defaults(handler=cmd_structure_cost)
    recall = commands.add_parser("recall", help="recall@10 of formula search vs exact kNN, per candidate depth")
    recall.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    recall.add_argument("--queries", type=int, default=200)
    recall.add_argument("--depths", type=int, nargs="+", default=[100, 50])
    recall.add_argument("--factors", type=int, nargs="+", default=[3])
    recall.set_defaults(handler=cmd_recall)
    cleanup = commands.add_parser("cleanup", help="delete every index of --prefix")
    cleanup.set_defaults(handler=cmd_cleanup)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    tempfile.tempdir = tempfile.gettempdir()
    main()
