"""The teacher of the structure-bag encoder: eqsearch's structural BM25 score, computed offline in numpy.

`Bm25Teacher` holds, for a set of formulas (`training.structure_data.TermData`), each BM25 token's document weight
(Elasticsearch's BM25: ``idf · tf / (tf + k1 · (1 - b + b · len / avglen))``, idf ``ln(1 + (N - df + 0.5) / (df +
0.5))``, k1 = 1.2, b = 0.75, the field length counted in tokens) and its query weight (the count: a query repeats a
token as often as the formula has it). `Bm25Teacher.scores` gives the score of every query formula against every
candidate by a sort-merge join on the tokens' digests; divided by the query's score against itself it is the soft
target in [0, ~1] that the student's cosine learns (`self_scores`).

`MinedBatches` composes training batches with hard negatives and near positives mined by that score: a batch is
``seeds`` random training formulas, each with the ``per_seed - 1`` best-scoring formulas of a candidate pool (random
formulas and formulas that share one of the seed's rarer tokens), so that every batch holds groups of structurally
close formulas among unrelated ones. With ``documents`` and ``same_document``, that many of each group's neighbours
are instead random formulas of the seed's own document (the paper's contextual positives), so that a contextual
teacher has pairs to teach in every batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from eqsearch.training.structure_data import TermData

K1 = 1.2
B = 0.75


def _entries(offsets: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the given formulas' entries in CSR arrays, and for each the position of its formula in ``items``."""
    starts, ends = offsets[items], offsets[items + 1]
    sizes = ends - starts
    owner = np.repeat(np.arange(len(items), dtype=np.int64), sizes)
    within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.repeat(starts, sizes) + within, owner


def _join(
    offsets: np.ndarray, digest: np.ndarray, queries: np.ndarray, candidates: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (query entry, candidate entry) pair with the same digest, by a sort-merge join.

    Returns:
        the query entries' positions, the candidate entries' positions, and the flat cell ``q * len(candidates) + c``
        of each pair.
    """
    q_pos, q_owner = _entries(offsets, np.asarray(queries, dtype=np.int64))
    c_pos, c_owner = _entries(offsets, np.asarray(candidates, dtype=np.int64))
    order = np.argsort(digest[c_pos], kind="stable")
    c_pos, c_owner = c_pos[order], c_owner[order]
    c_digest = digest[c_pos]
    q_digest = digest[q_pos]
    lo = np.searchsorted(c_digest, q_digest, side="left")
    hits = np.searchsorted(c_digest, q_digest, side="right") - lo
    total = int(hits.sum())
    q_index = np.repeat(np.arange(len(q_pos), dtype=np.int64), hits)
    c_index = np.repeat(lo, hits) + (np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(hits) - hits, hits))
    return q_pos[q_index], c_pos[c_index], q_owner[q_index] * len(candidates) + c_owner[c_index]


@dataclass
class SpanTeacher:
    """The rerank's sub-expression match: the size of the largest sub-expression two formulas share, divided by the
    larger formula's (the size of its largest sub-expression), for the sub-expression hashes of a set of formulas.

    Attributes:
        offsets: ``[N + 1]`` CSR offsets into the arrays below.
        digest: ``[S]`` uint64 sub-expression digests.
        size: ``[S]`` float32 their sizes in symbols.
        largest: ``[N]`` float32 each formula's largest sub-expression.
    """

    offsets: np.ndarray
    digest: np.ndarray
    size: np.ndarray
    largest: np.ndarray

    @classmethod
    def build(cls, data: TermData) -> SpanTeacher:
        keep = ~data.token
        rows = data.rows()[keep]
        n = len(data)
        offsets = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n)))).astype(np.int64)
        size = data.size[keep].astype(np.float32)
        largest = np.zeros(n, dtype=np.float32)
        np.maximum.at(largest, rows, size)
        return cls(offsets, data.digest[keep], size, largest)

    def match(self, queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Largest shared sub-expression over the larger formula, in [0, 1].

        Shapes: returns ``[len(queries), len(candidates)]`` float32.
        """
        queries = np.asarray(queries, dtype=np.int64)
        candidates = np.asarray(candidates, dtype=np.int64)
        _, c_pos, cells = _join(self.offsets, self.digest, queries, candidates)
        best = np.zeros(len(queries) * len(candidates), dtype=np.float32)
        np.maximum.at(best, cells, self.size[c_pos])
        larger = np.maximum(self.largest[queries][:, None], self.largest[candidates][None, :])
        return best.reshape(len(queries), len(candidates)) / np.maximum(larger, 1.0)


@dataclass
class Bm25Teacher:
    """BM25 weights of the token terms of a set of formulas (statistics from those formulas).

    Attributes:
        offsets: ``[N + 1]`` CSR offsets into the token arrays below.
        digest: ``[T]`` uint64 token digests.
        query: ``[T]`` float32 query weight (count).
        doc: ``[T]`` float32 BM25 document weight.
    """

    offsets: np.ndarray
    digest: np.ndarray
    query: np.ndarray
    doc: np.ndarray

    @classmethod
    def build(cls, data: TermData, k1: float = K1, b: float = B) -> Bm25Teacher:
        """The teacher over every formula of ``data``, with document frequencies counted over them."""
        keep = data.token
        rows = data.rows()[keep]
        digest = data.digest[keep]
        count = data.count[keep]
        n = len(data)
        sizes = np.bincount(rows, minlength=n)
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        _, inverse, df = np.unique(digest, return_inverse=True, return_counts=True)
        idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        length = np.bincount(rows, weights=count, minlength=n).astype(np.float32)
        avg = float(length.mean()) if n else 1.0
        norm = k1 * (1 - b + b * length[rows] / max(avg, 1e-6))
        doc = idf[inverse] * count / (count + norm)
        return cls(offsets, digest, count.astype(np.float32), doc.astype(np.float32))

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def scores(self, queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """BM25 score of each query formula against each candidate formula (indices into the teacher's formulas).

        Shapes: returns ``[len(queries), len(candidates)]`` float32.
        """
        n_q, n_c = len(queries), len(candidates)
        q_pos, c_pos, cells = _join(self.offsets, self.digest, queries, candidates)
        values = self.query[q_pos] * self.doc[c_pos]
        return np.bincount(cells, weights=values, minlength=n_q * n_c).reshape(n_q, n_c).astype(np.float32)

    def self_scores(self, items: np.ndarray) -> np.ndarray:
        """Each formula's score against itself (the normaliser of the soft targets). Shapes: ``[len(items)]``."""
        pos, owner = _entries(self.offsets, np.asarray(items, dtype=np.int64))
        return np.bincount(owner, weights=self.query[pos] * self.doc[pos], minlength=len(items)).astype(np.float32)

    def postings(self, max_df: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """An inverted index of the tokens held by at most ``max_df`` formulas (and at least 2).

        Returns:
            ``(digests, starts, formulas)``: sorted digests, their postings' start offsets (one more than digests),
            and the formulas of all postings one after the other.
        """
        rows = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))
        order = np.argsort(self.digest, kind="stable")
        sorted_digest, sorted_rows = self.digest[order], rows[order]
        uniq, starts, df = np.unique(sorted_digest, return_index=True, return_counts=True)
        keep = (df >= 2) & (df <= max_df)
        kept_starts, kept_df = starts[keep], df[keep]
        pieces = [sorted_rows[s : s + d] for s, d in zip(kept_starts, kept_df, strict=True)]
        formulas = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(kept_df))).astype(np.int64)
        return uniq[keep], offsets, formulas


class MinedBatches:
    """Batches of training formulas grouped by structural similarity (module docstring).

    Args:
        teacher: the BM25 teacher over the training formulas.
        seeds: groups per batch.
        per_seed: formulas per group (the seed and its mined neighbours).
        pool: random formulas in each seed's candidate pool, besides those drawn from its rarer tokens' postings.
        max_df: tokens held by more formulas than this are not used to draw candidates.
        documents: each formula's document index (for ``same_document``).
        same_document: neighbours per group drawn from the seed's document (at most ``per_seed - 1``; where the
            document has fewer other formulas, the mined ones fill the group).

    Raises:
        ValueError: ``same_document`` without ``documents``, or more than a group's neighbours.
    """

    def __init__(
        self,
        teacher: Bm25Teacher,
        *,
        seeds: int = 32,
        per_seed: int = 8,
        pool: int = 1024,
        max_df: int = 2000,
        documents: np.ndarray | None = None,
        same_document: int = 0,
    ) -> None:
        if same_document and documents is None:
            raise ValueError("same_document needs each formula's document")
        if not 0 <= same_document <= per_seed - 1:
            raise ValueError(f"same_document must be 0 to per_seed - 1 ({per_seed - 1}), not {same_document}")
        self.teacher = teacher
        self.seeds = seeds
        self.per_seed = per_seed
        self.pool = pool
        self.same_document = same_document
        self.post_digest, self.post_offsets, self.post_formulas = teacher.postings(max_df)
        if same_document and documents is not None:
            self.doc_order = np.argsort(documents, kind="stable")
            sorted_docs = documents[self.doc_order]
            self.doc_start = np.searchsorted(sorted_docs, documents, side="left")
            self.doc_end = np.searchsorted(sorted_docs, documents, side="right")

    def _same_document(self, seed: int, rng: np.random.Generator) -> np.ndarray:
        """Up to ``same_document`` other formulas of the seed's document, at random."""
        members = self.doc_order[self.doc_start[seed] : self.doc_end[seed]]
        members = members[members != seed]
        return rng.choice(members, size=min(self.same_document, len(members)), replace=False)

    def _drawn(self, seed: int, rng: np.random.Generator, per_token: int = 16, tokens: int = 6) -> np.ndarray:
        """Formulas that share one of a few random rarer tokens of the seed."""
        start, end = self.teacher.offsets[seed], self.teacher.offsets[seed + 1]
        digests = self.teacher.digest[start:end]
        where = np.searchsorted(self.post_digest, digests)
        valid = where < len(self.post_digest)
        where = where[valid][self.post_digest[where[valid]] == digests[valid]]
        if not len(where):
            return np.zeros(0, dtype=np.int64)
        chosen = rng.choice(np.unique(where), size=min(tokens, len(np.unique(where))), replace=False)
        out = []
        for k in chosen:
            lo, hi = self.post_offsets[k], self.post_offsets[k + 1]
            out.append(self.post_formulas[rng.integers(lo, hi, size=min(per_token, hi - lo))])
        return np.concatenate(out)

    def batch(self, rng: np.random.Generator) -> np.ndarray:
        """Indices of one batch's formulas (``seeds × per_seed``, groups contiguous). One candidate pool serves all
        the seeds: ``pool`` random formulas and those drawn from each seed's rarer tokens."""
        n = len(self.teacher)
        seeds = rng.choice(n, size=self.seeds, replace=False)
        drawn = [self._drawn(int(seed), rng) for seed in seeds]
        pool = np.unique(np.concatenate([rng.integers(0, n, size=self.pool), *drawn]))
        scores = self.teacher.scores(seeds, pool)
        scores[pool[None, :] == seeds[:, None]] = -np.inf
        best = np.argsort(-scores, axis=1, kind="stable")[:, : self.per_seed - 1]
        groups = np.concatenate([seeds[:, None], pool[best]], axis=1)
        if self.same_document:
            for row, seed in enumerate(seeds):
                same = self._same_document(int(seed), rng)
                mined = [j for j in groups[row, 1:] if j not in set(same.tolist())]
                groups[row, 1:] = np.concatenate([same, mined])[: self.per_seed - 1]
        return groups.reshape(-1).astype(np.int64)
