"""The structure-bag encoder (kind ``structure-bag``): a formula's structural terms, hashed, summed into a learned
64-d vector by a small ONNX model; served by onnxruntime, never torch.

The structural channel's own terms (`engine.model.structure`: symbols, symbol pairs with their relation path, and
the hashed sub-expressions) are what the model reads, so the vector space is trained to reproduce the structural
similarity (training/structure_distill.py distils the structural BM25 score into it). Each term is hashed into
`StructureFeatures.hashes` of `StructureFeatures.buckets` slots (two independent hashes, so two colliding terms rarely
share both rows); a term repeated ``n`` times weighs ``1 + ln n``. The model (``model.onnx``) takes the flat
``ids``/``weights`` of a batch with ``graph`` (the equation of each term) and ``graph_sizes`` (terms per equation),
and returns unit vectors (cosine similarity).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
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


def featurize_structure_bag(mathml: Sequence[str], features: StructureFeatures) -> TermBatch:
    """MathML formulas -> one batch of model inputs (a formula that does not parse has no terms: a zero vector)."""
    return term_batch([term_features(structure_terms(formula_structure(m), features.spans), features) for m in mathml])


class StructureBagEncoder(ManifestEncoder):
    """A ``structure-bag`` bundle run by onnxruntime: MathML -> structural terms -> hashed slots -> unit vectors.

    Args:
        manifest: a checked manifest (see `read_manifest`).
        batch_size: formulas per onnxruntime call.
        prefer_gpu: use the CUDA provider when onnxruntime-gpu is installed.

    Raises:
        BundleError: the model does not load, does not match the manifest, or its features are of another version.
    """

    def __init__(self, manifest: BundleManifest, *, batch_size: int = 256, prefer_gpu: bool = True) -> None:
        from eqsearch.engine.model.encoder import open_bundle_session

        self.manifest = manifest
        self.batch_size = batch_size
        features = manifest.raw.get("features")
        if not isinstance(features, dict):
            raise BundleError(f"{manifest.path}: a '{KIND}' manifest needs 'features'")
        self.features = StructureFeatures.from_json(features)
        self.session = open_bundle_session(manifest, prefer_gpu=prefer_gpu)

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
