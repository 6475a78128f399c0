"""The ``composite`` encoder kind: one stored vector made of other bundles' vectors, which a query may weigh anew.

Why: the structure-bag student ranks formulas well alone but adds nothing beside the structural channel, and the
graph network adds to the default ranker but is weak alone (``docs/decisions/composite-encoder.md``). A composite stores
``sqrt(w_1) u_1 ++ ... ++ sqrt(w_k) u_k`` of its parts' unit vectors ``u_i`` (the weights ``w_i`` add up to 1), so
the cosine of two stored vectors is ``sum_i w_i cos_i``. A query may weigh the parts otherwise (`weigh_query`): kNN
then ranks by ``sum_i q_i cos_i``, any mix of the parts' cosines over the same index, so each ranker asks the one
vector for what it needs. The manifest's ``parts`` are read and written here (`composite_parts`,
`make_composite_manifest`); `engine.model.bundle.read_manifest` checks them with the rest of the schema.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.model.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    BundleError,
    BundleManifest,
    ManifestEncoder,
    read_manifest,
)

KIND = "composite"


@dataclass(frozen=True)
class CompositePart:
    """One bundle of a composite (`engine.model.composite`), as its manifest names it.

    Attributes:
        name: what rankers call the part (``graph``, ``structure``).
        path: the part's bundle directory (the manifest gives it relative to the composite's).
        identity: the identity the part's bundle must have (`BundleManifest.identity`): the composite's own identity is
            made of these, so a changed part is refused instead of filling an index with other vectors.
        dim: the part's vector width.
        weight: the part's share of the stored vector's cosine (the parts' weights add up to 1).
    """

    name: str
    path: Path
    identity: str
    dim: int
    weight: float


def composite_parts(entries: list[Any], where: Path) -> list[CompositePart]:
    """The checked ``parts`` of a composite manifest.

    Raises:
        BundleError: an entry lacks a key or has a bad value, names repeat, or the weights do not add up to 1.
    """
    parts: list[CompositePart] = []
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"name", "path", "identity", "dim", "weight"}:
            raise BundleError(
                f"{where}: part {number} of the manifest must give exactly name, path, identity, dim and weight"
            )
        name, relative, identity, dim, weight = (entry[k] for k in ("name", "path", "identity", "dim", "weight"))
        if not (
            isinstance(name, str) and name and isinstance(relative, str) and relative and isinstance(identity, str)
        ):
            raise BundleError(f"{where}: part {number}'s name, path and identity must be non-empty text")
        if Path(relative).is_absolute():
            raise BundleError(f"{where}: part '{name}' must give its path relative to the composite bundle")
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise BundleError(f"{where}: part '{name}' must have a positive integer dim, got {dim!r}")
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not 0 < weight <= 1:
            raise BundleError(f"{where}: part '{name}' must have a weight in (0, 1], got {weight!r}")
        parts.append(CompositePart(name, Path(os.path.normpath(where / relative)), identity, dim, float(weight)))
    if not parts or len({p.name for p in parts}) != len(parts):
        raise BundleError(f"{where}: a composite needs parts with distinct names")
    if abs(sum(p.weight for p in parts) - 1.0) > 1e-6:
        raise BundleError(f"{where}: the parts' weights add up to {sum(p.weight for p in parts)}, not 1")
    return parts


def make_composite_manifest(
    bundle: str | Path,
    parts: list[tuple[str, str, float]],
    *,
    eqsearch_version: str,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a composite bundle (`engine.model.composite`) whose parts already exist.

    Args:
        bundle: the composite's directory.
        parts: ``(name, path relative to bundle, weight)`` per part, in the order of the vector's slices; each part's
            bundle is read and checked, and its identity and width recorded.
        eqsearch_version: the eqsearch version writing the bundle.
        provenance: further top-level entries (what each part is, the figures that chose the weights).

    Raises:
        BundleError: a part is not a checked bundle of a kind with a model, or the entries are not valid parts.
    """
    path = Path(bundle)
    entries = []
    for name, relative, weight in parts:
        where = Path(os.path.normpath(path / relative))  # lexically: the composite's directory may not exist yet
        part = read_manifest(where, eqsearch_version=eqsearch_version)
        if part.encoder == KIND:
            raise BundleError(f"{where}: a composite's part cannot be a composite")
        if part.similarity != "cosine":
            raise BundleError(f"{where}: a composite's parts must compare by cosine")
        entries.append({"name": name, "path": relative, "identity": part.identity, "dim": part.embedding_dim,
                        "weight": weight})  # fmt: skip
    checked = composite_parts(entries, path)
    manifest: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "encoder": KIND,
        "eqsearch_version": eqsearch_version,
        "opset": 0,  # no model of its own
        "inputs": [],
        "output": "embedding",
        "embedding_dim": sum(p.dim for p in checked),
        "similarity": "cosine",
        "files": {},
        "parts": entries,
    }
    clashes = sorted(set(provenance or {}) & set(manifest))
    if clashes:
        raise BundleError(f"provenance entries {clashes} would replace keys of the manifest schema")
    manifest.update(provenance or {})
    return manifest


class CompositeEncoder(ManifestEncoder):
    """A ``composite`` bundle: its parts' encoders, each checked against the identity and width its manifest records.

    Args:
        manifest: a checked composite manifest (see `read_manifest`).
        **options: passed to every part's encoder (``batch_size``, ``prefer_gpu``).

    Raises:
        BundleError: a part does not load, or is not the bundle the composite was made of (another identity or width),
            or does not compare by cosine.
    """

    def __init__(self, manifest: BundleManifest, **options: Any) -> None:
        from eqsearch.engine.model.encoder import load_encoder

        self.manifest = manifest
        self.parts = composite_parts(manifest.raw["parts"], manifest.path)
        self.encoders = []
        for part in self.parts:
            encoder = load_encoder(part.path, **options)
            if encoder.identity != part.identity or encoder.dim != part.dim or encoder.similarity != "cosine":
                raise BundleError(
                    f"{manifest.path}: part '{part.name}' at {part.path} is {encoder.identity} ({encoder.dim}-d, "
                    f"{encoder.similarity}), the composite was made of {part.identity} ({part.dim}-d, cosine)",
                    hint="restore the part's bundle, or write the composite's manifest again for the new one",
                )
            self.encoders.append(encoder)
        self.slices = []
        start = 0
        for part in self.parts:
            self.slices.append(slice(start, start + part.dim))
            start += part.dim

    @property
    def part_names(self) -> tuple[str, ...]:
        return tuple(part.name for part in self.parts)

    def encode(self, mathml: Sequence[str]) -> np.ndarray:
        """Vectors of MathML equations: each part's unit vector times the square root of its weight, side by side (a
        part's zero vector stays zero). Shapes: returns ``[len(mathml), dim]`` float32.

        Raises:
            MathMLError: as a part's encoder raises it.
        """
        out = np.zeros((len(mathml), self.dim), dtype=np.float32)
        for part, encoder, where in zip(self.parts, self.encoders, self.slices, strict=True):
            vectors = np.asarray(encoder.encode(mathml), dtype=np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            out[:, where] = np.sqrt(part.weight) * vectors / np.where(norms > 0, norms, 1.0)
        return out

    def weigh_query(self, vector: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
        """A stored-form vector reweighed so that its cosine with stored vectors ranks by ``sum_i q_i cos_i``.

        Args:
            vector: one vector as `encode` gives it.
            weights: ``part name -> q_i``; a part not named keeps its stored weight.

        Raises:
            ValueError: a name that is no part, a negative weight, or every part weighted 0.
        """
        unknown = sorted(set(weights) - set(self.part_names))
        if unknown:
            raise ValueError(f"{self.identity} has no part {unknown} (parts: {', '.join(self.part_names)})")
        if any(w < 0 for w in weights.values()) or not any(weights.get(p.name, p.weight) > 0 for p in self.parts):
            raise ValueError(f"query weights {dict(weights)} must be non-negative and not all zero")
        out = np.array(vector, dtype=np.float32, copy=True)
        for part, where in zip(self.parts, self.slices, strict=True):
            out[where] *= weights.get(part.name, part.weight) / part.weight
        return out
