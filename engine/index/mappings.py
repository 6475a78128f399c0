"""Index definitions in code: the equations, papers and jobs indices of one eqsearch deployment.

Every index is versioned (``<prefix>-equations-v3``) and reached through an alias (``<prefix>-equations``);
`engine.index.admin` creates, migrates and swaps them. A definition is a pure function of an `IndexOptions`, so a
migration to a new mapping is "change this file, run ``eqsearch index migrate equations``".

Vector field decision, measured by ``benchmarks/search.py decide`` on the same 100k equations (real docstring
equations replicated with perturbed vectors, hashing stand-in encoder; k=10, num_candidates=100, 200 queries, exact
brute-force kNN as truth, 2 shared cores; full table in ``benchmarks/search.md``):

    similarity          index      recall@10  p50 ms  p99 ms  store MB
    max_inner_product   int8_hnsw    0.573     8.2     28.1     93.0
    max_inner_product   hnsw         0.963     4.2     18.0     86.4
    cosine (unit vecs)  int8_hnsw    0.384     5.0     24.0     92.8
    cosine (unit vecs)  hnsw         0.563     2.7      9.7     86.3

* the similarity is the model bundle's (its manifest's ``similarity``), recorded with the encoder's identity in the
  index's ``_meta``. The table above (replicated near-duplicates, stand-in encoder) favoured
  ``max_inner_product``; on the shipped model's real vectors (the 24,015 display equations of the seven-set corpus,
  300 of them as queries, hnsw, num_candidates 50/100/300) cosine has recall@10 0.907/0.909/0.910 against
  0.861/0.892/0.923 for the inner product and answers in 2.6-3.6 vs 4.1-4.6 ms (p50), and it ranks better on every
  quality measure of that model (benchmarks/encoder.md): the shipped bundle says ``cosine``.
* ``hnsw`` (float) over ``int8_hnsw``: int8 lost 39 points of recall@10 here and was not faster; it saves off-heap
  memory (~130 vs ~320 B/vector), which matters only past ~10M equations: revisit there, and with the trained
  model's vectors, whose spread may quantise better than these near-duplicates.
* one document per equation, grouped client-side from an over-requested fused list (``collapse`` on ``paper_id``
  where one ranked list is grouped server-side: p50 5.3 ms) over papers with nested equations (nested kNN with
  inner_hits: p50 16.0 ms, p99 77 ms); nested also means reindexing a whole paper to change one equation and
  cannot fuse per equation with BM25 on that equation's context.
* text fields keep the default postings (no ``index_options: offsets``): offsets let the highlighter skip
  re-analysing the text, but on the same 100k equations a page fetch with highlights then cost the node 5.8 instead
  of 3.1 ms of CPU (the unified highlighter walks every query term's postings per hit) for a 16% larger index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

IndexKind = Literal["equations", "papers", "jobs"]
INDEX_KINDS: tuple[IndexKind, ...] = ("equations", "papers", "jobs")

#: Bump when a definition below changes; recorded in each index's ``_meta`` so `describe` can say it is stale.
MAPPING_VERSIONS: dict[str, int] = {"equations": 1, "papers": 1, "jobs": 1}

VECTOR_FIELD = "vector"
DEFAULT_DIMS = 64
TEXT_ANALYZERS = ("english", "standard")

# Stored but not searched: kept out of the inverted index and of doc values (they are only shown).
_STORED_ONLY: dict[str, Any] = {"type": "keyword", "index": False, "doc_values": False}


@dataclass(frozen=True)
class IndexOptions:
    """Choices that shape the index definitions.

    Args:
        dims: width of the equation vectors (the encoder's ``dim``).
        similarity: ``max_inner_product`` (raw vectors) or ``cosine`` (the engine normalises first).
        index_type: the HNSW variant, ``int8_hnsw`` or ``hnsw`` (or any other ``index_options.type``).
        hnsw_m: HNSW graph degree.
        ef_construction: HNSW build-time candidate list.
        analyzer: text analyzer for titles, abstracts and context (``english`` where the cluster has it).
        shards: primary shards of the equations index.
        replicas: replicas of every index.
        encoder: the identity of the encoder whose vectors the equations index holds (`Encoder.identity`: kind +
            model checksum), recorded in its ``_meta``; None for an index made before identities were recorded.
    """

    dims: int = DEFAULT_DIMS
    similarity: str = "max_inner_product"
    index_type: str = "hnsw"
    hnsw_m: int = 16
    ef_construction: int = 100
    analyzer: str = "standard"
    shards: int = 1
    replicas: int = 0
    encoder: str | None = None

    def __post_init__(self) -> None:
        if self.dims < 1:
            raise ValueError(f"dims must be positive, got {self.dims}")
        if self.similarity not in ("max_inner_product", "cosine", "dot_product", "l2_norm"):
            raise ValueError(f"unknown vector similarity {self.similarity!r}")
        if self.analyzer not in TEXT_ANALYZERS:
            raise ValueError(f"analyzer must be one of {TEXT_ANALYZERS}, got {self.analyzer!r}")


def alias_name(prefix: str, kind: str) -> str:
    """The alias that searches and ingest jobs use, e.g. ``eqsearch-equations``."""
    _check_kind(kind)
    return f"{prefix}-{kind}"


def versioned_name(prefix: str, kind: str, version: int) -> str:
    """The concrete index behind the alias, e.g. ``eqsearch-equations-v3``."""
    _check_kind(kind)
    return f"{prefix}-{kind}-v{version}"


def parse_version(prefix: str, kind: str, index: str) -> int | None:
    """The version number of a concrete index name, or None when it is not one of ``prefix``/``kind``."""
    head = f"{prefix}-{kind}-v"
    if not index.startswith(head) or not index[len(head) :].isdigit():
        return None
    return int(index[len(head) :])


def _check_kind(kind: str) -> None:
    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {kind!r}; one of {', '.join(INDEX_KINDS)}")


def _text(analyzer: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "analyzer": analyzer, **extra}


def _meta(kind: str, options: IndexOptions) -> dict[str, Any]:
    return {
        "eqsearch_kind": kind,
        "mapping_version": MAPPING_VERSIONS[kind],
        "analyzer": options.analyzer,
        "dims": options.dims,
        "similarity": options.similarity,
        "index_type": options.index_type,
        **({"encoder": options.encoder} if options.encoder else {}),
    }


def _settings(options: IndexOptions, shards: int = 1) -> dict[str, Any]:
    return {"number_of_shards": shards, "number_of_replicas": options.replicas}


def _paper_fields(analyzer: str) -> dict[str, Any]:
    return {
        "paper_id": {"type": "keyword"},
        "paper_key": {"type": "keyword"},
        "title": _text(analyzer),
        "abstract": _text(analyzer),
        "authors": _text("standard", fields={"raw": {"type": "keyword", "ignore_above": 256}}),
        "categories": {"type": "keyword"},
        "year": {"type": "short"},
        "citations_out": {"type": "keyword"},
        "cited_by_count": {"type": "integer"},
        "source_version": {"type": "integer"},
        "source": {"type": "keyword", "index": False},
        "job_id": {"type": "keyword"},
        "indexed_at": {"type": "date"},
    }


def equations_definition(options: IndexOptions) -> dict[str, Any]:
    """Settings and mappings of the equations index: one document per equation, with its paper's fields.

    Document ids are ``<paper key>:<equation number>`` (paper key = paper id + ``v<source version>`` when known),
    so re-indexing a paper overwrites its equations instead of duplicating them.
    """
    analyzer = options.analyzer
    vector: dict[str, Any] = {
        "type": "dense_vector",
        "dims": options.dims,
        "index": True,
        "similarity": options.similarity,
        "index_options": {"type": options.index_type, "m": options.hnsw_m, "ef_construction": options.ef_construction},
    }
    if options.index_type in ("flat", "int8_flat", "int4_flat", "bbq_flat"):
        vector["index_options"] = {"type": options.index_type}
    return {
        "settings": _settings(options, options.shards),
        "mappings": {
            "dynamic": "strict",
            "_meta": _meta("equations", options),
            "properties": {
                "eq_id": {"type": "keyword"},
                "number": {"type": "integer"},
                "latex": {"type": "text", "analyzer": "standard", "index_options": "docs", "norms": False},
                "mathml": _STORED_ONLY,
                "environment": {"type": "keyword"},
                "status": {"type": "keyword"},
                "reason": {"type": "keyword"},
                "section": {"type": "integer"},
                "section_title": _text(analyzer),
                "context": _text(analyzer),
                VECTOR_FIELD: vector,
                **_paper_fields(analyzer),
            },
        },
    }


def papers_definition(options: IndexOptions) -> dict[str, Any]:
    """Settings and mappings of the papers index: one document per paper (id = paper id, without version).

    ``sections`` keeps the outline (index, level, title, equation ids) for the paper page; it is stored, not
    searched.
    """
    analyzer = options.analyzer
    return {
        "settings": _settings(options),
        "mappings": {
            "dynamic": "strict",
            "_meta": _meta("papers", options),
            "properties": {
                **_paper_fields(analyzer),
                "kind": {"type": "keyword"},
                "status": {"type": "keyword"},
                "equation_count": {"type": "integer"},
                "sections": {"type": "object", "enabled": False},
            },
        },
    }


def jobs_definition(options: IndexOptions) -> dict[str, Any]:
    """Settings and mappings of the jobs index: ingest job records and their per-paper checkpoints.

    A job document (``record: job``, id = job id) holds state, progress, counts, errors by reason and the first
    per-document failures; a checkpoint document (``record: checkpoint``, id = ``<job id>/<source>``) is written
    once a paper's documents are acknowledged by Elasticsearch, with that paper's counts, so that a resumed job
    skips exactly the finished papers and its totals are the sum of its checkpoints.
    """
    return {
        "settings": _settings(options),
        "mappings": {
            "dynamic": "strict",
            "_meta": _meta("jobs", options),
            "properties": {
                "record": {"type": "keyword"},
                "job_id": {"type": "keyword"},
                "state": {"type": "keyword"},
                "sources": {"type": "keyword"},
                "source": {"type": "keyword"},
                "paper_key": {"type": "keyword"},
                "created_at": {"type": "date"},
                "updated_at": {"type": "date"},
                "finished_at": {"type": "date"},
                "pid": {"type": "integer"},
                "host": {"type": "keyword"},
                "message": {"type": "text", "analyzer": "standard"},
                "progress": {
                    "properties": {
                        "papers_done": {"type": "long"},
                        "papers_total": {"type": "long"},
                    }
                },
                "counts": {"type": "object", "dynamic": True},
                "errors_by_reason": {"type": "object", "enabled": False},
                "failures": {"type": "object", "enabled": False},
                "options": {"type": "object", "enabled": False},
            },
        },
    }


DEFINITIONS = {"equations": equations_definition, "papers": papers_definition, "jobs": jobs_definition}


def index_definition(kind: str, options: IndexOptions) -> dict[str, Any]:
    """The settings and mappings of one index kind."""
    _check_kind(kind)
    return DEFINITIONS[kind](options)
