"""Benchmark: what an equations index costs, field by field, and what the vector field's quantized variants keep.

``fields``: Elasticsearch's ``_disk_usage`` analysis of a prefix's equations index (its primaries, one shard or many),
bytes per equation for each field and each of its structures (``_source`` and other stored fields, the inverted index,
doc values, norms, points, kNN vectors), largest first; with ``--source`` also the ``_source`` of a sample of documents
split by top-level key (raw JSON bytes before compression: what each key adds to the stored block).

``vectors``: the index's formula vectors copied into one small index per ``index_options`` type (``hnsw``,
``int8_hnsw``, ``int4_hnsw``, ``bbq_hnsw``, with ``rescore_vector`` oversampling where asked, and ``byte_hnsw``: an
int8 field, ``hnsw`` over vectors rounded as the engine's writers round them, `engine.index.vectors`), each searched
with the same queries (each document's own vector moved by Gaussian noise, as ``search.py`` does) and scored against
the exact top 10 computed here in numpy: recall@10, the kNN vectors' bytes per equation on disk, and the client's median
milliseconds per query. A quantized type keeps the float vectors on disk too (for rescoring and merges) beside its
quantized copy; what a search reads from memory is the quantized copy and the graph. Where the node's data folder is
on this machine (a local node), each variant's files are also summed by Lucene extension, so that the float vectors
(``.vec``), the quantized ones (``.veq``, ``.veb``) and the graph (``.vex``) are told apart (inside a compound file,
by its entries table). Run from the repository root::

    .venv/bin/python benchmarks/index_size.py fields --prefix P [--source 2000] [--merge]
    .venv/bin/python benchmarks/index_size.py vectors --prefix P --types hnsw byte_hnsw bbq_hnsw --oversample 0 3
    .venv/bin/python benchmarks/index_size.py spans --prefix P --bytes 8 6 5

``spans``: the sub-expression hashes' postings (``structure_spans``) per equation with the hash cut shorter and
written in base64 instead of 16 hex digits (what a shorter span key would save; each equation's spans made anew from
its MathML), each encoding indexed alone and force-merged.
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
    exact = np.argsort(-(queries @ units.T), axis=1)[:, :10]
    print(json.dumps({"index": source, "vectors": len(ids), "dims": int(units.shape[1]), "queries": len(picked)}))
    for kind in args.types:
        for oversample in args.oversample if kind != "hnsw" else [0]:
            byte = kind == "byte_hnsw"  # int8 vectors stored as such (element_type byte): no floats kept
            options: dict[str, Any] = {"type": "hnsw" if byte else kind}
            if oversample:
                options["rescore_vector"] = {"oversample": oversample}
            name = f"{args.prefix}-vectors-{kind}-{oversample}".lower()
            client.indices.delete(index=name, ignore_unavailable=True)
            mapping = {"type": "dense_vector", "dims": int(units.shape[1]), "similarity": similarity}
            if byte:
                mapping["element_type"] = "byte"
            mapping["index_options"] = options
            client.indices.create(
                index=name,
                settings={
                    "number_of_shards": 1,
                    "number_of_replicas": 0,
                    "refresh_interval": -1,
                    "compound_format": False,
                },
                mappings={"properties": {VECTOR_FIELD: mapping}},
            )
            actions = (
                {"_index": name, "_id": doc, "_source": {VECTOR_FIELD: byte_vector(row) if byte else row.tolist()}}
                for doc, row in zip(ids, matrix, strict=True)
            )
            bulk(client.options(request_timeout=600), actions, chunk_size=1000)
            client.indices.refresh(index=name)
            client.options(request_timeout=1800).indices.forcemerge(index=name, max_num_segments=1)
            found, took = [], []
            for query in queries:
                began = time.perf_counter()
                knn = {
                    "field": VECTOR_FIELD,
                    "query_vector": byte_vector(query) if byte else query.tolist(),
                    "k": 10,
                    "num_candidates": args.candidates,
                }
                hits = client.search(index=name, knn=knn, size=10, source=False)["hits"]["hits"]
                took.append((time.perf_counter() - began) * 1000)
                found.append({hit["_id"] for hit in hits})
            recall = statistics.mean(
                len(hits & {ids[k] for k in row}) / 10 for hits, row in zip(found, exact, strict=True)
            )
            usage = client.indices.disk_usage(index=name, run_expensive_tasks=True)[name]
            knn_bytes = usage["fields"][VECTOR_FIELD].get("knn_vectors_in_bytes", 0)
            files = _file_bytes(client, name)
            print(
                json.dumps(
                    {
                        "type": kind,
                        "oversample": oversample,
                        "recall_at_10": round(recall, 4),
                        "knn_bytes_per_vector": round(knn_bytes / len(ids), 1),
                        "client_ms_median": round(statistics.median(took), 2),
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
    by_vector.add_argument("--candidates", type=int, default=600, help="num_candidates (the default ranker's: 600)")
    by_vector.add_argument("--limit", type=int, default=1_000_000, help="at most this many vectors")
    by_vector.add_argument("--keep", action="store_true", help="keep the variant indices")
    by_span = commands.add_parser("spans", help="the spans' postings bytes with shorter hashes")
    by_span.add_argument("--prefix", required=True)
    by_span.add_argument("--bytes", nargs="+", type=int, default=[8, 6, 5], help="hash bytes of each variant")
    by_span.add_argument("--limit", type=int, default=1_000_000, help="at most this many equations")
    args = parser.parse_args()
    {"fields": fields, "vectors": vectors, "spans": spans}[args.command](args)


if __name__ == "__main__":
    main()
