"""Benchmark of `eqsearch ingest extract`, stage by stage, on sources you give it.

Stages, each timed on its own:
1. discover: listing the documents (parent process).
2. read+extract: unpacking, main file, inputs, macros, displays, sections, context, citations (one process).
3. convert: LaTeX -> MathML with one KaTeX worker (`eqsearch.engine.latex.converter.KatexConverter`), per paper.
4. pipeline: the whole command with N worker processes (wall clock), written to a temporary folder.

Usage:
    .venv/bin/python benchmarks/ingest_extract.py SRC... [--workers N] [--limit DOCS] [--no-convert]

Figures on this machine are in benchmarks/ingest.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.convert import convert_paper, open_converter
from eqsearch.ingest.pipeline import process_task, run_extraction
from eqsearch.ingest.sources import discover


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="at most this many documents (0 = all)")
    parser.add_argument("--no-convert", action="store_true")
    args = parser.parse_args()

    started = time.perf_counter()
    tasks = list(discover(args.sources))
    discover_s = time.perf_counter() - started
    if args.limit:
        tasks = tasks[: args.limit]
    config = ExtractConfig(convert=False)

    started = time.perf_counter()
    papers = [process_task(task, config, None) for task in tasks]
    extract_s = time.perf_counter() - started
    equations = sum(len(p.equations()) for p in papers)

    convert = None
    if not args.no_convert:
        converter = open_converter()
        try:
            converter.convert_many([("x", "equation")])  # start the Node worker outside the timing
            started = time.perf_counter()
            sent = sum(convert_paper(p, converter) for p in papers)
            convert_s = time.perf_counter() - started
        finally:
            converter.__exit__(None, None, None)
        statuses: dict[str, int] = {}
        for p in papers:
            for eq in p.equations():
                statuses[eq.status] = statuses.get(eq.status, 0) + 1
        convert = {"equations": sent, "seconds": round(convert_s, 3), "equations_per_s": round(sent / convert_s, 1)}
        convert["status"] = statuses

    with tempfile.TemporaryDirectory() as out:
        pipeline_config = ExtractConfig(convert=not args.no_convert)
        started = time.perf_counter()
        stats = run_extraction(tasks, Path(out), pipeline_config, workers=args.workers)
        pipeline_s = time.perf_counter() - started

    report = {
        "machine": f"{platform.processor() or platform.machine()}, {__import__('os').cpu_count()} CPUs",
        "documents": len(tasks),
        "equations": equations,
        "discover": {"seconds": round(discover_s, 3), "documents_per_s": round(len(tasks) / discover_s, 1)},
        "read_extract_1_process": {
            "seconds": round(extract_s, 3),
            "documents_per_s": round(len(tasks) / extract_s, 1),
            "equations_per_s": round(equations / extract_s, 1),
        },
        "convert_1_katex_worker": convert,
        f"pipeline_{args.workers}_workers": {
            "seconds": round(pipeline_s, 3),
            "documents_per_s": round(stats.documents / pipeline_s, 1),
            "equations_per_s": round(stats.equations_found / pipeline_s, 1),
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
