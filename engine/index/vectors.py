"""How a formula vector is stored: as float32 numbers, or rounded to int8 (``element_type: byte``).

An int8 vector costs a quarter of a float one on disk and in memory, and, unlike Elasticsearch's quantized
``int8_hnsw``, keeps no float copy beside it. Each vector is scaled by its own largest component (one scale per
vector: ``round(127 x / max |x|)``), which cosine similarity ignores. Every writer rounds the vectors of a cosine
index so (`stored_vector`), whatever its field's element type, and every query vector compared with them
(`query_vector`): a float field then ranks exactly as an int8 one, and a writer or a search that meets the index
just migrated from one element type to the other fits it unchanged. What it keeps of the rankings:
``benchmarks/scale.md`` ("Vectors, quantized").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The ``element_type`` values the equations index's formula vector may take.
ELEMENT_TYPES = ("float", "byte")


def byte_vector(vector: Sequence[float] | np.ndarray) -> list[int] | None:
    """``vector`` rounded to int8 with one scale for the whole vector (its largest magnitude maps to 127); None for a
    vector with no non-zero component (cosine similarity has no direction for it)."""
    values = np.asarray(vector, dtype=np.float64)
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    if not np.isfinite(peak) or peak == 0.0:
        return None
    return [int(x) for x in np.rint(values * (127.0 / peak))]


def stored_vector(vector: Sequence[float] | np.ndarray, similarity: str) -> list[float] | list[int] | None:
    """``vector`` as every writer of an equations index of ``similarity`` stores it: rounded to int8 where compared
    by cosine (`byte_vector`; a float field takes the same whole numbers, so a document fits the index before and
    after a migration between the two element types), as floats otherwise; None for a vector cosine cannot compare.
    """
    if similarity == "cosine":
        return byte_vector(vector)
    return [float(x) for x in vector]


def query_vector(vector: np.ndarray, similarity: str) -> np.ndarray:
    """A query vector as it is compared with the stored ones of an index of ``similarity``: rounded as they are
    (`byte_vector`, int8) where compared by cosine, which an int8 field requires and a float one takes alike; as it
    is otherwise, and where cosine has no direction for it (zeros)."""
    if similarity != "cosine":
        return vector
    rounded = byte_vector(vector)
    return vector if rounded is None else np.asarray(rounded, dtype=np.int8)
