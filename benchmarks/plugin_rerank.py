"""Benchmark: the structural rerank by eqsearch's Elasticsearch plugin against the plain ``function_score`` rescore.

On one indexed formula collection (an ``eqsearch evaluate formulas --keep`` prefix, or the ARQMath-1 development
half ingested here through the production ingest job), every topic is searched through the production
`SearchService` side by side: the default ranker with the plain requests (``plugin=False``), the default ranker with
the plugin's sub-expression rerank (detected on the node) and the plain window BM25, the same with the window BM25
from the forward index too (``forward``, plugin 1.2 and an index of mapping version 7; left out where either is
missing), the same with the first stage's rare terms chosen by the shard (``shard-rare``, plugin 1.3's
``eqsearch_terms``: no ``_termvectors`` request; for a MaxSim ranker whose lists bring its scores, plugin 1.4, the same
with the rescorer's second request beside it, ``maxsim-second``), and kNN alone (the ``embedding``
ranker, the budget's reference).

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
scored by the rescorer in a second request or brought by the lists themselves (plugin 1.4), interleaved.
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
from pathlib import Path
from typing import Any

from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.index.mappings import alias_name
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.model.patterns import read_query_variables
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.evaluation.formulas import formula_ranking, read_formula_file
from eqsearch.evaluation.trec import evaluate_run, read_qrels

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "arqmath1-dev"
MODES = ("plain", "plugin", "forward", "shard-rare", "maxsim-second", "knn")


def node_cpu_ms(client: Any, max_wait_s: float = 2.0) -> int:
    """The nodes' process CPU so far in ms, waiting for figures stamped after the call (they are cached ~1 s)."""
    asked = time.time() * 1000
    deadline = time.monotonic() + max_wait_s
    while True:
        nodes = client.nodes.stats(metric="process")["nodes"]
        if all(int(n["process"].get("timestamp", 0)) >= asked for n in nodes.values()) or time.monotonic() > deadline:
            return sum(int(n["process"]["cpu"]["total_in_millis"]) for n in nodes.values())
        time.sleep(0.05)


def equations_mapping(client: Any, prefix: str) -> dict[str, Any]:
    """The mappings (properties and ``_meta``) of the equations index ``prefix``'s alias points at."""
    source = alias_name(prefix, "equations")
    concrete = next(iter(client.indices.get_alias(name=source)))
    return dict(client.indices.get(index=concrete)[concrete]["mappings"])


def create_equations_copy(client: Any, prefix: str, mappings: dict[str, Any]) -> str:
    """An empty equations index ``<prefix>-equations-v1`` with ``mappings``, set for bulk loading (one shard, no
    replica, no refresh), behind its alias; returns the alias."""
    target = alias_name(prefix, "equations")
    client.indices.create(
        index=f"{target}-v1",
        mappings=mappings,
        settings={"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
        aliases={target: {}},
    )
    return target


def interleaved_cpu(
    client: Any, services: dict[str, Any], queries: list[Any], rounds: int, repeat: int
) -> dict[str, dict[str, list[float]]]:
    """Client and node CPU per query (ms) of each service, measured round by round, the modes interleaved within a
    round so that the machine's load falls on all of them alike: mode -> ``client``/``node`` -> one figure a round."""
    per_query: dict[str, dict[str, list[float]]] = {m: {"client": [], "node": []} for m in services}
    for _ in range(rounds):
        for mode, service in services.items():
            node, cpu = node_cpu_ms(client), time.process_time()
            for _ in range(repeat):
                for query in queries:
                    service.search(query)
            count = repeat * len(queries)
            per_query[mode]["client"].append((time.process_time() - cpu) * 1000 / count)
            per_query[mode]["node"].append((node_cpu_ms(client) - node) / count)
    return per_query


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
    services["plugin"].plugin.use_forward_index = False  # today's plugin requests: the window BM25 from postings
    services["forward"].plugin.use_shard_rare_terms = False  # the rare terms chosen by the client (_termvectors)
    if not services["forward"].plugin.forward_index(alias_name(prefix, "equations")):
        del services["forward"]  # an older plugin, or an index without the forward index
    services["shard-rare"].plugin.use_maxsim_in_lists = True  # a MaxSim ranker's lists bring the scores (1.4)
    if not services["shard-rare"].plugin.shard_rare_terms(alias_name(prefix, "equations")):
        del services["shard-rare"]  # a plugin before 1.3, or an index without the forward index
    elif services["shard-rare"].plugin.maxsim_in_lists(alias_name(prefix, "equations")) and default.maxsim_window:
        # a MaxSim ranker whose lists bring the scores (plugin 1.4): beside it, the rescorer's second request
        services["maxsim-second"] = SearchService(
            client, encoder, converter, index_prefix=prefix, ranking=default, **extra
        )
        services["maxsim-second"].plugin.use_maxsim_in_lists = False
    return services


def quality(args: argparse.Namespace) -> None:
    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    qrels = read_qrels(args.qrels)
    with KatexConverter() as converter:
        services = _services(client, load_encoder(None), converter, args.prefix, 1000, args.ranker)
        modes = [mode for mode in MODES[:5] if mode in services]
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


#: Words too common to make a known-item query's keywords (``--hybrid``).
_STOPWORD_TEXT = (
    "that this with from where which when then than there their these those have been will shall also each such "
    "into over only some used uses using given gives both more most what true false none return returns "
    "value values function functions parameter parameters default"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def hybrid_queries(client: Any, alias: str, count: int, seed: int = 17) -> list[HybridQuery]:
    """``count`` combined queries drawn from the index (a seeded random sample of its display equations that have
    words around them): each equation's LaTeX and three words of its context or section title, as a researcher
    asks for a formula they remember with a few words; the UI's defaults (first page, highlights)."""
    import re

    body = {
        "query": {"function_score": {
            # words around them: a term of four letters or more (an empty context is indexed too)
            "query": {"bool": {"filter": [{"regexp": {"context": "[a-z]{4,}"}}, {"term": {"inline": False}}]}},
            "random_score": {"seed": seed, "field": "eq_id"}, "boost_mode": "replace",
        }},
        "size": count * 3,
        "_source": ["latex", "context", "section_title"],
    }  # fmt: skip
    out: list[HybridQuery] = []
    for hit in client.search(index=alias, body=body)["hits"]["hits"]:
        source = hit["_source"]
        text = f"{source.get('section_title') or ''} {source.get('context') or ''}"
        words = [w.lower() for w in re.findall(r"[A-Za-z]{4,}", text) if w.lower() not in _STOPWORDS]
        words = list(dict.fromkeys(words))
        if len(words) >= 3 and 3 <= len(source.get("latex") or "") <= 300:
            out.append(HybridQuery(latex=source["latex"], keywords=" ".join(words[:3])))
        if len(out) == count:
            break
    return out


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
            formula = service.formulas.get(read_query_variables(queries[0].latex or ""))
            searches = service._searches(queries[0], formula, service.candidate_depth, [])
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
    """K copies of each equation of ``--prefix`` under ``--into`` (same mapping and _meta), ids suffixed."""
    from elasticsearch.helpers import bulk, scan

    client, _ = connect(EsConfig.from_env())
    source = alias_name(args.prefix, "equations")
    target = create_equations_copy(client, args.into, equations_mapping(client, args.prefix))
    docs = list(scan(client, index=source, query={"query": {"match_all": {}}, "_source": {"exclude_vectors": False}}))

    def actions():
        for copy in range(args.copies):
            for doc in docs:
                eq_id = f"{doc['_id']}~{copy}" if copy else doc["_id"]
                yield {"_index": target, "_id": eq_id, "_source": {**doc["_source"], "eq_id": eq_id}}

    bulk(client, actions(), chunk_size=1000, request_timeout=120)
    client.indices.put_settings(index=target, settings={"refresh_interval": "1s"})
    client.indices.refresh(index=target)
    client.indices.forcemerge(index=target, max_num_segments=1, request_timeout=1200)
    print(json.dumps({"into": args.into, "equations": client.count(index=target)["count"]}))


def maxsimcost(args: argparse.Namespace) -> None:
    """Client + node CPU per formula query of ``--modes``, interleaved round by round: ``PREFIX:0`` the default ranker
    (with the plugin) on an index, ``PREFIX:WINDOW:NODES`` the MaxSim ranker reranking its top WINDOW over the node
    vectors NODES (``node_states``, ``node_states@p64``) that index stores, scored in the node (checked: the index's
    ``_meta`` names that node encoder, and the service computes no candidate's node vectors itself); a fourth part
    picks how the node scores it: ``second`` by the rescorer in a request of its own after the lists (plugin 1.1+),
    ``lists`` in the fetch phase of the lists themselves (plugin 1.4's search extension; checked to be used; with
    plugin 1.5 each list's top hits only, `engine.search.maxsim.list_window`), ``lists-all`` the same scoring every
    returned hit (1.4's way, the window's rescore left out); with neither, the rescorer's too. Each mode's
    ``over_default`` compares medians; ``round_ratio`` gives the quartiles of the round-by-round ratios to the
    default of the same index."""
    from dataclasses import replace

    from eqsearch.engine.model.nodes import load_node_encoder

    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    with KatexConverter() as converter:
        encoder = load_encoder(None)
        base = get_ranker(args.ranker)
        services: dict[str, SearchService] = {}
        for mode in args.modes:
            prefix, window, *nodes = mode.split(":")
            if not int(window):
                services[mode] = SearchService(client, encoder, converter, index_prefix=prefix)
                continue
            node_encoder = load_node_encoder(None, output=nodes[0])
            stored = equations_mapping(client, prefix).get("_meta", {}).get("node_vectors")
            if stored != node_encoder.identity:
                raise SystemExit(f"{prefix} stores node vectors of {stored}, not {node_encoder.identity}")
            ranking = replace(base, name=mode, maxsim_window=int(window), maxsim_nodes=nodes[0])
            services[mode] = SearchService(
                client, encoder, converter, index_prefix=prefix, ranking=ranking, node_encoder=node_encoder
            )
            in_lists = nodes[1:] in (["lists"], ["lists-all"])
            services[mode].plugin.use_maxsim_in_lists = in_lists
            if nodes[1:] == ["lists-all"]:  # plugin 1.4's way: every returned hit scored
                services[mode].plugin._support = replace(services[mode].plugin.support, maxsim_window=False)
            if in_lists and not services[mode].plugin.maxsim_in_lists(alias_name(prefix, "equations")):
                raise SystemExit(f"{mode}: the lists cannot bring MaxSim: {services[mode].plugin.support.note}")
        queries = [HybridQuery(latex=latex, highlight=False) for _, latex in topics]
        for service in services.values():  # prepare every formula, warm every cache and the node's
            for query in queries:
                service.search(query)
        computed = {mode: service.maxsim.vectors.computed for mode, service in services.items()}
        per_query = interleaved_cpu(client, services, queries, args.rounds, args.repeat)
    out: dict[str, Any] = {
        "rounds": args.rounds,
        "queries_per_round": args.repeat * len(queries),
        "client_computed_nodes": computed,
    }
    for mode in services:
        client_ms = statistics.median(per_query[mode]["client"])
        node_ms = statistics.median(per_query[mode]["node"])
        rounds = zip(per_query[mode]["client"], per_query[mode]["node"], strict=True)
        out[mode] = {
            "client_ms": round(client_ms, 2),
            "node_ms": round(node_ms, 2),
            "total_ms": round(client_ms + node_ms, 2),
            "rounds_total_ms": [round(c + n, 2) for c, n in rounds],
        }
        default = f"{mode.split(':')[0]}:0"
        if mode != default and default in out:
            out[mode]["over_default"] = round(out[mode]["total_ms"] / out[default]["total_ms"] - 1, 3)
            pairs = zip(out[mode]["rounds_total_ms"], out[default]["rounds_total_ms"], strict=True)
            ratios = [a / b - 1 for a, b in pairs]
            quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
            out[mode]["round_ratio"] = [round(value, 3) for value in quartiles]
    print(json.dumps(out))


def maxsimreplay(args: argparse.Namespace) -> None:
    """The MaxSim ranker's formula lists of every topic (``--prefix``, plugin 1.4), replayed interleaved: without
    MaxSim (``none``), with the rescorer's second request for the lists' top 15 + 15 (``second``: 30 candidates, as
    the fused window), with the lists bringing the scores of their 100 + 100 hits (``lists-all``, plugin 1.4), of
    their top hits alone (``lists``, plugin 1.5's window rescore where the node has it), and with the extension
    pointed at an unmapped field (``nofield``: its cost without the arithmetic); client and node CPU per query."""
    import copy

    from eqsearch.engine.search.maxsim import stored_maxsim_scores
    from eqsearch.engine.search.plugin import MAXSIM_WINDOW_RESCORER
    from eqsearch.engine.search.requests import ranked_lists

    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    with KatexConverter() as converter:
        service = SearchService(
            client, load_encoder(None), converter, index_prefix=args.prefix, ranking=get_ranker(args.ranker)
        )
        service.plugin.use_maxsim_in_lists = True
        alias = service.equations_alias
        cases = []
        for _, latex in topics:
            formula = service.formulas.get(read_query_variables(latex))
            plain = service._searches(HybridQuery(latex=latex, highlight=False), formula, 100, [])
            lists = copy.deepcopy(plain)
            if service.maxsim.ask_in_lists(lists, formula.nodes) is None:
                raise SystemExit(f"the lists cannot bring MaxSim on {alias}: {service.plugin.support.note}")
            every = copy.deepcopy(lists)
            for _, body in every:  # without the window's rescore: every returned hit scored
                if isinstance(body.get("rescore"), list):
                    body["rescore"] = [r for r in body["rescore"] if MAXSIM_WINDOW_RESCORER not in r] or None
                    if body["rescore"] is None:
                        del body["rescore"]
            nofield = copy.deepcopy(every)
            for _, body in nofield:
                if "ext" in body:
                    body["ext"] = {name: {**value, "field": "unmapped"} for name, value in body["ext"].items()}
            found = ranked_lists(client, alias, plain).lists
            ids = [eq for eq, _ in found["structure"][:15]] + [eq for eq, _ in found["embedding"][:15]]
            cases.append(
                {
                    "none": plain,
                    "lists": lists,
                    "lists-all": every,
                    "nofield": nofield,
                    "nodes": formula.nodes,
                    "ids": ids,
                }
            )

    def run(mode: str) -> None:
        for case in cases:
            ranked_lists(client, alias, case["none" if mode == "second" else mode])
            if mode == "second":
                stored_maxsim_scores(client, alias, case["ids"], case["nodes"], symmetric=False)

    per_query: dict[str, dict[str, list[float]]] = {
        m: {"client": [], "node": []} for m in ("none", "second", "lists", "lists-all", "nofield")
    }
    for _ in range(args.rounds):
        for mode in per_query:
            node, cpu = node_cpu_ms(client), time.process_time()
            for _ in range(args.repeat):
                run(mode)
            count = args.repeat * len(cases)
            per_query[mode]["client"].append((time.process_time() - cpu) * 1000 / count)
            per_query[mode]["node"].append((node_cpu_ms(client) - node) / count)
    out = {
        mode: {side: round(statistics.median(v), 3) for side, v in sides.items()} for mode, sides in per_query.items()
    }
    print(json.dumps({"rounds": args.rounds, "queries_per_round": args.repeat * len(cases), **out}))


def nodevectors(args: argparse.Namespace) -> None:
    """A copy of ``--prefix``'s equations under ``--into`` with each formula's node vectors stored
    (`NODE_VECTORS_FIELD`, int8, from the bundle's node-states sidecar run on the stored MathML: ``--nodes``, by
    default the ranker's), its ``_meta`` naming their encoder as an ingest's does, for the plugin's MaxSim; prints
    the stored bytes per equation."""
    from elasticsearch.helpers import bulk, scan
    from eqsearch.engine.index.documents import with_node_vectors_field
    from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD, NODE_VECTORS_MAPPING
    from eqsearch.engine.model.featurize import MathMLError
    from eqsearch.engine.model.nodes import load_node_encoder

    client, _ = connect(EsConfig.from_env())
    node_encoder = load_node_encoder(None, output=args.nodes or get_ranker(args.ranker).maxsim_nodes)
    source = alias_name(args.prefix, "equations")
    mappings = equations_mapping(client, args.prefix)
    mappings["properties"][NODE_VECTORS_FIELD] = NODE_VECTORS_MAPPING
    mappings.setdefault("_meta", {}).update(node_vectors=node_encoder.identity, node_dims=node_encoder.dim)
    target = create_equations_copy(client, args.into, mappings)
    began, stored, sizes = time.process_time(), 0, []

    def encoded(mathml: str | None) -> Any:
        if not mathml:
            return None
        try:
            return node_encoder.encode([mathml])[0]
        except MathMLError:
            return None

    def actions():
        nonlocal stored
        for doc in scan(
            client, index=source, query={"query": {"match_all": {}}, "_source": {"exclude_vectors": False}}
        ):
            body = with_node_vectors_field(doc["_source"], encoded(doc["_source"].get("mathml")))
            if NODE_VECTORS_FIELD in body:
                stored += 1
                sizes.append(len(body[NODE_VECTORS_FIELD]) * 3 // 4)
            yield {"_index": target, "_id": doc["_id"], "_source": body}

    bulk(client, actions(), chunk_size=500)
    client.indices.put_settings(index=target, settings={"refresh_interval": "1s"})
    client.indices.refresh(index=target)
    print(json.dumps({
        "into": args.into,
        "equations": client.count(index=target)["count"],
        "with_node_vectors": stored,
        "nodes_output": node_encoder.output if hasattr(node_encoder, "output") else None,
        "dim": node_encoder.dim,
        "stored_bytes_median": statistics.median(sizes) if sizes else None,
        "stored_bytes_mean": round(statistics.fmean(sizes), 1) if sizes else None,
        "encode_cpu_s": round(time.process_time() - began, 1),
    }))  # fmt: skip


def candidatevectors(args: argparse.Namespace) -> None:
    """Node vectors (the MaxSim ranker's) written in place for the equations of ``--prefix`` that the MaxSim ranker's
    formula lists return for the topics (each list's top 100 of the first page's search), with the field mapped and
    the index's ``_meta`` naming the node encoder: for ``maxsimcost`` on a large index where computing every
    equation's node vectors would take hours. The measured queries then score exactly the candidates they would on a
    fully written index; the other equations have none (none is read). Each document is written again whole, from
    its ``_source`` with its vectors; those that have node vectors already are left alone. A rewritten document
    moves behind the copies it ties with, so run it again until it writes nothing."""
    from elasticsearch.helpers import bulk
    from eqsearch.engine.index.documents import with_node_vectors_field
    from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD, NODE_VECTORS_MAPPING
    from eqsearch.engine.model.nodes import load_node_encoder
    from eqsearch.engine.search.requests import ranked_lists

    client, _ = connect(EsConfig.from_env())
    ranking = get_ranker(args.ranker)
    node_encoder = load_node_encoder(None, output=ranking.maxsim_nodes)
    alias = alias_name(args.prefix, "equations")
    ids: set[str] = set()
    with KatexConverter() as converter:
        service = SearchService(client, load_encoder(None), converter, index_prefix=args.prefix, ranking=ranking)
        for _, latex in read_formula_file(args.topics, "topic"):
            formula = service.formulas.get(read_query_variables(latex))
            searches = service._searches(HybridQuery(latex=latex, highlight=False), formula, 100, [])
            for ranked in ranked_lists(client, alias, searches).lists.values():
                ids.update(eq_id for eq_id, _ in ranked[:100])
    client.indices.put_mapping(
        index=alias,
        properties={NODE_VECTORS_FIELD: NODE_VECTORS_MAPPING},
        meta={**equations_mapping(client, args.prefix).get("_meta", {}), "node_vectors": node_encoder.identity,
              "node_dims": node_encoder.dim},
    )  # fmt: skip
    began = time.process_time()
    without = {
        "bool": {"filter": {"terms": {"eq_id": sorted(ids)}}, "must_not": {"exists": {"field": NODE_VECTORS_FIELD}}}
    }
    body = {"query": without, "size": len(ids), "_source": {"exclude_vectors": False}}
    found = client.search(index=alias, body=body)["hits"]["hits"]
    actions = []
    for hit in found:
        mathml = hit["_source"].get("mathml")
        body = with_node_vectors_field(hit["_source"], node_encoder.encode([mathml])[0] if mathml else None)
        actions.append({"_index": hit["_index"], "_id": hit["_id"], "_source": body})
    written, _ = bulk(client, actions, chunk_size=500)
    client.indices.refresh(index=alias)
    print(json.dumps({
        "index": alias, "candidates": len(ids), "written": written,
        "with_node_vectors": sum(NODE_VECTORS_FIELD in a["_source"] for a in actions),
        "encode_cpu_s": round(time.process_time() - began, 1),
    }))  # fmt: skip


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
        command.add_argument("--topics", type=Path, default=DEV / "topics.tsv")
        command.add_argument("--qrels", type=Path, default=DEV / "qrels.txt")
        command.add_argument("--rounds", type=int, default=5)
        command.add_argument("--repeat", type=int, default=3)
        command.add_argument("--into", help="replicate: the new prefix")
        command.add_argument("--copies", type=int, default=10)
        command.add_argument("--ranker", default=DEFAULT_RANKER, help="the ranker of the plain and plugin modes")
        command.add_argument("--nodes", help="nodevectors: the node output stored (default: the ranker's)")
        command.add_argument("--modes", nargs="+", default=[], help="maxsimcost: PREFIX:0, PREFIX:WINDOW:NODES ...")
        command.add_argument("--hybrid", type=int, default=0, help="cost: N combined queries drawn from the index")
        command.set_defaults(handler=handler)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
