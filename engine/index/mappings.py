"""Index definitions in code: the equations, papers and jobs indices of one eqsearch deployment.

Every index is versioned (``<prefix>-equations-v3``) and reached through an alias (``<prefix>-equations``);
`engine.index.admin` creates them and `engine.index.migration` moves an alias to a new version. A definition is a
pure function of an `IndexOptions`, so a migration to a new mapping is "change this file, run ``eqsearch index
migrate equations``". The documents these mappings accept are built in `engine.index.documents`. Why the vector
field and the layout are as they are (the bundle's similarity, ``hnsw``, one document per equation, default
postings), with the figures: ``docs/decisions/equation-index-layout.md``; why int8 vectors where compared by cosine
(`engine.index.vectors`) and what else the lean index left out: ``docs/decisions/lean-equations-index.md``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Literal

from eqsearch.engine.index.vectors import ELEMENT_TYPES
from eqsearch.engine.model.structure import STRUCTURE_VERSION

IndexKind = Literal["equations", "papers", "jobs"]
INDEX_KINDS: tuple[IndexKind, ...] = ("equations", "papers", "jobs")

#: Bump when a definition below changes; recorded in each index's ``_meta`` so `describe` can say it is stale.
MAPPING_VERSIONS: dict[str, int] = {"equations": 12, "papers": 2, "jobs": 1}

VECTOR_FIELD = "vector"
#: The formula's structural terms (`engine.model.structure`): BM25 over them is the structural channel.
STRUCTURE_FIELD = "structure"
#: Hashes of the formula's sub-expressions, matched exactly by the structural rerank (mapping version 6: runs of up to
#: 64 symbols on a ladder of lengths, `engine.model.structure.SPAN_LENGTHS`; before, up to 6).
SPANS_FIELD = "structure_spans"
#: The first equations mapping version whose spans are written short (`span_term`: the kind letter and the first
#: `SPAN_TERM_BYTES` bytes of the hash in base64, 9 characters instead of 17; ~23% of the spans' postings).
SHORT_SPANS_SINCE = 11
SPAN_TERM_BYTES = 6
#: The formula's size in symbols (doc values only): the structural rerank weighs a shared sub-expression against the
#: larger of the query and the candidate (mapping version 5; older indices have no such field).
SIZE_FIELD = "structure_size"
#: The first equations mapping version whose documents hold what the structural rerank needs: `SIZE_FIELD`, and
#: spans with the variables renamed (``r``, structure version 2) where older ones hold spans with the letters kept.
RERANK_FIELDS_SINCE = 5
#: The formula's forward index (mapping version 7): its structural terms as the field's analyzer makes them, hashed,
#: with their counts, in one binary doc value (`engine.index.forward_index`), from which eqsearch's plugin computes the
#: rescore window's BM25 (``eqsearch_bm25``) instead of walking posting lists. Large (~5 bytes a distinct term from
#: version 12, its hash cut to 4 bytes; ~9 before) and never shown: left out of the sources a search reads
#: (`SOURCE_EXCLUDED_FIELDS`).
FORWARD_INDEX_FIELD = "structure_terms"
FORWARD_INDEX_SINCE = 7
#: The network's node vectors of the formula, int8 in one binary doc value (`documents.node_vectors_value`), scored by
#: MaxSim inside the node by eqsearch's Elasticsearch plugin (``es-plugin/``, ``eqsearch_maxsim``). An option of the
#: equations index (`IndexOptions.node_vectors`, ``--node-vectors``): large (~12 KB an equation for the 512-d node
#: states), so mapped only where chosen; the index's ``_meta`` names the node encoder that wrote them.
NODE_VECTORS_FIELD = "node_vectors"
NODE_VECTORS_MAPPING: dict[str, Any] = {"type": "binary", "doc_values": True}
#: The fields of an equation document made from its MathML and LaTeX at every write (the ingest job, and every
#: migration, `documents.with_structure` and the node vectors) and never read back from a stored document: kept out
#: of its ``_source`` (mapping version 8), where they were most of the stored bytes (hashes do not compress: on the
#: ARQMath-1 development collection 6.4 of 7.3 KB of raw source per formula; ``benchmarks/scale.md``). They stay
#: indexed and in doc values, which is all the search reads of them. A document is therefore never updated in place
#: (Elasticsearch rebuilds an updated document from its source): the ingest job rewrites whole documents.
DERIVED_FIELDS = (STRUCTURE_FIELD, SPANS_FIELD, FORWARD_INDEX_FIELD, NODE_VECTORS_FIELD)
DERIVED_OUT_OF_SOURCE_SINCE = 8
#: The paper's fields that live in the papers index alone (mapping version 9): read for the page by paper id
#: (`engine.search.requests.fetch_papers`) and searched there by the words' paper list, never once per equation
#: (the abstract alone was ~1.4 KB of raw text an equation; ``docs/decisions/lean-equations-index.md``). An equation
#: keeps what its own ranking, filters and writers need: ``paper_id``, ``paper_key``, ``categories``, ``year``,
#: ``source_version``, ``job_id``, ``indexed_at``.
PAPER_ONLY_FIELDS = ("title", "abstract", "authors", "citations_out", "cited_by_count", "source")
PAPER_FIELDS_OUT_OF_EQUATIONS_SINCE = 9
#: The first equations mapping version whose formula vectors, where compared by cosine, are int8 (``element_type:
#: byte``, `engine.index.vectors`): a quarter of the float vectors' bytes, on disk and in memory.
BYTE_VECTORS_SINCE = 10


#: The text encoder's vector of the words around the formula (`engine.model.text`): kNN on it is the context channel.
CONTEXT_VECTOR_FIELD = "context_vector"
#: Every vector field of an equation: large, and never read back by a search (`engine.search.query.SOURCE_EXCLUDES`).
VECTOR_FIELDS = (VECTOR_FIELD, CONTEXT_VECTOR_FIELD, NODE_VECTORS_FIELD)
#: What a search never reads back from an equation's source: the vectors and the forward index.
SOURCE_EXCLUDED_FIELDS = (*VECTOR_FIELDS, FORWARD_INDEX_FIELD)
DEFAULT_DIMS = 64
#: The vector index types whose search runs over a quantized copy and may rescore with the floats.
QUANTIZED_TYPES = ("int8_hnsw", "int4_hnsw", "bbq_hnsw", "int8_flat", "int4_flat", "bbq_flat")
#: The vector index types that take int8 vectors (``element_type: byte``): the others quantize floats themselves.
BYTE_INDEX_TYPES = ("hnsw", "flat")
#: The width of the shipped text encoder's vectors (`engine/model/text-encoder.json`'s ``dim``).
DEFAULT_CONTEXT_DIMS = 256
TEXT_ANALYZERS = ("english", "standard")

#: The formula vectors' HNSW degree (mapping version 12 on). Copies of one formula (inline ``x``, a definition
#: repeated in every section) share one vector, and Lucene's neighbour selection keeps few links on a copy (it drops
#: a candidate as near a kept neighbour as to the node): with 16 links a node, parts of a duplicate-rich graph were
#: out of the search's reach (recall@10 by score 0.70 on the `make run` corpus whatever the ``num_candidates``, 0.957
#: on hybdev2); 32 links reach 0.98 and 0.993 for 1-10 more bytes of graph a vector (``benchmarks/scale.md``).
HNSW_M = 32

# Stored but not searched: kept out of the inverted index and of doc values (they are only shown).
_STORED_ONLY: dict[str, Any] = {"type": "keyword", "index": False, "doc_values": False}


@dataclass(frozen=True)
class IndexOptions:
    """Choices that shape the index definitions.

    Args:
        dims: width of the equation vectors (the encoder's ``dim``).
        similarity: ``max_inner_product`` (raw vectors) or ``cosine`` (the engine normalises first).
        index_type: the HNSW variant, ``hnsw`` (float), ``int8_hnsw``, ``int4_hnsw`` or ``bbq_hnsw`` (quantized: the
            graph searched over a quantized copy, the floats kept on disk), or any other ``index_options.type``.
        oversample: with a quantized type, how many times ``k`` candidates the quantized search gathers before
            they are rescored with the float vectors (``rescore_vector``; 0: Elasticsearch's default for the type).
            Measured in ``benchmarks/scale.md`` ("Vectors, quantized").
        element_type: how each formula vector is stored (`engine.index.vectors`): ``float`` (float32) or ``byte``
            (int8, one scale per vector; cosine similarity with a ``hnsw`` or ``flat`` type only);
            `default_element_type` gives what a new index gets.
        hnsw_m: HNSW graph degree: `HNSW_M` (mapping version 12; 16 before, Elasticsearch's default), recorded in
            the index's ``_meta`` so that a migration keeps it.
        ef_construction: HNSW build-time candidate list.
        analyzer: text analyzer for titles, abstracts and context (``english`` where the cluster has it).
        shards: primary shards of the equations index.
        replicas: replicas of every index.
        encoder: the identity of the encoder whose vectors the equations index holds (`Encoder.identity`: kind +
            model checksum), recorded in its ``_meta``; None for an index made before identities were recorded.
        context_dims: width of the context vectors (the text encoder's ``dim``, `engine.model.text`).
        text_encoder: the identity of the text encoder whose context vectors the equations index holds
            (`TextEncoder.identity`), recorded in its ``_meta`` like ``encoder``; None: not recorded.
        node_vectors: the identity of the node encoder whose node vectors the equations index stores for the MaxSim
            rerank (`NodeEncoder.identity`, ``<bundle>/<output>``), recorded in its ``_meta``; None: the index has no
            `NODE_VECTORS_FIELD` (the default: they cost ~12 KB an equation).
        node_dims: the width of those node vectors.
    """

    dims: int = DEFAULT_DIMS
    similarity: str = "max_inner_product"
    index_type: str = "hnsw"
    oversample: float = 0.0
    element_type: str = "float"
    hnsw_m: int = HNSW_M
    ef_construction: int = 100
    analyzer: str = "standard"
    shards: int = 1
    replicas: int = 0
    encoder: str | None = None
    context_dims: int = DEFAULT_CONTEXT_DIMS
    text_encoder: str | None = None
    node_vectors: str | None = None
    node_dims: int | None = None

    def __post_init__(self) -> None:
        if self.dims < 1 or self.context_dims < 1:
            raise ValueError(f"dims and context_dims must be positive, got {self.dims} and {self.context_dims}")
        if (self.node_vectors is None) != (self.node_dims is None) or (
            self.node_dims is not None and self.node_dims < 1
        ):
            raise ValueError(
                f"node vectors need both an encoder identity and a positive width, got {self.node_vectors!r} and "
                f"{self.node_dims!r}"
            )
        if self.similarity not in ("max_inner_product", "cosine", "dot_product", "l2_norm"):
            raise ValueError(f"unknown vector similarity {self.similarity!r}")
        if self.element_type not in ELEMENT_TYPES:
            raise ValueError(f"element_type must be one of {ELEMENT_TYPES}, got {self.element_type!r}")
        if self.element_type == "byte" and (self.similarity != "cosine" or self.index_type not in BYTE_INDEX_TYPES):
            raise ValueError(
                "int8 vectors (element_type byte) need cosine similarity and an index type of "
                f"{', '.join(BYTE_INDEX_TYPES)}, got {self.similarity} and {self.index_type}"
            )
        if self.analyzer not in TEXT_ANALYZERS:
            raise ValueError(f"analyzer must be one of {TEXT_ANALYZERS}, got {self.analyzer!r}")
        if self.shards < 1 or self.replicas < 0:
            raise ValueError(f"shards must be at least 1 and replicas at least 0: {self.shards}, {self.replicas}")


def span_term(span: str) -> str:
    """A sub-expression's term in `SPANS_FIELD` (mapping version `SHORT_SPANS_SINCE` on): its kind letter and the
    first `SPAN_TERM_BYTES` bytes of its hash (``engine.model.structure`` writes 16 hex digits), in URL-safe base64.
    Six bytes keep a false match between a query's span and a candidate's below one in 10^14 per pair."""
    digest = bytes.fromhex(span[1:])[:SPAN_TERM_BYTES]
    return span[0] + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def default_element_type(similarity: str, index_type: str = "hnsw") -> str:
    """How a new index stores its formula vectors: int8 (``byte``) where they are compared by cosine, which ignores
    the one scale per vector that rounding takes, and the index type takes them; float otherwise (an inner product
    needs the vectors' lengths; a quantized type quantizes floats itself)."""
    return "byte" if similarity == "cosine" and index_type in BYTE_INDEX_TYPES else "float"


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
        **({"element_type": options.element_type} if kind == "equations" else {}),
        **({"hnsw_m": options.hnsw_m, "ef_construction": options.ef_construction} if kind == "equations" else {}),
        **({"oversample": options.oversample} if options.oversample else {}),
        **({"encoder": options.encoder} if options.encoder else {}),
        **({"context_dims": options.context_dims} if kind == "equations" else {}),
        **({"text_encoder": options.text_encoder} if options.text_encoder and kind == "equations" else {}),
        **({"structure_version": STRUCTURE_VERSION} if kind == "equations" else {}),
        **(
            {"node_vectors": options.node_vectors, "node_dims": options.node_dims}
            if options.node_vectors and kind == "equations"
            else {}
        ),
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
    """Settings and mappings of the equations index: one document per equation, with the fields of its paper that
    filter it (`PAPER_ONLY_FIELDS` are the papers index's alone).

    Document ids are ``<paper key>:<equation number>`` (paper key = paper id + ``v<source version>`` when known),
    and ``<paper key>:i<number>`` for an inline formula (``inline: true``), so re-indexing a paper overwrites its
    equations instead of duplicating them.
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
    if options.oversample and options.index_type in QUANTIZED_TYPES:
        vector["index_options"]["rescore_vector"] = {"oversample": options.oversample}
    # the same HNSW as the formula vectors; cosine: the text encoder's vectors are unit length; float: its writers
    # send float vectors
    context_vector = {**vector, "dims": options.context_dims, "similarity": "cosine"}
    if options.element_type == "byte":
        vector["element_type"] = "byte"
    return {
        "settings": _settings(options, options.shards),
        "mappings": {
            "dynamic": "strict",
            "_meta": _meta("equations", options),
            "_source": {"excludes": list(DERIVED_FIELDS)},
            "properties": {
                "eq_id": {"type": "keyword"},
                "number": {"type": "integer"},
                # an inline formula of the running text (id ``<paper key>:i<number>``), not a display
                "inline": {"type": "boolean"},
                "latex": {"type": "text", "analyzer": "standard", "index_options": "docs", "norms": False},
                "mathml": _STORED_ONLY,
                "environment": {"type": "keyword"},
                "status": {"type": "keyword"},
                "reason": {"type": "keyword"},
                "section": {"type": "integer"},
                "section_title": _text(analyzer),
                # no positions (version 12): the words are matched term by term (BM25: counts and norms), never as
                # phrases, and the highlighter analyses the stored text again: half of the field's postings
                "context": _text(analyzer, index_options="freqs"),
                # Terms kept whole (the whitespace analyzer: no lowercasing, no stemming); frequencies for BM25, no
                # positions: the terms carry their own relations.
                STRUCTURE_FIELD: {"type": "text", "analyzer": "whitespace", "index_options": "freqs"},
                SPANS_FIELD: {"type": "keyword", "doc_values": False},
                SIZE_FIELD: {"type": "integer", "index": False},
                FORWARD_INDEX_FIELD: {"type": "binary", "doc_values": True},
                VECTOR_FIELD: vector,
                CONTEXT_VECTOR_FIELD: context_vector,
                **({NODE_VECTORS_FIELD: NODE_VECTORS_MAPPING} if options.node_vectors else {}),
                **{k: v for k, v in _paper_fields(analyzer).items() if k not in PAPER_ONLY_FIELDS},
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
                "inline_count": {"type": "integer"},
                # the numbers of the indexed inline formulas (their ids), read back by the writers, never searched
                "inline_numbers": {"type": "integer", "index": False, "doc_values": False},
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
