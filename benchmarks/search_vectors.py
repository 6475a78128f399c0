"""The search benchmark's vector-search quality: ``decide`` (recall, latency and size of the vector mapping
variants, and collapse versus nested grouping, against brute force) and ``recall`` (formula search's recall@10 on a
kept ``latency`` index per candidate depth and ``num_candidates`` factor).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
from eqsearch.engine.index import IndexOptions, bulk_index, index_definition
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService
from search_load import (
    base_client,
    base_documents,
    build_index,
    document,
    document_eq_id,
    exact_top,
    kept_index,
    replicate,
    usable_queries,
)
from search_measure import emit, index_size, percentiles
from search_service import client_from_env


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
