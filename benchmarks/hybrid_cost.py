"""Benchmark: what one combined (and one keywords-only) search costs the client and the node, on the hybrid dev set.

Every dev query of `evaluation/data/hybrid-dev.tsv` is searched through the production `SearchService` once to warm
(KaTeX, the encoder, the formula cache, the node's caches), then ``passes`` times; printed per mode: the median wall
time, the median process CPU of the client per search, and the node's process CPU (``_nodes/stats``) over the passes
divided by the searches. To compare two versions of the code, run it under each checkout against the same documents
(an index per mapping version behind its own prefix), alternating, on an otherwise idle node::

    .venv/bin/python benchmarks/hybrid_cost.py --prefix hybdev [--passes 3] [--queries FILE]
    .venv/bin/python benchmarks/hybrid_cost.py --prefix hybdev --lists     # each ranked list of a combined search alone

``--lists`` instead sends each ranked list of every dev query's combined search alone (the bodies the service
builds, `SearchService.requests`), ``passes`` times, and prints the node's CPU and the median wall time per list:
where a combined search's node time goes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model.encoder import load_encoder
from eqsearch.engine.search import SearchService
from eqsearch.evaluation.hybrid import DEFAULT_HYBRID_QUERIES, read_hybrid_queries


def node_cpu_ms(client: object) -> int:
    """The process CPU milliseconds of every node of the cluster, summed."""
    stats = client.nodes.stats(metric="process")["nodes"]  # type: ignore[attr-defined]
    return sum(node["process"]["cpu"]["total_in_millis"] for node in stats.values())


def list_costs(client: object, service: SearchService, rows: list, passes: int) -> None:
    """Node CPU and median wall milliseconds of each ranked list of the combined searches, each list sent alone."""
    requests = [service.requests(row.query("both", size=10)) for row in rows]
    for name in dict.fromkeys(name for searches in requests for name, _ in searches):
        index = service.papers_alias if name == "papers" else service.equations_alias
        bodies = [body for searches in requests for listed, body in searches if listed == name]
        for body in bodies:  # warm
            client.search(index=index, body=body)  # type: ignore[attr-defined]
        wall = []
        began_node = node_cpu_ms(client)
        for _ in range(passes):
            for body in bodies:
                began = time.perf_counter()
                client.search(index=index, body=body)  # type: ignore[attr-defined]
                wall.append((time.perf_counter() - began) * 1000.0)
        node = (node_cpu_ms(client) - began_node) / len(wall)
        print(f"{name}: node CPU {node:.1f} ms, median {statistics.median(wall):.1f} ms wall ({len(wall)} searches)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--queries", type=Path, default=DEFAULT_HYBRID_QUERIES)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--lists", action="store_true", help="each ranked list of a combined search alone instead")
    args = parser.parse_args()
    rows = [row for row in read_hybrid_queries(args.queries) if row.split == "dev"]
    client, _ = connect(EsConfig.from_env())
    with KatexConverter() as converter:
        service = SearchService(client, load_encoder(None), converter, index_prefix=args.prefix)
        if args.lists:
            list_costs(client, service, rows, args.passes)
            return
        for mode in ("both", "keywords"):
            for row in rows:
                service.search(row.query(mode, size=10))
            wall, cpu = [], []
            began_node = node_cpu_ms(client)
            for _ in range(args.passes):
                for row in rows:
                    began, began_cpu = time.perf_counter(), time.process_time()
                    service.search(row.query(mode, size=10))
                    wall.append((time.perf_counter() - began) * 1000.0)
                    cpu.append((time.process_time() - began_cpu) * 1000.0)
            node = (node_cpu_ms(client) - began_node) / len(wall)
            print(
                f"{args.prefix} {mode}: median {statistics.median(wall):.1f} ms wall, client CPU "
                f"{statistics.median(cpu):.1f} ms, node CPU {node:.1f} ms per search ({len(wall)} searches)"
            )


if __name__ == "__main__":
    main()
