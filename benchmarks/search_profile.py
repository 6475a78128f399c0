"""The search benchmark's per-query cost breakdown, sequential on a kept ``latency`` index: ``profile`` (each request
kind of a hybrid query alone: Python and node CPU, shard times, cProfile, Elasticsearch's profile API) and
``structure-cost`` (the structural list's parts: first stage, each rescore, term statistics).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from eqsearch.engine.index.mappings import STRUCTURE_FIELD
from search_load import kept_index, usable_queries
from search_measure import emit, load_average, node_cpu_ms, percentiles
from search_service import service_classes, service_options


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
    from eqsearch.engine.search.structure_query import TermStatistics

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
