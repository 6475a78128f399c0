"""The ``composite`` encoder kind: one stored vector made of other bundles' vectors, which a query may weigh anew.

Why: the structure-bag student ranks formulas well alone but adds nothing beside the structural channel, and the
graph network adds to the default ranker but is weak alone (``benchmarks/encoder.md``, round 6). A composite stores
``sqrt(w_1) u_1 ++ ... ++ sqrt(w_k) u_k`` of its parts' unit vectors ``u_i`` (the weights ``w_i`` add up to 1), so
the cosine of two stored vectors is ``sum_i w_i cos_i``. A query may weigh the parts otherwise (`weigh_query`): kNN
then ranks by ``sum_i q_i cos_i``, any mix of the parts' cosines over the same index, so each ranker asks the one
vector for what it needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from eqsearch.engine.model.bundle import BundleError, BundleManifest, ManifestEncoder, composite_parts

KIND = "composite"


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
