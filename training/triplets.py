"""Weakly labelled triplets (anchor, positive, negative) of KDD'20 §4.2.

1. Sample a paper uniformly, then one of its equations uniformly (the anchor).
2. Pick uniformly whether the positive comes from the same section, the same paper or along a citation.
3. Sample the positive that way; when that way has no candidate, go back to 1.

The negative is an equation of another paper drawn uniformly, its equation drawn uniformly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from eqsearch.training.dataset import Corpus

SOURCES = ("section", "paper", "citation")
#: The source index of a self pair: the positive is the anchor itself, seen through another augmentation and mask.
SELF = len(SOURCES)


@dataclass(frozen=True)
class Triplets:
    """Equation indices of sampled triplets and where each positive came from.

    Shapes:
        anchor, positive, negative, source: ``[T]`` int64 (source indexes ``SOURCES``).
    """

    anchor: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    source: np.ndarray

    def __len__(self) -> int:
        return int(self.anchor.shape[0])

    def source_fractions(self) -> dict[str, float]:
        counts = Counter(self.source.tolist())
        names = (*SOURCES, "self") if counts.get(SELF) else SOURCES
        return {name: counts.get(i, 0) / max(len(self), 1) for i, name in enumerate(names)}


class TripletSampler:
    """Samples triplets from a corpus as the paper describes (see the module docstring).

    Args:
        corpus: featurized papers; needs at least two papers.
        sources: the positive sources to use (a subset of ``SOURCES``); citations are skipped automatically when
            the corpus has no citation edge, so that the sampler does not spin.
        max_attempts: how many restarts to allow per triplet before giving up with an error.
        self_share: share of the triplets whose positive is the anchor itself (`SELF`; a contrastive view pair,
            not in the paper).
    """

    def __init__(
        self, corpus: Corpus, sources: tuple[str, ...] = SOURCES, max_attempts: int = 1000, self_share: float = 0.0
    ) -> None:
        if len(corpus.papers) < 2:
            raise ValueError("triplet sampling needs at least two papers with equations")
        unknown = set(sources) - set(SOURCES)
        if unknown:
            raise ValueError(f"unknown positive sources {sorted(unknown)}; choose from {SOURCES}")
        self.corpus = corpus
        self.papers = corpus.papers
        self.paper_equations = [np.asarray(p.equations, dtype=np.int64) for p in corpus.papers]
        cited_by = corpus.cited_by()
        self.neighbours = [
            np.asarray(sorted(set(p.cites) | set(cited_by[i])), dtype=np.int64) for i, p in enumerate(corpus.papers)
        ]
        self.section_of: dict[int, tuple[int, ...]] = {}
        for paper in corpus.papers:
            for section in paper.sections:
                for eq in section:
                    self.section_of[eq] = section
        has_citations = any(len(n) for n in self.neighbours)
        self.sources = tuple(s for s in sources if s != "citation" or has_citations)
        if not self.sources:
            raise ValueError("no usable positive source (the corpus has no citation edge)")
        self.max_attempts = max_attempts
        self.self_share = self_share

    def _positive(self, anchor: int, paper: int, source: str, rng: np.random.Generator) -> int | None:
        if source == "section":
            candidates = [e for e in self.section_of[anchor] if e != anchor]
            return int(rng.choice(candidates)) if candidates else None
        if source == "paper":
            equations = self.paper_equations[paper]
            if len(equations) < 2:
                return None
            while True:
                e = int(rng.choice(equations))
                if e != anchor:
                    return e
        neighbours = self.neighbours[paper]
        if not len(neighbours):
            return None
        return int(rng.choice(self.paper_equations[int(rng.choice(neighbours))]))

    def sample_one(self, rng: np.random.Generator) -> tuple[int, int, int, int]:
        """One triplet ``(anchor, positive, negative, source index)``."""
        n_papers = len(self.papers)
        for _ in range(self.max_attempts):
            paper = int(rng.integers(n_papers))
            anchor = int(rng.choice(self.paper_equations[paper]))
            if self.self_share and rng.random() < self.self_share:
                source_index, positive = SELF, anchor
            else:
                source = self.sources[int(rng.integers(len(self.sources)))]
                source_index, positive = SOURCES.index(source), self._positive(anchor, paper, source, rng)
            if positive is None:
                continue
            other = int(rng.integers(n_papers - 1))
            other += other >= paper  # any paper but the anchor's
            negative = int(rng.choice(self.paper_equations[other]))
            return anchor, positive, negative, source_index
        raise RuntimeError(f"no positive found after {self.max_attempts} attempts: is every paper a single equation?")

    def sample(self, count: int, seed: int) -> Triplets:
        """``count`` triplets, reproducible from ``seed``."""
        rng = np.random.default_rng(seed)
        rows = np.array([self.sample_one(rng) for _ in range(count)], dtype=np.int64).reshape(count, 4)
        return Triplets(rows[:, 0].copy(), rows[:, 1].copy(), rows[:, 2].copy(), rows[:, 3].copy())
