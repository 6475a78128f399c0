"""The search benchmark's corpus, indices and queries: the base deployments' equations, replicated to any size with
perturbed vectors, bulk-loaded into force-merged indices (the kept ``latency`` indices the later commands reuse),
brute-force top-k for recall, and the distinct formula and keyword queries drawn from the base.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

import numpy as np
from eqsearch.engine.index import (
    IndexAdmin,
    IndexOptions,
    bulk_index,
    equation_id,
    index_definition,
    recommended_layout,
)
from eqsearch.engine.index.admin import data_node_count
from eqsearch.engine.index.documents import with_structure
from search_measure import emit, index_size
from search_service import client_from_env, encoder_identity, load_encoder_or_standin

BASE_INDEX = "{prefix}-base"  # the ingest command's deployment prefix


def base_client(args: argparse.Namespace, client: Any) -> Any:
    """Where the base deployments are: ``--base-url`` (another cluster, e.g. the single node the base was ingested
    into, while the benchmark's index goes to a local 3-node cluster), else the benchmark's own cluster."""
    if not getattr(args, "base_url", None):
        return client
    from elasticsearch import Elasticsearch

    return Elasticsearch(args.base_url, request_timeout=300)


def base_documents(client, prefix: str, base_prefixes: list[str] | None = None) -> list[dict[str, Any]]:
    """The equations with a vector of the base deployment (``<prefix>-base``, what ``ingest`` made), or of the
    deployments ``base_prefixes`` (``--base`` ...: e.g. the make-run corpus and a kept ARQMath collection), their
    duplicates (the same LaTeX) dropped so that the base counts distinct formulas."""
    docs: dict[str, dict[str, Any]] = {}
    for name in base_prefixes or [BASE_INDEX.format(prefix=prefix)]:
        admin = IndexAdmin(client, name)
        index = admin.current("equations")
        if index is None:
            sys.exit(f"no {name}-equations: run the 'ingest' command first (or name an existing deployment)")
        for _, source in admin.scan(index):
            key = " ".join(source["latex"].split())
            if source.get("vector") and key not in docs:
                docs[key] = with_structure(source)  # the derived fields are not in the source (mapping version 8)
    return sorted(docs.values(), key=lambda d: d["eq_id"])


def replicate(base: list[dict[str, Any]], n: int, seed: int = 0) -> tuple[list[dict[str, Any]], np.ndarray]:
    """``n`` documents: the base equations cycled, vectors perturbed, ids and paper ids made unique."""
    rng = np.random.default_rng(seed)
    matrix = np.array([d["vector"] for d in base], dtype=np.float32)
    picks = np.arange(n) % len(base)
    norms = np.linalg.norm(matrix[picks], axis=1, keepdims=True)
    noise = rng.normal(size=(n, matrix.shape[1])).astype(np.float32)
    noise *= 0.15 * norms / np.sqrt(matrix.shape[1])
    vectors = matrix[picks] + noise
    vectors[: len(base)] = matrix[: min(n, len(base))]  # the first copy keeps the real vectors
    docs = []
    for i, pick in enumerate(picks):
        doc = base[pick]
        copy = i // len(base)
        docs.append({"i": i, "src": doc, "copy": copy})
    return docs, vectors


def document(entry: dict[str, Any], vector: np.ndarray, *, normalise: bool) -> dict[str, Any]:
    src, copy = entry["src"], entry["copy"]
    v = vector / np.linalg.norm(vector) if normalise else vector
    paper = f"{src['paper_id']}-r{copy}"
    return {
        **{k: v2 for k, v2 in src.items() if k not in ("vector", "indexed_at", "job_id")},
        "eq_id": copy_eq_id(src, copy),
        "paper_id": paper,
        "paper_key": paper,
        "vector": [round(float(x), 6) for x in v],
    }


def document_eq_id(entry: dict[str, Any]) -> str:
    """The ``eq_id`` `document` gives a replicated entry."""
    return copy_eq_id(entry["src"], entry["copy"])


def copy_eq_id(src: dict[str, Any], copy: int) -> str:
    """The id of copy ``copy`` of a base equation: its own id under the copy's paper key (an inline formula keeps
    its ``:i<n>``, so that it does not overwrite the display of the same number)."""
    own = str(src.get("eq_id") or "")
    if ":" in own:
        return f"{src['paper_id']}-r{copy}:{own.rsplit(':', 1)[1]}"
    return equation_id(f"{src['paper_id']}-r{copy}", src["number"])


def build_index(
    client, name: str, definition: dict[str, Any], docs, vectors, *, normalise: bool, eq_ids: bool = False
) -> dict[str, Any]:
    """A fresh, force-merged index of the replicated documents.

    Document ids are the row numbers of ``vectors`` (what ``decide`` compares against brute force), or with
    ``eq_ids`` the documents' ``eq_id`` as the ingest job writes them (what the latency indices use).
    """
    client.indices.delete(index=name, ignore_unavailable=True)
    settings = {**definition["settings"], "refresh_interval": "-1"}
    client.indices.create(index=name, settings=settings, mappings=definition["mappings"])
    began = time.perf_counter()
    report = bulk_index(
        client,
        (
            {"_index": name, "_id": source["eq_id"] if eq_ids else str(e["i"]), "_source": source}
            for e in docs
            for source in (document(e, vectors[e["i"]], normalise=normalise),)
        ),
        chunk_size=1000,
    )
    load_s = time.perf_counter() - began
    client.indices.put_settings(index=name, settings={"index": {"refresh_interval": None}})
    client.indices.refresh(index=name)
    began = time.perf_counter()
    # a merge of a million documents takes longer than a request's usual timeout
    client.options(request_timeout=3600).indices.forcemerge(index=name, max_num_segments=1, wait_for_completion=True)
    merge_s = time.perf_counter() - began
    client.indices.refresh(index=name)
    return {"docs": report.ok, "failed": report.failed, "load_s": round(load_s, 1), "merge_s": round(merge_s, 1)}


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int, similarity: str) -> list[set[int]]:
    if similarity == "cosine":
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    out = []
    for start in range(0, len(queries), 50):
        scores = queries[start : start + 50] @ vectors.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        out.extend(set(row.tolist()) for row in top)
    return out


def ensure_latency_index(client, base: list[dict[str, Any]], encoder: Any, n: int, prefix: str, rebuild: bool) -> None:
    """The replicated index of ``n`` equations behind ``<prefix>-equations``, built unless it exists."""
    admin = IndexAdmin(client, prefix)
    if admin.current("equations") is not None and not rebuild:
        return
    for version in admin.versions("equations"):
        client.indices.delete(index=f"{prefix}-equations-v{version}")
    docs, vectors = replicate(base, n)
    # the layout eqsearch gives this cluster (one shard and no replica on one node; on 3 nodes 3 shards, 1 replica)
    shards, replicas = recommended_layout(data_node_count(client) or 1)
    similarity = getattr(encoder, "similarity", "max_inner_product")
    options = IndexOptions(dims=vectors.shape[1], similarity=similarity, shards=shards, replicas=replicas)
    name = f"{prefix}-equations-v1"
    definition = index_definition("equations", options)
    built = build_index(client, name, definition, docs, vectors, normalise=False, eq_ids=True)
    client.indices.put_alias(index=name, name=f"{prefix}-equations")
    emit(
        measure="build",
        n=n,
        shards=shards,
        replicas=replicas,
        **built,
        size_mb=round(index_size(client, name) / 2**20, 1),
    )


def kept_index(args: argparse.Namespace) -> tuple[Any, Any, list[dict[str, Any]], str, str]:
    """The common start of the commands that work on a kept ``latency`` index: a client, the encoder (announced),
    the base documents, the index prefix and the concrete index; exits when the index was not kept."""
    client, _ = client_from_env()
    encoder = load_encoder_or_standin(args.bundle)
    emit(measure="setup", command=args.command, **encoder_identity(encoder))
    base = base_documents(base_client(args, client), args.prefix, args.base)
    prefix = f"{args.prefix}-lat{args.n}"
    index = IndexAdmin(client, prefix).current("equations")
    if index is None:
        sys.exit(f"no index for n={args.n}: run 'latency --n {args.n} --keep' first")
    return client, encoder, base, prefix, index


class CachedConverter:
    """LaTeX -> MathML from a table filled before timing, so that timings measure search, not KaTeX.

    KaTeX runs in its own Node workers (a few ms per formula: ``benchmarks/convert_featurize.py``); every client
    process gets the table instead of its own workers.
    """

    def __init__(self, cache: dict[str, Any]) -> None:
        self.cache = cache

    @classmethod
    def convert_all(cls, latexes: list[str]) -> CachedConverter:
        from eqsearch.engine.latex.converter import KatexConverter

        with KatexConverter() as katex:
            return cls({latex: katex.convert(latex, "equation", ()) for latex in latexes})

    def convert(self, latex: str, environment: str = "equation", macros: Any = ()) -> Any:
        return self.cache[latex]


def usable_queries(base: list[dict[str, Any]], count: int) -> tuple[list[str], list[str], CachedConverter]:
    """`pick_queries`, converted once, keeping those whose formula converts: formulas, keywords, the converter."""
    formulas, keyword_queries = pick_queries(base, count)
    converter = CachedConverter.convert_all(formulas)
    usable = [i for i, f in enumerate(formulas) if converter.cache[f].mathml is not None]
    return [formulas[i] for i in usable], [keyword_queries[i] for i in usable], converter


def pick_queries(base: list[dict[str, Any]], count: int, seed: int = 3) -> tuple[list[str], list[str]]:
    """Up to ``count`` distinct formulas (LaTeX under 300 characters, without a ``?``: a query reads ``?a`` as a
    variable) and ``count`` keyword pairs, drawn from the base equations' text with its word frequencies (common words
    come up more often, as in real queries)."""
    rng = random.Random(seed)
    latexes = sorted({d["latex"] for d in base if len(d["latex"]) < 300 and "?" not in d["latex"]})
    formulas = rng.sample(latexes, min(count, len(latexes)))
    words = [w for d in base for w in (d.get("title") or "").split() + (d.get("context") or "").split()[:30]]
    words = [w.strip(".,;:()").lower() for w in words if w.isalpha() and len(w) > 4]
    return formulas, [" ".join(rng.sample(words, 2)) for _ in range(count)]
