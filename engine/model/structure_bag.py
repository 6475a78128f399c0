"""The structure-bag encoder (kind ``structure-bag``): a formula's structural terms, hashed, summed into a learned
64-d vector by a small ONNX model; served by onnxruntime, never torch.

The structural channel's own terms (`engine.model.structure`: symbols, symbol pairs with their relation path, and
the hashed sub-expressions) are what the model reads, so the vector space is trained to reproduce the structural
similarity (training/structure_distill.py distils the structural BM25 score into it). Each term is hashed into
`StructureFeatures.hashes` of `StructureFeatures.buckets` slots (two independent hashes, so two colliding terms rarely
share both rows); a term repeated ``n`` times weighs ``1 + ln n``. The model (``model.onnx``) takes the flat
``ids``/``weights`` of a batch with ``graph`` (the equation of each term) and ``graph_sizes`` (terms per equation),
and returns unit vectors (cosine similarity).

A bundle may also carry **query heads** (``query_heads`` in its manifest, the matrices in ``query-heads.npy``): for
each named part a ``D x D`` matrix ``M_p`` applied to a query's vector only, so that the one stored vector serves
several similarities, ``z_q^T M_p^T z_d``; a ranker weighs them by name as it weighs a composite's parts
(`StructureBagEncoder.weigh_query`, ``FormulaRanking.embedding_parts``): ``q = sum_p w_p M_p z_q``. The 64-d student
of the composite (training/structure_distill.py) has ``structure`` (the identity: the stored cosine) and ``graph``
(a learned matrix fitted to the graph network's cosine).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.model.bundle import STRUCTURE_BAG_INPUTS, BundleError, BundleManifest, ManifestEncoder
from eqsearch.engine.model.structure import STRUCTURE_VERSION, FormulaStructure, formula_structure

KIND = "structure-bag"
__all__ = [
    "KIND",
    "STRUCTURE_BAG_INPUTS",
    "StructureBagEncoder",
    "StructureFeatures",
    "featurize_structure_bag",
    "stored_structure",
    "structure_terms",
]
#: Feature hashing version: bump when the terms fed to the model or their hashing change.
FEATURES_VERSION = 1
#: The file of a bundle's query heads (`read_query_heads`): ``[parts, D, D]`` float32.
QUERY_HEADS_NAME = "query-heads.npy"


@dataclass(frozen=True)
class StructureFeatures:
    """How terms become model inputs (recorded in the manifest's ``features``, the model is only valid with them).

    Attributes:
        buckets: slots of the model's term table.
        hashes: slots each term adds to (independent hashes).
        spans: whether the sub-expression hashes (``spans``) are terms besides the BM25 tokens.
    """

    buckets: int = 1 << 16
    hashes: int = 2
    spans: bool = True

    def __post_init__(self) -> None:
        if self.hashes not in (1, 2) or self.buckets < 1:
            raise ValueError(f"features need 1 or 2 hashes and a positive bucket count: {self}")

    def to_json(self) -> dict[str, Any]:
        return {
            "buckets": self.buckets,
            "hashes": self.hashes,
            "spans": self.spans,
            "version": FEATURES_VERSION,
            "structure_version": STRUCTURE_VERSION,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StructureFeatures:
        """Read a manifest's ``features``.

        Raises:
            BundleError: made by another feature or structure version, or a value is missing.
        """
        if data.get("version") != FEATURES_VERSION or data.get("structure_version") != STRUCTURE_VERSION:
            raise BundleError(
                f"the bundle's structure features are version {data.get('version')} of structure version "
                f"{data.get('structure_version')}; this eqsearch makes version {FEATURES_VERSION} of structure "
                f"version {STRUCTURE_VERSION}",
                hint="retrain the structure-bag bundle with this eqsearch (training/structure_distill.py)",
            )
        try:
            return cls(buckets=int(data["buckets"]), hashes=int(data["hashes"]), spans=bool(data["spans"]))
        except KeyError as error:
            raise BundleError(f"the manifest's features lack {error}") from None


def structure_terms(structure: FormulaStructure, spans: bool = True) -> Counter[str]:
    """The terms of a formula the model reads, with their counts: tokens ``t…``, spans ``s…``."""
    terms = Counter("t" + token for token in structure.tokens)
    if spans:
        terms.update("s" + key for key in structure.spans)
    return terms


def stored_structure(tokens_text: str, spans: Sequence[str]) -> FormulaStructure:
    """The structure an equation document stores (its whitespace-joined tokens and its span hashes), as far as the
    model reads it: the same terms `formula_structure` gave the writer (the spans' sizes are not stored: 0)."""
    return FormulaStructure(tuple(tokens_text.split()), dict.fromkeys(spans, 0), 0)


def term_digest(term: str) -> int:
    """A term's 64-bit digest (BLAKE2b, little-endian): its identity for the teacher, and its slots' source."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "little")


def hash_term(term: str, buckets: int, hashes: int) -> list[int]:
    """The slots of one term: the digest's low and high 32 bits (``hashes`` of them, 1 or 2), modulo ``buckets``."""
    digest = term_digest(term)
    return [((digest >> (32 * i)) & 0xFFFFFFFF) % buckets for i in range(hashes)]


def term_features(terms: Mapping[str, int], features: StructureFeatures) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, weights)`` of one formula's terms: each term's slots, weight ``1 + ln(count)``.

    Shapes: both ``[len(terms) * features.hashes]`` (int64, float32).
    """
    ids: list[int] = []
    weights: list[float] = []
    for term, count in terms.items():
        weight = 1.0 + math.log(count)
        for slot in hash_term(term, features.buckets, features.hashes):
            ids.append(slot)
            weights.append(weight)
    return np.asarray(ids, dtype=np.int64), np.asarray(weights, dtype=np.float32)


@dataclass(frozen=True)
class TermBatch:
    """Flat model inputs of a batch of formulas.

    Shapes:
        ids, weights, graph: ``[T]`` (int64, float32, int64); graph_sizes: ``[G]`` int64 (terms per formula).
    """

    ids: np.ndarray
    weights: np.ndarray
    graph: np.ndarray
    graph_sizes: np.ndarray

    @property
    def num_graphs(self) -> int:
        return int(self.graph_sizes.shape[0])


def term_batch(items: Sequence[tuple[np.ndarray, np.ndarray]]) -> TermBatch:
    """Concatenate per-formula ``(ids, weights)`` into one batch."""
    sizes = np.asarray([len(ids) for ids, _ in items], dtype=np.int64)
    if not items:
        empty = np.zeros(0, dtype=np.int64)
        return TermBatch(empty, np.zeros(0, dtype=np.float32), empty, empty)
    return TermBatch(
        ids=np.concatenate([ids for ids, _ in items]).astype(np.int64, copy=False),
        weights=np.concatenate([w for _, w in items]).astype(np.float32, copy=False),
        graph=np.repeat(np.arange(len(items), dtype=np.int64), sizes),
        graph_sizes=sizes,
    )


@dataclass(frozen=True)
class QueryHeads:
    """A structure-bag bundle's query heads (module docstring).

    Attributes:
        names: the parts' names, in the order of ``matrices``.
        matrices: ``[len(names), D, D]`` float32; a query's vector for part ``p`` is ``matrices[p] @ z``.
    """

    names: tuple[str, ...]
    matrices: np.ndarray

    def weigh(self, vector: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
        """``sum_p w_p M_p z``, a part not named weighing 0.

        Raises:
            ValueError: a name that is no part, a negative weight, or every weight 0.
        """
        unknown = sorted(set(weights) - set(self.names))
        if unknown:
            raise ValueError(f"no query head {unknown} (heads: {', '.join(self.names)})")
        if any(w < 0 for w in weights.values()) or not any(w > 0 for w in weights.values()):
            raise ValueError(f"query weights {dict(weights)} must be non-negative and not all zero")
        z = np.asarray(vector, dtype=np.float32)
        out = np.zeros_like(z)
        for name, matrix in zip(self.names, self.matrices, strict=True):
            if weights.get(name, 0.0):
                out += np.float32(weights[name]) * (matrix @ z)
        return out


def read_query_heads(manifest: BundleManifest) -> QueryHeads | None:
    """The bundle's query heads (None: it has none), checked against the manifest's entry and the vectors' width.

    Raises:
        BundleError: the entry is malformed, its file missing or changed, or its matrices of the wrong shape.
    """
    entry = manifest.raw.get("query_heads")
    if entry is None:
        return None
    names = entry.get("parts") if isinstance(entry, dict) else None
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) != len(names)
        or not isinstance(entry.get("path"), str)
        or not isinstance(entry.get("sha256"), str)
    ):
        raise BundleError(f"{manifest.path}: query_heads must give distinct part names, a path and a sha256")
    path = manifest.path / entry["path"]
    if not path.is_file():
        raise BundleError(f"{manifest.path}: the manifest lists {entry['path']}, which is missing")
    if sha256_file(path) != entry["sha256"]:
        raise BundleError(
            f"{path}: checksum mismatch: the query heads were changed after export",
            hint="re-export the bundle or restore the original files",
        )
    matrices = np.load(path, allow_pickle=False)
    dim = manifest.embedding_dim
    if matrices.shape != (len(names), dim, dim):
        raise BundleError(f"{path}: query heads of shape {matrices.shape}, expected {(len(names), dim, dim)}")
    return QueryHeads(tuple(names), np.ascontiguousarray(matrices, dtype=np.float32))


def featurize_structure_bag(mathml: Sequence[str], features: StructureFeatures) -> TermBatch:
    """MathML formulas -> one batch of model inputs (a formula that does not parse has no terms: a zero vector)."""
    return term_batch([term_features(structure_terms(formula_structure(m), features.spans), features) for m in mathml])


class StructureBagEncoder(ManifestEncoder):
    """A ``structure-bag`` bundle run by onnxruntime: MathML -> structural terms -> hashed slots -> unit vectors.

    Args:
        manifest: a checked manifest (see `read_manifest`).
        batch_size: formulas per onnxruntime call.
        prefer_gpu: use the CUDA provider when onnxruntime-gpu is installed (where ``provider`` is not given).
        provider: the execution provider setting (`engine.model.encoder.ONNX_PROVIDERS`).

    Raises:
        BundleError: the model does not load, does not match the manifest, or its features are of another version;
            CUDA is asked for and absent.
    """

    def __init__(
        self,
        manifest: BundleManifest,
        *,
        batch_size: int = 256,
        prefer_gpu: bool = True,
        provider: str | None = None,
    ) -> None:
        from eqsearch.engine.model.encoder import open_bundle_session

        self.manifest = manifest
        self.batch_size = batch_size
        features = manifest.raw.get("features")
        if not isinstance(features, dict):
            raise BundleError(f"{manifest.path}: a '{KIND}' manifest needs 'features'")
        self.features = StructureFeatures.from_json(features)
        self.query_heads = read_query_heads(manifest)
        self.session = open_bundle_session(manifest, prefer_gpu=prefer_gpu, provider=provider)

    @property
    def part_names(self) -> tuple[str, ...]:
        """The query heads' names (none without heads): a ranker weighs them as a composite's parts."""
        return () if self.query_heads is None else self.query_heads.names

    def weigh_query(self, vector: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
        """A query's vector for kNN over the stored ones with the heads weighed as ``weights`` ask
        (`QueryHeads.weigh`; `engine.model.composite.CompositeEncoder.weigh_query` is the same contract).

        Raises:
            ValueError: the bundle has no query heads, or the weights are not valid for them.
        """
        if self.query_heads is None:
            raise ValueError(f"{self.identity} has no query heads")
        return self.query_heads.weigh(vector, weights)

    def run_batch(self, batch: TermBatch) -> np.ndarray:
        """One onnxruntime call. Shapes: returns ``[batch.num_graphs, dim]`` float32."""
        if batch.num_graphs == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        feeds = {"ids": batch.ids, "weights": batch.weights, "graph": batch.graph, "graph_sizes": batch.graph_sizes}
        (vectors,) = self.session.run([self.manifest.output], feeds)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_structures(self, structures: Sequence[FormulaStructure]) -> np.ndarray:
        """Vectors of formulas whose structure is already computed (the ingest job, a stored document, a query).

        Shapes: returns ``[len(structures), dim]`` float32 (a formula without terms: a zero vector)."""
        out = [
            self.run_batch(
                term_batch(
                    [
                        term_features(structure_terms(s, self.features.spans), self.features)
                        for s in structures[i : i + self.batch_size]
                    ]
                )
            )
            for i in range(0, len(structures), self.batch_size)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def encode(self, mathml: Sequence[str]) -> np.ndarray:
        """Vectors of MathML formulas, in order. Shapes: returns ``[len(mathml), dim]`` float32."""
        out = [
            self.run_batch(featurize_structure_bag(mathml[i : i + self.batch_size], self.features))
            for i in range(0, len(mathml), self.batch_size)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)
