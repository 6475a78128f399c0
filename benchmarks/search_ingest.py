"""The search benchmark's ingest side: the ``ingest`` command (the real ingest job end to end, its stages, the
encoder alone for the ingest ratio) and ``index-cost`` (node CPU per indexed equation document, by field).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np
from eqsearch.engine.index import IndexAdmin, IndexOptions, bulk_index, index_definition
from search_load import BASE_INDEX, base_client, base_documents
from search_measure import emit, index_size, load_average, node_cpu_ms
from search_service import ROOT, client_from_env, encoder_identity, load_encoder_or_standin


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
