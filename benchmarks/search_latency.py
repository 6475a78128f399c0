"""The search benchmark's concurrent-client throughput: ``latency`` (closed-loop client processes or threads running
`SearchService` queries on a replicated index: percentiles, queries/s, client and node CPU), ``web`` (the same
through the web tier's JSON API beside the service in-process) and ``replay`` (the recorded Elasticsearch requests
alone, by bare HTTP clients: Elasticsearch's share of the latency).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import sys
import threading
import time
from typing import Any

from eqsearch.engine.index import IndexAdmin
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService
from search_load import (
    CachedConverter,
    base_client,
    base_documents,
    ensure_latency_index,
    kept_index,
    usable_queries,
)
from search_measure import emit, index_size, load_average, machine_cpu_s, node_cpu_ms, node_memory, percentiles
from search_service import (
    bundle_spec,
    client_from_env,
    encoder_identity,
    load_encoder_or_standin,
    printable,
    service_classes,
    service_options,
)


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


def inprocess_client(conn: Any, barrier: Any, setup: dict[str, Any]) -> None:
    """A client process calling a `SearchService` built as the web app builds it (real KaTeX), with the command
    line's service options."""
    from elasticsearch import Elasticsearch
    from eqsearch.engine.latex.converter import KatexConverter

    encoder = load_encoder_or_standin(setup["bundle"], quiet=True)
    client = Elasticsearch(setup["url"], request_timeout=300)
    with KatexConverter() as converter:
        # the command line's settings (--ranker, --candidate-depth, the formula cache), as the threads' service has
        service = SearchService(
            client, encoder, converter, index_prefix=setup["prefix"], **setup.get("service_options", {})
        )
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
