"""Scalar quantization of stored vectors, as a quantized kNN index stores them, and its fake-quantization for training.

Elasticsearch's ``int8_hnsw`` (and ``int4_hnsw``) keeps each stored vector as small integers times a scale; a query
stays in float32. `quantize_vectors` rounds vectors the symmetric way, ``round(x / s)`` clipped to
``[-(2^(b-1) - 1), 2^(b-1) - 1]`` times ``s``, with one scale per vector (its largest coordinate) or per dimension
(the largest over the collection), and returns them dequantized, so that any ranking code scores them as the index
would. `fake_quantize` is the same rounding on a torch batch with a straight-through gradient (Jacob et al., CVPR
2018: the forward pass sees the rounded vectors, the backward pass the identity), so a student learns a space that
keeps its order after rounding. `rounded_cosines` scores queries against rounded vectors as such an index does: by
cosine, both sides normalised after rounding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

SCALES = ("vector", "dimension")


def _levels(bits: int) -> int:
    if not 2 <= bits <= 16:
        raise ValueError(f"quantization needs 2 to 16 bits, not {bits}")
    return (1 << (bits - 1)) - 1


def quantize_vectors(vectors: np.ndarray, bits: int = 8, scale: str = "vector") -> np.ndarray:
    """Vectors rounded to signed ``bits``-bit integers with a symmetric scale, dequantized (module docstring).

    Args:
        vectors: ``[N, D]`` float vectors (a zero row stays zero).
        bits: 8 for int8, 4 for int4.
        scale: ``vector`` (one scale per row: its largest absolute coordinate) or ``dimension`` (one per column,
            over every row).

    Shapes: returns ``[N, D]`` float32.

    Raises:
        ValueError: an unknown scale or a bit width outside 2-16.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, not {scale!r}")
    levels = _levels(bits)
    v = np.asarray(vectors, dtype=np.float32)
    top = np.abs(v).max(axis=1 if scale == "vector" else 0, keepdims=True)
    step = np.where(top > 0, top / levels, 1.0).astype(np.float32)
    return (np.clip(np.rint(v / step), -levels, levels) * step).astype(np.float32)


def fake_quantize(z: torch.Tensor, bits: int) -> torch.Tensor:
    """`quantize_vectors` with one scale per vector on a torch batch, its gradient passed straight through.

    Shapes: z: ``[B, D]``; returns ``[B, D]``.
    """
    import torch

    levels = _levels(bits)
    step = z.detach().abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / levels
    rounded = torch.clamp(torch.round(z / step), -levels, levels) * step
    return z + (rounded - z).detach()


def rounded_cosines(
    queries: np.ndarray, vectors: np.ndarray, bits: int = 8, scale: str = "vector", round_queries: bool = False
) -> np.ndarray:
    """Cosines of ``queries`` with ``vectors`` rounded by `quantize_vectors` (``round_queries``: the queries too, one
    scale each, as the engine's int8 index rounds them, `engine.index.vectors.query_vector`); a zero row scores 0.

    Shapes: queries ``[Q, D]``, vectors ``[N, D]``; returns ``[Q, N]`` float32.
    """

    def unit(v: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.where(norm > 0, norm, 1.0)

    q = quantize_vectors(queries, bits, "vector") if round_queries else np.asarray(queries, dtype=np.float32)
    return (unit(q) @ unit(quantize_vectors(vectors, bits, scale)).T).astype(np.float32)
