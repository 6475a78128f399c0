"""Benchmark: the query plan's plugin path against the plain path, and each of the plugin's requests on its own.

On one indexed formula collection (an ``eqsearch evaluate formulas --keep`` prefix, or the ARQMath-1 development
half ingested here through the production ingest job), every topic is searched through the production
`SearchService` side by side, each mode a variant of the plan the service makes (`SearchService.plan_variant`): the
plain requests (``plain``, ``plugin=False``); the plugin's sub-expression rescorer alone, with the window BM25 from the
postings and the client's rare terms (``plugin``); the window BM25 from the forward index too (``forward``; left out on
an index without it); the first stage's rare terms chosen by the shard, scored by Lucene (``shard-rare``); the plan as
made, scored term at a time (``taat``: what the engine sends where every node has the plugin); for a MaxSim ranker
whose lists bring its scores, the rescorer's second request beside it (``maxsim-second``); and kNN alone (the
``embedding`` ranker, the budget's reference).

``quality``: formula-only queries paged to depth 1000, as ``eqsearch evaluate formulas`` does; prints the prime
measures of each and whether the default runs are identical (ids, order and scores), topic by topic.

``cost``: the first page of each topic (the service's default depth, the rerank window of 300), the formula prepared
once beforehand (KaTeX and the encoder run once per topic, as for a cached formula), repeated in interleaved rounds
(plain, plugin, kNN, plain, ...); per query, the client's CPU (``time.process_time``) and the node's (its process CPU
from ``_nodes/stats``, read fresh), and the median of the rounds. The ``_msearch`` body's size is printed too.
With ``--hybrid N``, N combined queries drawn from the index instead (formula and three words, highlights on).
``rescore``: the structural request alone, without the sub-expression rescore, with the plain one and with the
plugin's, replayed interleaved: node CPU per request. ``nodevectors``: a copy of an index with each formula's node
vectors stored, for the plugin's MaxSim (``candidatevectors``: only the topics' candidates', in place, for a large
index); ``maxsimcost``: the default against MaxSim rankers on such indices, MaxSim
scored by the rescorer in a second request or brought by the lists themselves, interleaved (the MaxSim
commands live in `plugin_maxsim.py`, the shared measurements in `plugin_measure.py`).
``replicate`` writes K copies of each equation of a prefix into a new prefix
(ids suffixed), for a larger index without another ingest: copies tie, so it measures cost, not quality. Run from the
repository root::

    EQSEARCH_ES_URL=http://127.0.0.1:9400 nice -n 10 .venv/bin/python benchmarks/plugin_rerank.py quality --prefix P
    EQSEARCH_ES_URL=http://127.0.0.1:9400 nice -n 10 .venv/bin/python benchmarks/plugin_rerank.py cost --prefix P
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from devset import add_dev_files, fill_dev_files
from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.index.documents import with_structure
from eqsearch.engine.index.mappings import alias_name
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.model.patterns import read_query_variables
from eqsearch.engine.search.plan import QueryPlan
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.evaluation.formulas import formula_ranking, read_formula_file
from eqsearch.evaluation.trec import evaluate_run, read_qrels
from plugin_maxsim import candidatevectors, maxsimcost, maxsimreplay, nodevectors
from plugin_measure import create_equations_copy, equations_mapping, hybrid_queries, interleaved_cpu, node_cpu_ms

MODES = ("plain", "plugin", "forward", "shard-rare", "taat", "maxsim-second", "knn")


def _structure_variant(**changes: Any) -> Callable[[QueryPlan], QueryPlan]:
    """A plan variant that changes the structural list's request (`engine.search.plan.StructureList`)."""

    def variant(plan: QueryPlan) -> QueryPlan:
        return replace(plan, structure=replace(plan.structure, **changes)) if plan.structure else plan

    return variant


def _services(
    client: Any, encoder: Any, converter: Any, prefix: str, depth: int | None, ranker: str = DEFAULT_RANKER
) -> dict[str, SearchService]:
    extra = {} if depth is None else {"candidate_depth": depth}
    default = get_ranker(ranker)
    services = {
        "plain": SearchService(client, encoder, converter, index_prefix=prefix, ranking=default, plugin=False, **extra),
        "plugin": SearchService(client, encoder, converter, index_prefix=prefix, ranking=default, **extra),
        "forward": SearchService(client, encoder, converter, index_prefix=prefix, ranking=default, **extra),
        "shard-rare": SearchService(client, encoder, converter, index_prefix=prefix, ranking=default, **extra),
        "taat": SearchService(client, encoder, converter, index_prefix=prefix, ranking=default, **extra),
        "knn": SearchService(
            client, encoder, converter, index_prefix=prefix, ranking=get_ranker("embedding"), plugin=False, **extra
        ),
    }
    if ranker != DEFAULT_RANKER:  # the default with the plugin, beside the ranker measured
        services["default"] = SearchService(
            client, encoder, converter, index_prefix=prefix, ranking=get_ranker(DEFAULT_RANKER), **extra
        )
    if not services["plugin"].plugin.active:
        raise SystemExit(f"the cluster has no usable eqsearch plugin: {services['plugin'].plugin.support.note}")
    # each mode a variant of the plan the service makes (the default: "taat", everything inside the node)
    services["plugin"].plan_variant = _structure_variant(forward_index=False, first_stage="rare-terms", top=0)
    services["forward"].plan_variant = _structure_variant(first_stage="rare-terms", top=0)  # client's rare terms
    services["shard-rare"].plan_variant = _structure_variant(top=0)  # the first stage by Lucene's MaxScore
    probe = services["taat"].plan(HybridQuery(latex="x^2 + y^2"))
    if probe.structure is None or not probe.structure.forward_index:
        for mode in ("forward", "shard-rare", "taat"):
            del services[mode]  # an index without the forward index: the plugin's rescorer is all it can use
    elif probe.maxsim is not None and probe.maxsim.in_lists:
        # a MaxSim ranker whose lists bring the scores: beside it, the rescorer's second request
        services["maxsim-second"] = SearchService(
            client, encoder, converter, index_prefix=prefix, ranking=default, **extra
        )
        services["maxsim-second"].plan_variant = lambda plan: replace(plan, maxsim=replace(plan.maxsim, list_window=0))
    return services


def quality(args: argparse.Namespace) -> None:
    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    qrels = read_qrels(args.qrels)
    with KatexConverter() as converter:
        services = _services(client, load_encoder(None), converter, args.prefix, 1000, args.ranker)
        modes = [mode for mode in MODES if mode in services and mode != "knn"]
        runs = {mode: {t: formula_ranking(services[mode], latex, 1000) for t, latex in topics} for mode in modes}
    for mode, run in runs.items():
        report = evaluate_run({t: [d for d, _ in r] for t, r in run.items()}, qrels, topics=[t for t, _ in topics])
        means = {k: round(v, 4) for k, v in report.means.items()}
        print(json.dumps({"mode": mode, "ranker": args.ranker, "prefix": args.prefix, **means}))
    for mode in modes[1:]:  # ids, order and scores, topic by topic, against the plain requests
        differ = [t for t, _ in topics if runs["plain"][t] != runs[mode][t]]
        print(
            json.dumps(
                {"mode": mode, "identical_topics": len(topics) - len(differ), "topics": len(topics), "differ": differ}
            )
        )
    if "maxsim-second" in runs:  # MaxSim brought by the lists against the rescorer's second request
        differ = [t for t, _ in topics if runs["shard-rare"][t] != runs["maxsim-second"][t]]
        print(json.dumps({"mode": "shard-rare vs maxsim-second", "identical_topics": len(topics) - len(differ)}))


def cost(args: argparse.Namespace) -> None:
    """Client + node CPU per query of the modes (`_services`), interleaved: formula-only queries (the topics, first
    page, no highlights), or with ``--hybrid N`` combined queries drawn from the index (`hybrid_queries`)."""
    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    with KatexConverter() as converter:
        services = _services(client, load_encoder(None), converter, args.prefix, None, args.ranker)
        if args.hybrid:
            queries = hybrid_queries(client, alias_name(args.prefix, "equations"), args.hybrid)
        else:
            queries = [HybridQuery(latex=latex, highlight=False) for _, latex in topics]
        for service in services.values():  # prepare every formula, warm every cache and the node's
            for query in queries:
                service.search(query)
        sizes = {}
        for mode, service in services.items():
            searches = service.requests(queries[0])
            sizes[mode] = sum(len(json.dumps(body)) for _, body in searches)
        modes = list(services)
        per_query = interleaved_cpu(client, services, queries, args.rounds, args.repeat)
    docs = client.count(index=alias_name(args.prefix, "equations"))["count"]
    out = {
        "ranker": args.ranker,
        "equations": docs,
        "queries_per_round": args.repeat * len(queries),
        "rounds": args.rounds,
    }
    for mode in modes:
        client_ms = statistics.median(per_query[mode]["client"])
        node_ms = statistics.median(per_query[mode]["node"])
        out[mode] = {
            "client_ms": round(client_ms, 2),
            "node_ms": round(node_ms, 2),
            "total_ms": round(client_ms + node_ms, 2),
            "request_bytes_first_topic": sizes[mode],
            "rounds_node_ms": [round(x, 2) for x in per_query[mode]["node"]],
        }
    for mode in [m for m in modes if m != "knn"]:
        out[f"{mode}_over_knn"] = round(out[mode]["total_ms"] / out["knn"]["total_ms"], 2)
    print(json.dumps(out))


def rescore(args: argparse.Namespace) -> None:
    """The structural request alone, three ways: without the sub-expression rescore, with the plain one, with the
    plugin's (each topic's first stage as the service picks it); node CPU per request, interleaved rounds."""
    from eqsearch.engine.search.query import ranking_only, structure_body

    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    with KatexConverter() as converter:
        service = SearchService(client, load_encoder(None), converter, index_prefix=args.prefix)
        bodies: dict[str, list[dict[str, Any]]] = {"none": [], "plain": [], "plugin": []}
        for _, latex in topics:
            formula = service.formulas.get(read_query_variables(latex))
            if formula.structure is None or not formula.structure.tokens:
                continue
            first_stage = service._first_stage(formula.structure, 300)
            for mode, bucket in bodies.items():
                weight = 0.0 if mode == "none" else 0.5
                body = structure_body(
                    formula.structure,
                    50,
                    [],
                    rerank_window=300,
                    rerank_weight=weight,
                    first_stage=first_stage,
                    candidate_sizes=True,
                    plugin=mode == "plugin",
                )
                bucket.append(ranking_only(body))
    index = alias_name(args.prefix, "equations")
    rounds: dict[str, list[float]] = {mode: [] for mode in bodies}
    for _ in range(args.rounds):
        for mode, bucket in bodies.items():
            node = node_cpu_ms(client)
            for _ in range(args.repeat):
                for body in bucket:
                    client.search(index=index, **body)
            rounds[mode].append((node_cpu_ms(client) - node) / (args.repeat * len(bucket)))
    out = {
        mode: {"node_ms": round(statistics.median(v), 2), "rounds": [round(x, 2) for x in v]}
        for mode, v in rounds.items()
    }
    print(json.dumps({"prefix": args.prefix, "requests_per_round": args.repeat * len(bodies["none"]), **out}))


def replicate(args: argparse.Namespace) -> None:
    """``--copies`` copies of each equation of ``--prefix`` under ``--into`` (same mapping and _meta), ids suffixed.
    With ``--noised`` (how the 1M indices of ``search.md`` were made): paper ids suffixed too, the formula vector of
    every copy after the first moved by Gaussian noise (0.15 of the norm over the square root of the dimension, as
    ``search.py`` does to the embedding, seed 0) and renormalised, so that HNSW does not meet thousands of identical
    points, and the context vectors left out (formula queries never read them). Copies still tie on every other
    field: they measure cost, never quality."""
    import numpy as np
    from elasticsearch.helpers import bulk, scan
    from eqsearch.engine.index.mappings import CONTEXT_VECTOR_FIELD, VECTOR_FIELD

    client, _ = connect(EsConfig.from_env())
    source = alias_name(args.prefix, "equations")
    mappings = equations_mapping(client, args.prefix)
    if args.noised:
        mappings["properties"].pop(CONTEXT_VECTOR_FIELD, None)
    target = create_equations_copy(client, args.into, mappings)
    docs = list(scan(client, index=source, query={"query": {"match_all": {}}, "_source": {"exclude_vectors": False}}))
    for doc in docs:  # the derived fields are not in the source (mapping version 8): made anew, once per equation
        doc["_source"] = with_structure(doc["_source"])
    rng = np.random.default_rng(0)
    began = time.monotonic()

    def moved(vector: Any) -> Any:
        v = np.asarray(vector, dtype=np.float32)
        v = v + rng.normal(size=v.shape).astype(np.float32) * 0.15 * float(np.linalg.norm(v)) / np.sqrt(v.size)
        return [round(float(x), 5) for x in v / max(float(np.linalg.norm(v)), 1e-12)]

    def actions():
        for copy in range(args.copies):
            for doc in docs:
                eq_id = f"{doc['_id']}~{copy}" if copy else doc["_id"]
                body = {**doc["_source"], "eq_id": eq_id}
                if args.noised:
                    body.pop(CONTEXT_VECTOR_FIELD, None)
                    if copy:
                        body["paper_id"] = f"{body.get('paper_id')}~{copy}"
                        if body.get(VECTOR_FIELD):
                            body[VECTOR_FIELD] = moved(body[VECTOR_FIELD])
                yield {"_index": target, "_id": eq_id, "_source": body}

    bulk(client.options(request_timeout=300), actions(), chunk_size=1000)
    loaded = time.monotonic()
    client.indices.put_settings(index=target, settings={"refresh_interval": "1s"})
    client.indices.refresh(index=target)
    client.options(request_timeout=3600).indices.forcemerge(index=target, max_num_segments=1)
    equations = client.count(index=target)["count"]
    print(json.dumps({"into": args.into, "equations": equations, "load_s": round(loaded - began)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    handlers = (
        ("quality", quality),
        ("cost", cost),
        ("rescore", rescore),
        ("replicate", replicate),
        ("nodevectors", nodevectors),
        ("maxsimcost", maxsimcost),
        ("candidatevectors", candidatevectors),
        ("maxsimreplay", maxsimreplay),
    )
    for name, handler in handlers:
        command = commands.add_parser(name)
        command.add_argument("--prefix", required=True, help="the indexed collection's prefix")
        add_dev_files(command)
        command.add_argument("--rounds", type=int, default=5)
        command.add_argument("--repeat", type=int, default=3)
        command.add_argument("--into", help="replicate: the new prefix")
        command.add_argument("--copies", type=int, default=10)
        command.add_argument("--noised", action="store_true", help="replicate: noised vectors, paper ids suffixed")
        command.add_argument("--ranker", default=DEFAULT_RANKER, help="the ranker of the plain and plugin modes")
        command.add_argument("--nodes", help="nodevectors: the node output stored (default: the ranker's)")
        command.add_argument("--modes", nargs="+", default=[], help="maxsimcost: PREFIX:0, PREFIX:WINDOW:NODES ...")
        command.add_argument(
            "--hybrid", type=int, default=0, help="cost, maxsimcost, candidatevectors: N combined queries"
        )
        command.set_defaults(handler=handler)
    args = parser.parse_args()
    fill_dev_files(args)
    args.handler(args)


if __name__ == "__main__":
    main()
