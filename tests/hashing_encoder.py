"""The tests' stand-in for the trained formula encoder (same `Encoder` protocol), shared by the search, ingest-job
and web tests and by benchmarks/search.py when no model bundle is installed.

It hashes MathML token features into 64-d, so identical formulas get identical vectors and formulas that share
structure get close ones: enough to test search plumbing and exact rankings without training a model. It stands in
for the model only; Elasticsearch, KaTeX and the browser are always real.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

_TOKEN = re.compile(r"<(m[a-z]+)[^>]*>([^<]*)")


class HashingEncoder:
    """MathML -> 64-d: signed feature hashing of (tag, text) tokens and token bigrams, then L2-normalised."""

    kind = "hashing-test"
    similarity = "max_inner_product"

    def __init__(self, dim: int = 64, identity: str = "hashing-test:1") -> None:
        self.dim = dim
        self.identity = identity  # another identity stands for another model (the same vectors, on purpose)

    def _features(self, mathml: str) -> list[str]:
        tokens = [f"{tag}:{text.strip()}" for tag, text in _TOKEN.findall(mathml) if tag not in ("math", "semantics")]
        return tokens + [f"{a}|{b}" for a, b in itertools.pairwise(tokens)]

    def encode(self, mathml: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(mathml), self.dim), dtype=np.float32)
        for row, text in enumerate(mathml):
            for feature in self._features(text):
                digest = hashlib.sha1(feature.encode()).digest()
                index = int.from_bytes(digest[:4], "little") % self.dim
                out[row, index] += 1.0 if digest[4] & 1 else -1.0
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out
