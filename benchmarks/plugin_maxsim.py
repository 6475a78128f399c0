"""Benchmark: the MaxSim rerank scored inside Elasticsearch by eqsearch's plugin, from node vectors stored per
equation. Its commands run through `plugin_rerank.py` (``nodevectors``, ``candidatevectors``, ``maxsimcost``,
``maxsimreplay``; see that module's docstring; the measurements: ``docs/decisions/maxsim-placement.md``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.index.documents import with_structure
from eqsearch.engine.index.mappings import alias_name
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.model.patterns import read_query_variables
from eqsearch.engine.search.plan import QueryPlan
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.evaluation.formulas import read_formula_file
from plugin_measure import create_equations_copy, equations_mapping, hybrid_queries, interleaved_cpu, node_cpu_ms


def _rescorer_only(plan: QueryPlan) -> QueryPlan:
    """A plan variant whose formula lists bring no MaxSim scores: the rescorer's second request scores the window."""
    from dataclasses import replace

    return replace(plan, maxsim=replace(plan.maxsim, list_window=0)) if plan.maxsim else plan


def maxsimcost(args: argparse.Namespace) -> None:
    """Client + node CPU per formula query of ``--modes``, interleaved round by round: ``PREFIX:0`` the default ranker
    (with the plugin) on an index, ``PREFIX:WINDOW:NODES`` the MaxSim ranker reranking its top WINDOW over the node
    vectors NODES (``node_states``, ``node_states@p64``) that index stores, scored in the node (checked: the index's
    ``_meta`` names that node encoder, and the service computes no candidate's node vectors itself); a fourth part
    picks how the node scores it: ``second`` by the rescorer in a request of its own after the lists (a plan variant
    whose lists bring no scores), ``lists`` in the fetch phase of the lists themselves, each list's top hits (the plan
    as made; checked to be used); with neither, the rescorer's too. Each mode's
    ``over_default`` compares medians; ``round_ratio`` gives the quartiles of the round-by-round ratios to the
    default of the same index. With ``--hybrid N``, N combined queries drawn from the first mode's index
    (`plugin_measure.hybrid_queries`, as ``cost --hybrid``) instead of the topics."""
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
            planned = services[mode].plan(HybridQuery(latex=topics[0][1]))
            if planned.maxsim is None or not planned.maxsim.in_lists:
                raise SystemExit(f"{mode}: the node cannot score MaxSim: {services[mode].plugin.support.note}")
            if nodes[1:] != ["lists"]:  # the rescorer's second request: the lists bring no scores
                services[mode].plan_variant = _rescorer_only
        queries = [HybridQuery(latex=latex, highlight=False) for _, latex in topics]
        if args.hybrid:
            first = alias_name(args.modes[0].split(":")[0], "equations")
            queries = hybrid_queries(client, first, args.hybrid)
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
    """The MaxSim ranker's formula lists of every topic (``--prefix``), replayed interleaved: without MaxSim
    (``none``), with the rescorer's second request for the lists' top 15 + 15 (``second``: 30 candidates, as the fused
    window), with the lists bringing the scores of their 100 + 100 hits (``lists-all``: the request without its window
    rescore), of their top hits alone (``lists``, as the engine sends them), and with the extension pointed at an
    unmapped field (``nofield``: its cost without the arithmetic); client and node CPU per query."""
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
        alias = service.equations_alias
        cases = []
        for _, latex in topics:
            query = HybridQuery(latex=latex, highlight=False)
            formula = service.formulas.get(read_query_variables(latex))
            lists = service.requests(query)
            if "ext" not in str(lists):
                raise SystemExit(f"the lists cannot bring MaxSim on {alias}: {service.plugin.support.note}")
            service.plan_variant = _rescorer_only
            plain = service.requests(query)
            service.plan_variant = None
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
            fields = with_structure(doc["_source"])  # the derived fields are not in the source (mapping version 8)
            body = with_node_vectors_field(fields, encoded(fields.get("mathml")))
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
    moves behind the copies it ties with, so run it again until it writes nothing. With ``--hybrid N``, the formula
    lists of N combined queries drawn from the index (as ``maxsimcost --hybrid N``) instead of the topics'."""
    from elasticsearch.helpers import bulk
    from eqsearch.engine.index.documents import with_node_vectors_field
    from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD, NODE_VECTORS_MAPPING
    from eqsearch.engine.model.nodes import load_node_encoder
    from eqsearch.engine.search.pattern_filter import FORMULA_LISTS
    from eqsearch.engine.search.requests import ranked_lists

    client, _ = connect(EsConfig.from_env())
    ranking = get_ranker(args.ranker)
    node_encoder = load_node_encoder(None, output=ranking.maxsim_nodes)
    alias = alias_name(args.prefix, "equations")
    ids: set[str] = set()
    with KatexConverter() as converter:
        service = SearchService(client, load_encoder(None), converter, index_prefix=args.prefix, ranking=ranking)
        queries = [HybridQuery(latex=latex, highlight=False) for _, latex in read_formula_file(args.topics, "topic")]
        if args.hybrid:
            queries = hybrid_queries(client, alias, args.hybrid)
        for query in queries:
            searches = service.requests(query)
            for name, ranked in ranked_lists(client, alias, searches).lists.items():
                if name in FORMULA_LISTS:
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
