"""Benchmark: the structural list started from kNN on structure-bag vectors (a window of W), against its rare terms.

The default ranker's structural list starts from BM25 over the query's rare structural terms (document frequency at
most 5%), then gives its window the full BM25 and the sub-expression rerank. The variant measured here starts it
from the W equations whose structure-bag vectors (`engine.model.structure_bag`: a 64-d student of the structural
BM25) are nearest the query's, by kNN on a dense field of their own (`STRUCTURE_VECTOR_FIELD`), then rescores that
window exactly as before (`FormulaRanking.structure_knn`).

``build`` copies an indexed formula collection (an ``eqsearch evaluate formulas --keep`` prefix: the ARQMath-1
development half) and a distractor index (equations of other sources, e.g. the hybrid evaluation's papers) into one
new index, each equation with its structure-bag vector computed from its stored structural terms, and the bundle's
identity in ``_meta`` (``structure_encoder``). ``recall``: for every topic, the share of the plain structural list's
top 10 and top 100 (the default ranker's request, first stage and rerank included) found in the kNN window of W.
``quality``: the prime measures of the default and of the kNN-window variant for each W, on the same index, at the
evaluation's depth (1,000) and at production's candidate depth (100). ``forward`` copies ``--into`` (from the cluster
at ``--from-url``, default the configured one) under ``--to``, each equation with its forward index made from its
stored structural terms (mapping version 7): then ``cost --forward`` and ``breakdown --forward`` measure each ranking
with the window BM25 of today's plugin requests (posting lists) beside the same with the plugin's ``eqsearch_bm25``
(the forward index); with ``--shard-rare`` too, the default whose rare terms the shard chooses (plugin 1.3's
``eqsearch_terms``: no ``_termvectors`` request) and the default whose client chooses them from an empty term cache
(a ``_termvectors`` request every query, as for a query of new rare terms). Run from the repository root::

    .venv/bin/python benchmarks/experiments/structure_window.py build --prefix eqsearch-eval-XXXX \
        --distractors hybdev-equations --into h26bag --bundle DIR
    .venv/bin/python benchmarks/experiments/structure_window.py recall --into h26bag --bundle DIR
    .venv/bin/python benchmarks/experiments/structure_window.py quality --into h26bag --bundle DIR
    export EQSEARCH_ES_URL=http://127.0.0.1:9260
    .venv/bin/python benchmarks/experiments/structure_window.py forward --into h26bag \
        --from-url http://127.0.0.1:9200 --to h26fwd
    .venv/bin/python benchmarks/experiments/structure_window.py cost --into h26fwd \
        --bundle DIR --windows 300 --forward
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.index.forward_index import analysed_terms, forward_index_value
from eqsearch.engine.index.mappings import (
    FORWARD_INDEX_FIELD,
    FORWARD_INDEX_SINCE,
    STRUCTURE_FIELD,
    STRUCTURE_VECTOR_FIELD,
    IndexOptions,
    alias_name,
    equations_definition,
    structure_vector_mapping,
)
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.model.patterns import read_query_variables
from eqsearch.engine.model.structure_bag import stored_structure
from eqsearch.engine.search import query as query_module
from eqsearch.engine.search.query import HybridQuery, ranking_only
from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
from eqsearch.engine.search.service import SearchService
from eqsearch.evaluation.formulas import formula_ranking, read_formula_file
from eqsearch.evaluation.trec import evaluate_run, read_qrels

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the siblings imported below
from devset import add_dev_files, fill_dev_files
from plugin_measure import create_equations_copy, equations_mapping, interleaved_cpu, node_cpu_ms

#: A scan of every document with its vectors (Elasticsearch 9 leaves dense vectors out of ``_source`` by default:
#: ``index.mapping.exclude_source_vectors``; a copy made without this has none).
EVERYTHING = {"query": {"match_all": {}}, "_source": {"exclude_vectors": False}}


def build(args: argparse.Namespace) -> None:
    """The collection and the distractors in one new index, every equation with its structure-bag vector."""
    from elasticsearch.helpers import bulk, scan

    client, _ = connect(EsConfig.from_env())
    bag = load_encoder(args.bundle)
    source = alias_name(args.prefix, "equations")
    mappings = equations_mapping(client, args.prefix)
    mappings["properties"][STRUCTURE_VECTOR_FIELD] = structure_vector_mapping(bag.dim)
    mappings["_meta"] = {**mappings.get("_meta", {}), "structure_encoder": bag.identity}
    target = create_equations_copy(client, args.into, mappings)
    began, counts = time.process_time(), {"collection": 0, "distractors": 0, "without_terms": 0}

    def documents():
        for name, index in (("collection", source), ("distractors", args.distractors)):
            if index is None:
                continue
            batch: list[dict[str, Any]] = []
            for doc in scan(client, index=index, query=EVERYTHING):
                batch.append(doc)
                if len(batch) == 512:
                    yield from encoded(batch, name)
                    batch = []
            yield from encoded(batch, name)

    def encoded(batch: list[dict[str, Any]], name: str):
        structures = [
            stored_structure(d["_source"].get("structure") or "", d["_source"].get("structure_spans") or [])
            for d in batch
        ]
        vectors = bag.encode_structures(structures)
        for doc, structure, vector in zip(batch, structures, vectors, strict=True):
            body = dict(doc["_source"])
            counts[name] += 1
            if structure.tokens:
                body[STRUCTURE_VECTOR_FIELD] = [round(float(x), 6) for x in vector]
            else:
                counts["without_terms"] += 1
            yield {"_index": target, "_id": doc["_id"], "_source": body}

    bulk(client, documents(), chunk_size=500, request_timeout=120)
    client.indices.put_settings(index=target, settings={"refresh_interval": "1s"})
    client.indices.refresh(index=target)
    client.indices.forcemerge(index=target, max_num_segments=1, request_timeout=1200)
    print(json.dumps({
        "into": args.into,
        "equations": client.count(index=target)["count"],
        **counts,
        "structure_encoder": bag.identity,
        "cpu_s": round(time.process_time() - began, 1),
    }))  # fmt: skip


def scale(args: argparse.Namespace) -> None:
    """``--copies`` copies of every equation of ``--into`` under ``--to``, for cost at scale: ids and paper ids
    suffixed, both vectors of every copy after the first moved by Gaussian noise (0.15 of the norm over the square root
    of the dimension, as ``search.py`` does to the embedding) and renormalised, so that HNSW does not meet thousands
    of identical points. The context vectors are left out (formula queries never read them)."""
    import numpy as np
    from elasticsearch.helpers import bulk, scan
    from eqsearch.engine.index.mappings import CONTEXT_VECTOR_FIELD, VECTOR_FIELD

    client, _ = connect(EsConfig.from_env())
    source = alias_name(args.into, "equations")
    mappings = equations_mapping(client, args.into)
    mappings["properties"].pop(CONTEXT_VECTOR_FIELD, None)
    target = create_equations_copy(client, args.to, mappings)
    docs = [d for d in scan(client, index=source, query=EVERYTHING)]
    rng = np.random.default_rng(0)
    began = time.monotonic()

    def moved(vector: Any) -> Any:
        v = np.asarray(vector, dtype=np.float32)
        v = v + rng.normal(size=v.shape).astype(np.float32) * 0.15 * float(np.linalg.norm(v)) / np.sqrt(v.size)
        return [round(float(x), 5) for x in v / max(float(np.linalg.norm(v)), 1e-12)]

    def actions():
        for copy in range(args.copies):
            for doc in docs:
                body = {k: v for k, v in doc["_source"].items() if k != CONTEXT_VECTOR_FIELD}
                eq_id = f"{doc['_id']}~{copy}" if copy else doc["_id"]
                body["eq_id"] = eq_id
                if copy:
                    body["paper_id"] = f"{body.get('paper_id')}~{copy}"
                    for field in (VECTOR_FIELD, STRUCTURE_VECTOR_FIELD):
                        if body.get(field):
                            body[field] = moved(body[field])
                yield {"_index": target, "_id": eq_id, "_source": body}

    bulk(client.options(request_timeout=300), actions(), chunk_size=1000)
    loaded = time.monotonic()
    client.indices.put_settings(index=target, settings={"refresh_interval": "1s"})
    client.indices.refresh(index=target)
    client.options(request_timeout=3600).indices.forcemerge(index=target, max_num_segments=1)
    print(json.dumps({
        "to": args.to,
        "equations": client.count(index=target)["count"],
        "load_s": round(loaded - began),
        "merge_s": round(time.monotonic() - loaded),
    }))  # fmt: skip


def forward(args: argparse.Namespace) -> None:
    """A copy of ``--into`` (on ``--from-url``, default the configured cluster) under ``--to``, every equation with
    its forward index made from its stored structural terms, the mapping's version that of the forward index."""
    import base64

    from elasticsearch import Elasticsearch
    from elasticsearch.helpers import bulk, scan

    client, _ = connect(EsConfig.from_env())
    source = Elasticsearch(args.from_url, request_timeout=120) if args.from_url else client
    mappings = equations_mapping(source, args.into)
    field = equations_definition(IndexOptions())["mappings"]["properties"][FORWARD_INDEX_FIELD]
    mappings["properties"][FORWARD_INDEX_FIELD] = field
    mappings["_meta"] = {**mappings.get("_meta", {}), "mapping_version": FORWARD_INDEX_SINCE}
    target = create_equations_copy(client, args.to, mappings)
    began, sizes = time.process_time(), []

    def actions():
        for doc in scan(source, index=alias_name(args.into, "equations"), query=EVERYTHING):
            body = dict(doc["_source"])
            body[FORWARD_INDEX_FIELD] = forward_index_value(analysed_terms(body.get(STRUCTURE_FIELD) or ""))
            sizes.append(len(base64.b64decode(body[FORWARD_INDEX_FIELD])))
            yield {"_index": target, "_id": doc["_id"], "_source": body}

    bulk(client.options(request_timeout=300), actions(), chunk_size=500)
    client.indices.put_settings(index=target, settings={"refresh_interval": "1s"})
    client.indices.refresh(index=target)
    client.options(request_timeout=3600).indices.forcemerge(index=target, max_num_segments=1)
    print(json.dumps({
        "to": args.to,
        "equations": client.count(index=target)["count"],
        "forward_index_bytes": {"mean": round(statistics.mean(sizes), 1), "median": statistics.median(sizes)},
        "cpu_s": round(time.process_time() - began, 1),
    }))  # fmt: skip


def _service(
    client: Any,
    encoder: Any,
    converter: Any,
    into: str,
    ranking: Any,
    bag: Any,
    depth: int,
    forward: bool = True,
    shard_rare: bool = False,
) -> Any:
    service = SearchService(
        client,
        encoder,
        converter,
        index_prefix=into,
        ranking=ranking,
        candidate_depth=depth,
        structure_encoder=bag,
        plugin=None,
    )
    service.plugin.use_forward_index = forward
    service.plugin.use_shard_rare_terms = shard_rare  # the client's choice from _termvectors unless asked
    return service


class FreshTerms:
    """A service whose term-frequency cache is emptied before every search, as for a query whose rare terms no
    earlier query had: the default's ``_termvectors`` request is then sent each time."""

    def __init__(self, service: SearchService) -> None:
        self.service = service
        self.plugin = service.plugin

    def search(self, query: HybridQuery) -> Any:
        with self.service.term_statistics._lock:
            self.service.term_statistics._cache.clear()
        return self.service.search(query)


def _ids(client: Any, index: str, body: dict[str, Any]) -> list[str]:
    return [hit["fields"]["eq_id"][0] for hit in client.search(index=index, body=body)["hits"]["hits"]]


def recall(args: argparse.Namespace) -> None:
    """Share of the plain structural list's top 10 / 100 inside the kNN window of W (HNSW as sent, and exact)."""
    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    bag = load_encoder(args.bundle)
    index = alias_name(args.into, "equations")
    default = get_ranker(DEFAULT_RANKER)
    knn_ranking = dataclasses.replace(default, structure_knn=max(args.windows))
    shares: dict[str, list[float]] = {}
    with KatexConverter() as converter:
        encoder = load_encoder(None)
        plain = _service(client, encoder, converter, args.into, default, None, 100)
        staged = _service(client, encoder, converter, args.into, knn_ranking, bag, 100)
        for _, latex in topics:
            query = HybridQuery(latex=latex, highlight=False)
            formula = plain.formulas.get(read_query_variables(latex))
            (name, body), *_ = plain._searches(query, formula, 100, [])
            assert name == "structure"
            reference = _ids(client, index, body)
            top = {10: set(reference[:10]), 100: set(reference[:100])}
            vector = staged.formulas.get(read_query_variables(latex)).structure_vector
            if vector is None:
                continue
            for window in args.windows:
                for label, candidates in (
                    ("hnsw", query_module.num_candidates(window, args.factor)),
                    ("exact", 10_000),
                ):
                    knn = {"field": STRUCTURE_VECTOR_FIELD, "query_vector": [float(x) for x in vector], "k": window,
                           "num_candidates": max(candidates, window)}  # fmt: skip
                    found = set(_ids(client, index, ranking_only({"knn": knn, "size": window})))
                    for k, wanted in top.items():
                        if wanted:
                            shares.setdefault(f"W{window}_{label}_top{k}", []).append(len(wanted & found) / len(wanted))
    out = {key: round(statistics.fmean(values), 4) for key, values in sorted(shares.items())}
    print(json.dumps({"into": args.into, "topics": len(topics), "factor": args.factor, **out}))


def quality(args: argparse.Namespace) -> None:
    """The prime measures of the default and of its kNN-window variants on the same index (the window BM25 from
    the forward index where the plugin and the index allow; with ``--forward``, each also without it)."""
    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    qrels = read_qrels(args.qrels)
    bag = load_encoder(args.bundle)
    default = get_ranker(DEFAULT_RANKER)
    query_module.STRUCTURE_KNN_CANDIDATES_FACTOR = args.factor
    variants = [("default", default)] * (not args.no_default) + [
        (
            f"knn W={w} rerank {r} rare {q}",
            dataclasses.replace(default, structure_knn=w, rerank_window=r, structure_knn_rare=q),
        )
        for w in args.windows
        for r in args.reranks
        for q in args.rares
    ]
    with KatexConverter() as converter:
        encoder = load_encoder(None)
        for depth in args.depths:
            for (label, ranking), forward in itertools.product(variants, (False, True) if args.forward else (True,)):
                if depth >= 1000 and label.startswith("knn") and ranking.structure_knn < max(args.windows):
                    continue  # at depth 1,000 every window is 1,000 deep
                service = _service(client, encoder, converter, args.into, ranking, bag, depth, forward=forward)
                run = {t: [d for d, _ in formula_ranking(service, latex, depth)] for t, latex in topics}
                report = evaluate_run(run, qrels, topics=[t for t, _ in topics])
                means = {k: round(v, 4) for k, v in report.means.items()}
                label = f"{label} forward" if args.forward and forward else label
                print(json.dumps({"variant": label, "depth": depth, "factor": args.factor, **means}), flush=True)


def cost(args: argparse.Namespace) -> None:
    """Client + node CPU per formula query, side by side in interleaved rounds: the default (rare terms, with the
    plugin where the node has it), the kNN-window variants, and kNN alone (the ``embedding`` ranker); with
    ``--forward``, the default and the variants each twice: with the window BM25 from posting lists (today's plugin
    requests) and from the forward index (``... forward``; the index must have it, the plugin its rescorer)."""
    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    bag = load_encoder(args.bundle)
    default = get_ranker(DEFAULT_RANKER)
    query_module.STRUCTURE_KNN_CANDIDATES_FACTOR = args.factor
    rankings = {"default": default, "embedding": get_ranker("embedding")}
    rankings.update(
        {
            f"knn W={w} rare {q}": dataclasses.replace(default, structure_knn=w, structure_knn_rare=q)
            for w in args.windows
            for q in args.rares
        }
    )
    with KatexConverter() as converter:
        encoder = load_encoder(None)
        services = {}
        for mode, ranking in rankings.items():
            services[mode] = _service(client, encoder, converter, args.into, ranking, bag, 100, forward=False)
            if args.forward and mode != "embedding":
                services[f"{mode} forward"] = _service(client, encoder, converter, args.into, ranking, bag, 100)
                if not services[f"{mode} forward"].plugin.forward_index(alias_name(args.into, "equations")):
                    raise SystemExit("--forward: the index has no forward index, or the node no eqsearch_bm25")
        if args.shard_rare:  # the default with the forward index: rare terms chosen by the shard / by a fresh client
            services["default shard-rare"] = _service(
                client, encoder, converter, args.into, default, bag, 100, shard_rare=True
            )
            if not services["default shard-rare"].plugin.shard_rare_terms(alias_name(args.into, "equations")):
                raise SystemExit("--shard-rare: the index has no forward index, or the node no eqsearch_terms (1.3)")
            services["default forward fresh-terms"] = FreshTerms(
                _service(client, encoder, converter, args.into, default, bag, 100)
            )
        queries = [HybridQuery(latex=latex, highlight=False) for _, latex in topics]
        for service in services.values():  # prepare every formula, warm every cache and the node's
            for query in queries:
                service.search(query)
        per_query = interleaved_cpu(client, services, queries, args.rounds, args.repeat)
    out: dict[str, Any] = {
        "equations": client.count(index=alias_name(args.into, "equations"))["count"],
        "plugin": services["default"].plugin.active,
        "queries_per_round": args.repeat * len(queries),
        "rounds": args.rounds,
    }
    for mode in services:
        client_ms, node_ms = (statistics.median(per_query[mode][side]) for side in ("client", "node"))
        out[mode] = {
            "client_ms": round(client_ms, 2),
            "node_ms": round(node_ms, 2),
            "total_ms": round(client_ms + node_ms, 2),
        }
    for mode in [m for m in services if m != "embedding"]:
        out[f"{mode} / embedding"] = round(out[mode]["total_ms"] / out["embedding"]["total_ms"], 2)
    print(json.dumps(out))


def breakdown(args: argparse.Namespace) -> None:
    """Node CPU per structural request of the kNN first stage (W = the first ``--windows``), replayed alone in
    interleaved rounds: the kNN window only, + the BM25 rescore, + the sub-expression rescore (as sent); beside the
    default's structural request as sent; with ``--forward``, the requests as sent with the forward index too; with
    ``--shard-rare``, the default's with the shard choosing its rare terms, and its first stage alone collecting the
    top 10, 100 and 300 (the window): dynamic pruning (MaxScore) makes a deeper top cost more."""
    client, _ = connect(EsConfig.from_env())
    topics = read_formula_file(args.topics, "topic")
    bag = load_encoder(args.bundle)
    index = alias_name(args.into, "equations")
    default = get_ranker(DEFAULT_RANKER)
    query_module.STRUCTURE_KNN_CANDIDATES_FACTOR = args.factor
    bodies: dict[str, list[dict[str, Any]]] = {}
    with KatexConverter() as converter:
        encoder = load_encoder(None)
        knn_ranking = replace_knn(default, args.windows[0])
        services = [
            ("default", _service(client, encoder, converter, args.into, default, None, 100, forward=False)),
            ("knn", _service(client, encoder, converter, args.into, knn_ranking, bag, 100, forward=False)),
        ]
        if args.forward:
            services.append(("default forward", _service(client, encoder, converter, args.into, default, None, 100)))
            services.append(("knn forward", _service(client, encoder, converter, args.into, knn_ranking, bag, 100)))
        if args.shard_rare:
            shard = _service(client, encoder, converter, args.into, default, None, 100, shard_rare=True)
            services.append(("default shard-rare", shard))
        for _, latex in topics:
            query = HybridQuery(latex=latex, highlight=False)
            for name, service in services:
                formula = service.formulas.get(read_query_variables(latex))
                sent = dict(service._searches(query, formula, 100, []))
                body = sent["structure"]
                bodies.setdefault(f"{name} as sent", []).append(body)
                if name == "default":  # the reference: the kNN list of the same query
                    bodies.setdefault("the kNN list (embedding) as sent", []).append(sent["embedding"])
                if name == "default shard-rare":  # the paper ids too (before update 14), and its first stage alone
                    with_papers = {**body, "docvalue_fields": list(query_module.RANKING_FIELDS)}
                    bodies.setdefault("default shard-rare as sent, + paper_id", []).append(with_papers)
                    for top in (10, 100, 300):
                        first = {key: value for key, value in body.items() if key not in ("rescore", "docvalue_fields")}
                        bodies.setdefault(f"default first stage alone, top {top}, no fields", []).append(
                            {**first, "size": top}
                        )
                if name == "knn":
                    rescores = body["rescore"] if isinstance(body["rescore"], list) else [body["rescore"]]
                    bodies.setdefault("knn window only", []).append({k: v for k, v in body.items() if k != "rescore"})
                    bodies.setdefault("knn + BM25 rescore", []).append({**body, "rescore": rescores[0]})
    per: dict[str, list[float]] = {name: [] for name in bodies}
    for group in bodies.values():  # warm
        for body in group:
            client.search(index=index, body=body)
    for _ in range(args.rounds):
        for name, group in bodies.items():
            before = node_cpu_ms(client)
            for _ in range(args.repeat):
                for body in group:
                    client.search(index=index, body=body)
            per[name].append((node_cpu_ms(client) - before) / (args.repeat * len(group)))
    out = {name: round(statistics.median(values), 2) for name, values in per.items()}
    print(json.dumps({"into": args.into, "window": args.windows[0], "node_ms_per_request": out}))


def replace_knn(ranking: Any, window: int) -> Any:
    return dataclasses.replace(ranking, structure_knn=window)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, handler in (
        ("build", build),
        ("recall", recall),
        ("quality", quality),
        ("cost", cost),
        ("scale", scale),
        ("breakdown", breakdown),
        ("forward", forward),
    ):
        command = commands.add_parser(name)
        command.add_argument("--into", required=True, help="the prefix of the index with structure-bag vectors")
        command.add_argument("--prefix", help="build: the indexed collection's prefix")
        command.add_argument("--distractors", help="build: an index (or alias) of other equations")
        command.add_argument("--bundle", help="the structure-bag bundle directory")
        command.add_argument("--to", help="scale, forward: the new prefix")
        command.add_argument("--copies", type=int, default=17, help="scale: copies of each equation")
        add_dev_files(command)
        command.add_argument("--windows", type=int, nargs="+", default=[100, 300, 1000])
        command.add_argument("--reranks", type=int, nargs="+", default=[300], help="sub-expression rerank windows")
        command.add_argument("--rares", type=float, nargs="+", default=[0.0], help="rare-term shares of a union")
        command.add_argument("--no-default", action="store_true", help="quality: leave the default's rows out")
        command.add_argument("--depths", type=int, nargs="+", default=[1000, 100])
        command.add_argument("--rounds", type=int, default=5)
        command.add_argument("--repeat", type=int, default=3)
        command.add_argument("--factor", type=int, default=2, help="the kNN's num_candidates per window slot")
        command.add_argument("--from-url", help="forward: the cluster that holds --into (default: the configured one)")
        command.add_argument(
            "--forward", action="store_true", help="cost, breakdown, quality: with and without the forward index"
        )
        command.add_argument(
            "--shard-rare",
            action="store_true",
            help="cost, breakdown: also the default with its rare terms chosen by the shard (plugin 1.3), and with "
            "the client's choice from an empty term cache (a _termvectors request every query)",
        )
        command.set_defaults(handler=handler)
    args = parser.parse_args()
    fill_dev_files(args)
    args.handler(args)


if __name__ == "__main__":
    main()
