"""A formula's structural terms folded into one fixed-width vector, so that the structural list can start from a kNN
search instead of walking posting lists.

BM25 over a query's structural terms (`engine.model.structure`) walks the posting list of every term it matches,
and the terms that find relevant formulas (generalised pairs such as ``V:*|N:*|sup``) are in thousands of equations
each: at a million equations that walk costs more than the whole kNN list (``benchmarks/search.md``). A sketch
gives the structural list a cheap first stage: each term goes to one of `SKETCH_DIMS` coordinates, with a sign,
both read from a hash of the term (feature hashing), so that the cosine of two sketches approximates the cosine of
the two bags of terms. An equation weighs a term by 1 + log of its count, needing nothing but itself (no collection
statistics at index time); a query weighs it by its count times the term's inverse document frequency in the index
when that is known, so that a candidate close to the query shares its rare terms, as BM25 ranks first. The HNSW
graph of Elasticsearch finds the nearest sketches, and the rescore then gives that window its exact BM25 and the
sub-expression match (`engine.search.query.structure_body`).

Sketches are bytes (``element_type: byte``, values in -127..127, each vector scaled to its largest coordinate): a
quarter of float storage, and the development topics rank the same as with floats (benchmarks/formula_search.md,
"A kNN first stage on structure sketches"). A formula without terms has no sketch (cosine needs a non-zero vector).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache

__all__ = ["SKETCH_DIMS", "SKETCH_VERSION", "document_sketch", "idf", "query_sketch", "sketch"]

#: Coordinates per sketch: 512 keeps the structural list's top 50 of the development topics (97% of BM25's over all
#: terms); 256 loses a few points and 1,024 gains nothing (benchmarks/formula_search.md).
SKETCH_DIMS = 512
#: Bump when the hashing or the weights change: indexed sketches would no longer be comparable with the query's.
SKETCH_VERSION = 1
_PEAK = 127


@lru_cache(maxsize=200_000)
def _slot(term: str) -> tuple[int, int]:
    """The coordinate and the sign a term adds to (a keyed hash, stable across processes and platforms)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8, person=b"eqsketch").digest()
    return int.from_bytes(digest[:4], "little") % SKETCH_DIMS, 1 if digest[4] & 1 else -1


def sketch(weights: Mapping[str, float]) -> list[int] | None:
    """The byte sketch of weighted terms: each term's weight added, with its sign, to its coordinate, then scaled so
    that the largest coordinate is 127; None when no term has weight (or all of them cancel out)."""
    vector = [0.0] * SKETCH_DIMS
    for term, weight in weights.items():
        if weight:
            slot, sign = _slot(term)
            vector[slot] += sign * weight
    peak = max(map(abs, vector))
    if peak == 0:
        return None
    return [round(value * _PEAK / peak) for value in vector]


def document_sketch(tokens: Sequence[str]) -> list[int] | None:
    """An equation's sketch: each distinct term weighed by 1 + log of its count (`FormulaStructure.tokens`)."""
    return sketch({term: 1.0 + math.log(count) for term, count in Counter(tokens).items()})


def idf(share: float, documents: int) -> float:
    """BM25's inverse document frequency (Lucene's) of a term found in ``share`` of ``documents`` documents."""
    found = share * documents
    return math.log(1.0 + (documents - found + 0.5) / (found + 0.5))


def query_sketch(
    tokens: Sequence[str], shares: Mapping[str, float] | None = None, documents: int = 0
) -> list[int] | None:
    """A query's sketch: each distinct term weighed by its count times its `idf` in the index (``shares``: term ->
    the share of the documents holding it, `engine.search.termstats`; a term no document holds is left out, as it
    can match nothing). Without frequencies (None, or no documents) every term weighs its count alone."""
    counts = Counter(tokens)
    if shares is None or documents <= 0:
        return sketch({term: float(count) for term, count in counts.items()})
    return sketch(
        {term: count * idf(shares[term], documents) for term, count in counts.items() if shares.get(term, 0.0) > 0}
    )
