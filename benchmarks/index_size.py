"""Benchmark: what an equations index costs, field by field, and what the vector field's quantized variants keep.

``fields``: Elasticsearch's ``_disk_usage`` analysis of a prefix's equations index (its primaries, one shard or many),
bytes per equation for each field and each of its structures (``_source`` and other stored fields, the inverted index,
doc values, norms, points, kNN vectors), largest first; with ``--source`` also the ``_source`` of a sample of documents
split by top-level key (raw JSON bytes before compression: what each key adds to the stored block).

``vectors``: the index's formula vectors copied into one small index per ``index_options`` type (``hnsw``,
``int8_hnsw``, ``int4_hnsw``, ``bbq_hnsw``, with ``rescore_vector`` oversampling where asked, and ``byte_hnsw``: an
int8 field, ``hnsw`` over vectors rounded as the engine's writers round them, `engine.index.vectors`), each searched
with the same queries (each document's own vector moved by Gaussian noise, as ``search.py`` does) at each
``--candidates``, and scored against the exact top 10 computed here in numpy: recall@10 by id and by score (a hit
counts where its exact cosine reaches the exact 10th's: among copies of one formula, which share a vector, the top 10
is a draw that recall by id counts as misses), the kNN vectors' bytes per vector and per equation, and the client's
median milliseconds per query. ``--m`` and ``--ef-construction`` shape the graphs; ``--distinct`` indexes one vector
per distinct value (what a graph without copies would cost and find). A quantized type keeps the float vectors on disk
too (for rescoring and merges) beside its quantized copy; what a search reads from memory is the quantized copy and
the graph. Where the node's data folder is on this machine (a local node), each variant's files are also summed by
Lucene extension, so that the float vectors (``.vec``), the quantized ones (``.veq``, ``.veb``) and the graph
(``.vex``) are told apart (inside a compound file, by its entries table). Run from the repository root::

    .venv/bin/python benchmarks/index_size.py fields --prefix P [--source 2000] [--merge]
    .venv/bin/python benchmarks/index_size.py vectors --prefix P --types hnsw byte_hnsw bbq_hnsw --oversample 0 3 \
        [--candidates 100 600] [--m 32] [--distinct]
    .venv/bin/python benchmarks/index_size.py spans --prefix P --bytes 8 6 5
    .venv/bin/python benchmarks/index_size.py fetch --indices P-equations-v3 P-equations-v4 [--pages 500 --size 20]

``spans``: the sub-expression hashes' postings (``structure_spans``) per equation with the hash cut shorter and
written in base64 instead of 16 hex digits (what a shorter span key would save; each equation's spans made anew from
its MathML), each encoding indexed alone and force-merged.

``fetch``: result pages read back (``ids`` searches returning their sources) from indices of the same documents
stored with different ``index.codec``, interleaved: the median client and node milliseconds a page.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import time
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from elasticsearch.helpers import bulk, scan
from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import SPANS_FIELD, VECTOR_FIELD, alias_name
from eqsearch.engine.index.vectors import byte_vector

PARTS = (
    "stored_fields_in_bytes",
    "inverted_index",
    "doc_values_in_bytes",
    "norms_in_bytes",
    "points_in_bytes",
    "knn_vectors_in_bytes",
    "term_vectors_in_bytes",
)


def _concrete(client: Any, prefix: str) -> str:
    return next(iter(client.indices.get_alias(name=alias_name(prefix, "equations"))))


def _merge_for_real(client: Any, index: str) -> None:
    """Merge ``index`` into one segment even where it is one already: one document written again as it is (its
    vectors included), then a force-merge, which drops the ``_recovery_source`` that Elasticsearch keeps after recent
    writes once the retention lease has passed them (give a fresh index a minute first)."""
    query = {"size": 1, "_source": {"exclude_vectors": False}}
    hit = client.search(index=index, body=query)["hits"]["hits"][0]
    client.index(index=index, id=hit["_id"], document=hit["_source"], refresh=True)
    client.options(request_timeout=3600).indices.forcemerge(index=index, max_num_segments=1)


def fields(args: argparse.Namespace) -> None:
    client, _ = connect(EsConfig.from_env())
    index = _concrete(client, args.prefix)
    if args.merge:
        _merge_for_real(client, index)
    count = client.count(index=index)["count"]
    usage = client.options(request_timeout=1800).indices.disk_usage(index=index, run_expensive_tasks=True)[index]
    per_field = []
    for name, field in usage["fields"].items():
        parts = {}
        for part in PARTS:
            value = field.get(part)
            if isinstance(value, dict):  # the inverted index: its total
                value = value.get("total_in_bytes")
            if value:
                parts[part.removesuffix("_in_bytes")] = round(value / count, 1)
        per_field.append((field["total_in_bytes"] / count, name, parts))
    per_field.sort(reverse=True)
    print(
        json.dumps(
            {
                "index": index,
                "equations": count,
                "store_bytes_per_equation": round(usage["store_size_in_bytes"] / count, 1),
                "fields_bytes_per_equation": round(usage["all_fields"]["total_in_bytes"] / count, 1),
            }
        )
    )
    for per_equation, name, parts in per_field[: args.top]:
        print(json.dumps({"field": name, "bytes_per_equation": round(per_equation, 1), **parts}))
    if args.source:
        sizes: dict[str, list[int]] = defaultdict(list)
        query = {"query": {"match_all": {}}, "_source": {"exclude_vectors": False}}
        for k, hit in enumerate(scan(client, index=index, query=query, size=500)):
            if k >= args.source:
                break
            for key, value in hit["_source"].items():
                sizes[key].append(len(json.dumps({key: value}, ensure_ascii=False).encode()) - 2)
        seen = max((len(v) for v in sizes.values()), default=0)
        keys = sorted(sizes.items(), key=lambda item: -sum(item[1]))
        for key, values in keys:
            print(json.dumps({"source_key": key, "raw_bytes_per_equation": round(sum(values) / seen, 1)}))


def _vectors(client: Any, index: str, limit: int) -> tuple[list[str], np.ndarray]:
    ids, rows = [], []
    query = {
        "query": {"exists": {"field": VECTOR_FIELD}},
        "_source": {"includes": [VECTOR_FIELD], "exclude_vectors": False},
    }
    for hit in scan(client, index=index, query=query, size=500):
        ids.append(hit["_id"])
        rows.append(hit["_source"][VECTOR_FIELD])
        if len(ids) >= limit:
            break
    return ids, np.asarray(rows, dtype=np.float32)


#: Lucene's files of the vector formats, by extension: float vectors, quantized ones (scalar, binary), the graph.
VECTOR_FILES = (".vec", ".veq", ".veb", ".vex")


def _file_bytes(client: Any, index: str) -> dict[str, int]:
    """The index's vector files' bytes by extension, read from a local node's data folder (empty elsewhere)."""
    uuid = client.indices.get_settings(index=index)[index]["settings"]["index"]["uuid"]
    paths = client.nodes.stats(node_id="_local", metric="fs")["nodes"]
    sizes: dict[str, int] = defaultdict(int)
    for node in paths.values():
        for data in node["fs"]["data"]:
            for file in Path(data["path"], "indices", uuid).glob("*/index/*"):
                entries = _compound_entries(file) if file.suffix == ".cfe" else {file.name: file.stat().st_size}
                for name, size in entries.items():
                    suffix = Path(name).suffix
                    if suffix in VECTOR_FILES:
                        sizes[suffix] += size
    return dict(sizes)


def _compound_entries(table: Path) -> dict[str, int]:
    """The sub-files of a Lucene compound file and their lengths, from its entries table (``.cfe``: a codec header,
    then a vInt count and, per entry, a name, a long offset and a long length)."""
    data = table.read_bytes()
    at = 4  # the header's magic

    def vint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    def string() -> str:
        nonlocal at
        length = vint()
        at += length
        return data[at - length : at].decode("utf-8")

    string()  # the codec's name
    at += 4 + 16  # its version, the segment's id
    at += 1 + data[at]  # the suffix
    entries = {}
    for _ in range(vint()):
        name = string()
        length = int.from_bytes(data[at + 8 : at + 16], "little")  # Lucene writes little-endian longs
        at += 16
        entries[name] = length
    return entries


#: Two exact cosines closer than this are a tie (copies of one formula have the same vector).
TIE = 1e-5


def vectors(args: argparse.Namespace) -> None:
    client, _ = connect(EsConfig.from_env())
    source = _concrete(client, args.prefix)
    similarity = client.indices.get_mapping(index=source)[source]["mappings"]["properties"][VECTOR_FIELD]["similarity"]
    ids, matrix = _vectors(client, source, args.limit)
    units = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    rng = np.random.default_rng(0)
    picked = rng.choice(len(units), size=min(args.queries, len(units)), replace=False)
    noise = rng.normal(size=(len(picked), units.shape[1])).astype(np.float32) * 0.15 / np.sqrt(units.shape[1])
    queries = units[picked] + noise
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    # --distinct: one vector per distinct value in the graph (its copies would share its score), scored against the
    # exact top 10 of the distinct vectors
    first = np.sort(np.unique(units.round(5), axis=0, return_index=True)[1])
    distinct, equations = len(first), len(ids)
    if args.distinct:
        ids, matrix, units = [ids[k] for k in first], matrix[first], units[first]
    sims = queries @ units.T
    exact = np.argsort(-sims, axis=1)[:, :10]
    tenth = np.take_along_axis(sims, exact, axis=1)[:, -1]
    row_of = {doc: row for row, doc in enumerate(ids)}
    print(
        json.dumps(
            {
                "index": source,
                "vectors": equations,
                "distinct_vectors": distinct,
                "indexed": len(ids),
                "dims": int(units.shape[1]),
                "queries": len(picked),
                # vectors tied with the exact 10th: among copies of one formula the top 10 is a draw
                "ties_at_10th_median": float(np.median((sims >= tenth[:, None] - TIE).sum(axis=1))),
            }
        )
    )
    for kind, oversample in ((k, o) for k in args.types for o in (args.oversample if k != "hnsw" else [0])):
        graph = {"m": args.m, "ef_construction": args.ef_construction}
        began = time.perf_counter()
        name = _vector_variant(client, args.prefix, kind, oversample, graph, ids, matrix, similarity)
        built = time.perf_counter() - began
        byte = kind == "byte_hnsw"
        for candidates in args.candidates:
            found, took = [], []
            for query in queries:
                began = time.perf_counter()
                knn = {
                    "field": VECTOR_FIELD,
                    "query_vector": byte_vector(query) if byte else query.tolist(),
                    "k": 10,
                    "num_candidates": candidates,
                }
                hits = client.search(index=name, knn=knn, size=10, source=False)["hits"]["hits"]
                took.append((time.perf_counter() - began) * 1000)
                found.append([hit["_id"] for hit in hits])
            # by id: the exact top 10's ids found (a tie broken otherwise counts as a miss); by score: hits whose
            # exact cosine reaches the exact 10th's (what a reader of the list can tell apart)
            by_id = statistics.mean(
                len(set(hits) & {ids[k] for k in row}) / 10 for hits, row in zip(found, exact, strict=True)
            )
            by_score = statistics.mean(
                sum(sims[q, row_of[hit]] >= tenth[q] - TIE for hit in hits) / 10 for q, hits in enumerate(found)
            )
            print(
                json.dumps(
                    {
                        "type": kind,
                        "oversample": oversample,
                        "num_candidates": candidates,
                        "recall_at_10": round(by_id, 4),
                        "recall_at_10_by_score": round(by_score, 4),
                        "client_ms_median": round(statistics.median(took), 2),
                    }
                )
            )
        usage = client.indices.disk_usage(index=name, run_expensive_tasks=True)[name]
        knn_bytes = usage["fields"][VECTOR_FIELD].get("knn_vectors_in_bytes", 0)
        files = _file_bytes(client, name)
        print(
            json.dumps(
                {
                    "type": kind,
                    "oversample": oversample,
                    "build_s": round(built, 1),
                    "knn_bytes_per_vector": round(knn_bytes / len(ids), 1),
                    "knn_bytes_per_equation": round(knn_bytes / equations, 1),
                    **(
                        {"files_bytes_per_vector": {k: round(v / len(ids), 1) for k, v in files.items()}}
                        if files
                        else {}
                    ),
                }
            )
        )
        if not args.keep:
            client.indices.delete(index=name)


def _vector_variant(
    client: Any,
    prefix: str,
    kind: str,
    oversample: float,
    graph: dict[str, int],
    ids: list[str],
    matrix: np.ndarray,
    similarity: str,
) -> str:
    """One small index holding ``matrix`` in a vector field of ``index_options.type`` ``kind`` (``byte_hnsw``: an int8
    field over vectors rounded as the engine rounds them) with the HNSW ``graph`` options (``m``, ``ef_construction``),
    force-merged to one segment; its name."""
    byte = kind == "byte_hnsw"
    options: dict[str, Any] = {"type": "hnsw" if byte else kind, **graph}
    if oversample:
        options["rescore_vector"] = {"oversample": oversample}
    name = f"{prefix}-vectors-{kind}-{oversample}".lower()
    client.indices.delete(index=name, ignore_unavailable=True)
    mapping = {"type": "dense_vector", "dims": int(matrix.shape[1]), "similarity": similarity, "index_options": options}
    if byte:
        mapping["element_type"] = "byte"
    client.indices.create(
        index=name,
        settings={"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": -1, "compound_format": False},
        mappings={"properties": {VECTOR_FIELD: mapping}},
    )
    actions = (
        {"_index": name, "_id": doc, "_source": {VECTOR_FIELD: byte_vector(row) if byte else row.tolist()}}
        for doc, row in zip(ids, matrix, strict=True)
    )
    bulk(client.options(request_timeout=600), actions, chunk_size=1000)
    client.indices.refresh(index=name)
    client.options(request_timeout=1800).indices.forcemerge(index=name, max_num_segments=1)
    return name


def _short_span(span: str, nbytes: int) -> str:
    """A span key (kind letter + 16 hex digits of its hash) with the hash cut to ``nbytes`` bytes, in base64."""
    digest = bytes.fromhex(span[1:])[:nbytes]
    return span[0] + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def spans(args: argparse.Namespace) -> None:
    """The spans' postings bytes per equation with shorter hashes: each equation's spans made anew from its stored
    MathML and LaTeX (`structure_fields`), indexed alone in one small index per encoding, force-merged, measured."""
    client, _ = connect(EsConfig.from_env())
    index = _concrete(client, args.prefix)
    made = []
    for hit in scan(client, index=index, query={"query": {"match_all": {}}}, _source=["mathml", "latex"], size=1000):
        source = hit["_source"]
        made.append(structure_fields(source.get("mathml"), source.get("latex") or "")[SPANS_FIELD])
        if len(made) >= args.limit:
            break
    encodings = {"hex16 (today)": lambda span: span, **{f"b64_{n}": partial(_short_span, nbytes=n) for n in args.bytes}}
    for name, encode in encodings.items():
        target = f"{args.prefix}-spans-measure"
        client.options(ignore_status=404).indices.delete(index=target)
        client.indices.create(
            index=target,
            settings={"number_of_shards": 1, "number_of_replicas": 0},
            mappings={"_source": {"enabled": False}, "properties": {"s": {"type": "keyword", "doc_values": False}}},
        )
        bulk(client, ({"_index": target, "s": [encode(span) for span in found]} for found in made), chunk_size=2000)
        client.indices.forcemerge(index=target, max_num_segments=1)
        usage = client.options(request_timeout=1800).indices.disk_usage(index=target, run_expensive_tasks=True)
        per_equation = usage[target]["fields"]["s"]["total_in_bytes"] / len(made)
        spans_each = sum(map(len, made)) / len(made)
        print(
            json.dumps(
                {
                    "encoding": name,
                    "equations": len(made),
                    "spans_per_equation": round(spans_each, 1),
                    "bytes_per_equation": round(per_equation, 1),
                }
            )
        )
        client.indices.delete(index=target)


def fetch(args: argparse.Namespace) -> None:
    """The cost of reading pages of documents back (what a result page's fetch does) from indices holding the same
    documents stored differently (``index.codec``), side by side: the same random pages, the indices interleaved."""
    client, _ = connect(EsConfig.from_env())
    ids = [hit["_id"] for hit in scan(client, index=args.indices[0], query={"query": {"match_all": {}}}, _source=False)]
    rng = np.random.default_rng(0)
    pages = [rng.choice(ids, size=args.size, replace=False).tolist() for _ in range(args.pages)]
    took: dict[str, list[float]] = defaultdict(list)
    client_ms: dict[str, list[float]] = defaultdict(list)
    for page in pages:
        for index in args.indices:
            began = time.perf_counter()
            found = client.search(index=index, query={"ids": {"values": page}}, size=args.size)
            client_ms[index].append((time.perf_counter() - began) * 1000)
            took[index].append(found["took"])
    for index in args.indices:
        codec = client.indices.get_settings(index=index, name="index.codec", include_defaults=True)[index]
        name = codec.get("settings", codec.get("defaults", {})).get("index", {}).get("codec", "default")
        print(
            json.dumps(
                {
                    "index": index,
                    "codec": name,
                    "pages": len(pages),
                    "documents_a_page": args.size,
                    "client_ms_median": round(statistics.median(client_ms[index]), 2),
                    "node_took_ms_median": statistics.median(took[index]),
                    "node_took_ms_mean": round(statistics.mean(took[index]), 2),
                }
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    by_field = commands.add_parser("fields", help="bytes per equation, field by field")
    by_field.add_argument("--prefix", required=True)
    by_field.add_argument("--top", type=int, default=20, help="how many fields to print")
    by_field.add_argument("--source", type=int, default=0, help="also split _source by key over this many documents")
    by_field.add_argument(
        "--merge", action="store_true", help="first merge the index for real (rewrites one document as it is)"
    )
    by_vector = commands.add_parser("vectors", help="recall@10 and bytes of quantized vector variants")
    by_vector.add_argument("--prefix", required=True)
    by_vector.add_argument("--types", nargs="+", default=["hnsw", "int8_hnsw", "int4_hnsw", "bbq_hnsw"])
    by_vector.add_argument("--oversample", nargs="+", type=float, default=[0, 3])
    by_vector.add_argument("--queries", type=int, default=200)
    by_vector.add_argument(
        "--candidates", nargs="+", type=int, default=[600], help="num_candidates, each in turn (the default's: 600)"
    )
    by_vector.add_argument("--limit", type=int, default=1_000_000, help="at most this many vectors")
    by_vector.add_argument("--m", type=int, default=16, help="HNSW links per node (the engine's: 16)")
    by_vector.add_argument("--ef-construction", type=int, default=100, help="HNSW build beam (the engine's: 100)")
    by_vector.add_argument("--distinct", action="store_true", help="index one vector per distinct value")
    by_vector.add_argument("--keep", action="store_true", help="keep the variant indices")
    by_span = commands.add_parser("spans", help="the spans' postings bytes with shorter hashes")
    by_span.add_argument("--prefix", required=True)
    by_span.add_argument("--bytes", nargs="+", type=int, default=[8, 6, 5], help="hash bytes of each variant")
    by_span.add_argument("--limit", type=int, default=1_000_000, help="at most this many equations")
    by_fetch = commands.add_parser("fetch", help="pages of documents read back from differently stored indices")
    by_fetch.add_argument("--indices", nargs="+", required=True, help="concrete indices of the same documents")
    by_fetch.add_argument("--pages", type=int, default=500)
    by_fetch.add_argument("--size", type=int, default=20, help="documents a page")
    args = parser.parse_args()
    {"fields": fields, "vectors": vectors, "spans": spans, "fetch": fetch}[args.command](args)


if __name__ == "__main__":
    main()
