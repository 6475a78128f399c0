"""Evaluation metrics of KDD'20 §5-6 and of ARQMath-style formula retrieval; numpy only.

- ranking score on triplets with the hold-out confidence bounds of Theorem 5.1 and eq. 9 (§5.2), and a
  paper-clustered bootstrap interval of the difference of two ranking scores on the same triplets;
- 1-nearest-neighbour leave-one-out accuracy and the ranking score over a labelled set (§6.1);
- P@k and uMAP with the keyword-relevance heuristic (§6.3);
- nDCG′, MAP′, P′@10 (unjudged results removed, as ARQMath does) and bpref of one topic's ranking; reading TREC
  files and averaging over topics is `eqsearch.evaluation.trec`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RankingScore:
    """Share of triplets whose positive pair is more similar than the negative pair, with its bounds.

    Attributes:
        score: ŝ, the empirical ranking score.
        triplets: |D|.
        papers: N, the number of held-out papers the triplets were drawn from.
        chromatic: χ̂, colours of a greedy colouring of the triplets' dependency graph (triplets sharing a paper).
        delta: 1 - confidence.
        bound_eq9: ``sqrt(ln(1/δ) χ̂ / (2|D|))``: with probability ≥ 1 - δ the true score is within this of ŝ
            (eq. 9, incomplete U-statistic; the same bound holds for both tails).
        bound_theorem51: ``3 sqrt(ln(1/δ) / (2N))`` (Theorem 5.1, complete U-statistic over N papers).
    """

    score: float
    triplets: int
    papers: int
    chromatic: int
    delta: float
    bound_eq9: float
    bound_theorem51: float

    def describe(self) -> str:
        return (
            f"{100 * self.score:.1f}% ± {100 * self.bound_eq9:.1f} (eq. 9, δ={self.delta}, χ̂={self.chromatic}, "
            f"|D|={self.triplets}); Theorem 5.1 over N={self.papers} papers: ± {100 * self.bound_theorem51:.1f}"
        )


def greedy_chromatic_number(triplet_papers: np.ndarray) -> int:
    """Colours used by a greedy colouring of the dependency graph of triplets (KDD'20 §5.2, eq. 9).

    Two triplets are adjacent when they share a paper. Each triplet takes the smallest colour not used by an
    earlier triplet touching one of its papers.

    Shapes:
        triplet_papers: ``[T, 3]`` paper index of anchor, positive and negative.
    """
    used: dict[int, set[int]] = {}
    n_colours = 0
    for row in triplet_papers.tolist():
        papers = set(row)
        taken: set[int] = set()
        for p in papers:
            taken |= used.get(p, set())
        colour = 0
        while colour in taken:
            colour += 1
        for p in papers:
            used.setdefault(p, set()).add(colour)
        n_colours = max(n_colours, colour + 1)
    return n_colours


def ranking_score(
    s_positive: np.ndarray, s_negative: np.ndarray, triplet_papers: np.ndarray, n_papers: int, delta: float = 0.05
) -> RankingScore:
    """Ranking score of eq. 3 on held-out triplets with the bounds of eq. 9 and Theorem 5.1.

    Ties count as failures (the kernel demands ``>``).

    Shapes:
        s_positive, s_negative: ``[T]``; triplet_papers: ``[T, 3]``.
    """
    t = int(s_positive.shape[0])
    score = float(np.mean(s_positive > s_negative)) if t else float("nan")
    chi = greedy_chromatic_number(triplet_papers) if t else 0
    log_term = math.log(1.0 / delta)
    return RankingScore(
        score=score,
        triplets=t,
        papers=n_papers,
        chromatic=chi,
        delta=delta,
        bound_eq9=math.sqrt(log_term * chi / (2.0 * t)) if t else float("nan"),
        bound_theorem51=3.0 * math.sqrt(log_term / (2.0 * n_papers)) if n_papers else float("nan"),
    )


@dataclass(frozen=True)
class PairedBootstrap:
    """Paper-clustered bootstrap interval of ŝ_a - ŝ_b, two ranking scores (eq. 3) on the same triplets.

    Attributes:
        difference: ŝ_a - ŝ_b on all triplets (the point estimate).
        low, high: the ``δ/2`` and ``1 - δ/2`` percentiles of the bootstrap differences.
        delta: 1 - confidence of the interval.
        resamples: B, the number of bootstrap resamples.
        papers: the number of clusters resampled (distinct anchor papers of the triplets).
        seed: the seed of the resampling.
        share_positive: share of the B resampled differences that are > 0.
    """

    difference: float
    low: float
    high: float
    delta: float
    resamples: int
    papers: int
    seed: int
    share_positive: float

    def describe(self) -> str:
        return (
            f"{100 * self.difference:+.1f} points, {100 * (1 - self.delta):g}% paper-bootstrap interval "
            f"[{100 * self.low:+.1f}, {100 * self.high:+.1f}] (B={self.resamples}, {self.papers} papers, "
            f"seed {self.seed}; > 0 in {100 * self.share_positive:.1f}% of resamples)"
        )


def paired_bootstrap_difference(
    wins_a: np.ndarray,
    wins_b: np.ndarray,
    anchor_paper: np.ndarray,
    resamples: int = 2000,
    delta: float = 0.05,
    seed: int = 0,
) -> PairedBootstrap:
    """Percentile interval of the difference of two ranking scores by a bootstrap over held-out papers.

    The eq. 9 and Theorem 5.1 bounds (`ranking_score`) are worst-case concentration bounds on each score
    separately; with ~100 held-out papers they are wider than the differences between models. This interval is about
    the *difference* on the *same* triplets, which is far less noisy than either score (both models face the same
    hard triplets). One resample draws as many papers as there are anchor papers, uniformly with replacement, and
    keeps every triplet whose anchor is a drawn paper, once per draw; both ranking scores are recomputed on that
    multiset of triplets and their difference recorded. The interval is the percentile interval of the B differences
    (``numpy.quantile``, linear interpolation).

    What it assumes, unlike eq. 9: the held-out papers are exchangeable draws from the population of papers (A1 of
    §5.1) and resampling them mimics drawing a new held-out set; the triplets of one paper may depend on each other
    arbitrarily (they move together). The dependence a triplet has on its *negative's* paper, a different paper drawn
    uniformly, is not captured: that paper is not resampled with the anchor. It is an asymptotic, approximate
    interval, not a bound that holds with probability ≥ 1 - δ for every sample size like eq. 9; with few papers
    (tens) it is too narrow.

    Args:
        wins_a, wins_b: per triplet, whether representation a (resp. b) ranks the positive above the negative
            (``s(x, x⁺) > s(x, x⁻)``, ties are failures as in `ranking_score`).
        anchor_paper: per triplet, the paper of the anchor (any integer ids).
        resamples: B (default 2000).
        delta: 1 - confidence (default 0.05: a 95% interval).
        seed: seed of the resampling (default 0), so that a report can be reproduced.

    Returns:
        The point difference, the interval, and the share of resamples where a is ahead.

    Raises:
        ValueError: no triplets, arrays of different lengths, ``resamples < 1`` or δ outside (0, 1).

    Shapes:
        wins_a, wins_b, anchor_paper: ``[T]``.
    """
    a = np.asarray(wins_a, dtype=np.float64)
    b = np.asarray(wins_b, dtype=np.float64)
    cluster = np.asarray(anchor_paper)
    if not (a.shape == b.shape == cluster.shape) or a.ndim != 1:
        raise ValueError(
            f"wins_a, wins_b and anchor_paper must be [T] alike, got {a.shape}, {b.shape}, {cluster.shape}"
        )
    if not len(a):
        raise ValueError("the paired bootstrap needs at least one triplet")
    if resamples < 1 or not 0.0 < delta < 1.0:
        raise ValueError(f"need resamples >= 1 and 0 < delta < 1, got {resamples} and {delta}")
    _, inverse = np.unique(cluster, return_inverse=True)
    n_clusters = int(inverse.max()) + 1
    # Per paper: its number of triplets and the sum of its per-triplet differences; a resample's difference is then
    # Σ w_c d_c / Σ w_c n_c with w_c the number of times paper c was drawn.
    count = np.bincount(inverse, minlength=n_clusters).astype(np.float64)
    diff = np.bincount(inverse, weights=a - b, minlength=n_clusters)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_clusters, size=(resamples, n_clusters))
    weights = np.zeros((resamples, n_clusters), dtype=np.float64)
    np.add.at(weights, (np.repeat(np.arange(resamples), n_clusters), draws.ravel()), 1.0)
    replicates = (weights @ diff) / (weights @ count)
    low, high = np.quantile(replicates, [delta / 2, 1 - delta / 2])
    return PairedBootstrap(
        difference=float(diff.sum() / count.sum()),
        low=float(low),
        high=float(high),
        delta=delta,
        resamples=resamples,
        papers=n_clusters,
        seed=seed,
        share_positive=float(np.mean(replicates > 0)),
    )


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities. Shapes: a ``[n, d]``, b ``[m, d]``; returns ``[n, m]``."""
    an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    bn = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return an @ bn.T


def nearest_neighbour_hits(similarity: np.ndarray, labels: Sequence[object]) -> np.ndarray:
    """For each item, whether its most similar OTHER item has its label (ties: the first such item).

    Shapes:
        similarity: ``[n, n]``; labels: ``[n]``; returns ``[n]`` bool.
    """
    s = similarity.astype(np.float64).copy()
    np.fill_diagonal(s, -np.inf)
    labels_arr = np.asarray(labels)
    return labels_arr[s.argmax(1)] == labels_arr


def leave_one_out_accuracy(similarity: np.ndarray, labels: Sequence[object]) -> float:
    """1-nearest-neighbour accuracy in leave-one-out validation (KDD'20 §6.1).

    Shapes:
        similarity: ``[n, n]``; labels: ``[n]``.
    """
    return float(np.mean(nearest_neighbour_hits(similarity, labels)))


def labelled_ranking_score(similarity: np.ndarray, labels: Sequence[object]) -> float:
    """Share of (x, x⁺, x⁻) with x⁺ of x's class and x⁻ of another class where s(x, x⁺) > s(x, x⁻), over all such
    triplets of a labelled set (the "Ranking Eval" of KDD'20 Table 1).

    Shapes:
        similarity: ``[n, n]``; labels: ``[n]``.
    """
    labels_arr = np.asarray(labels)
    wins = total = 0
    for i in range(len(labels_arr)):
        same = labels_arr == labels_arr[i]
        same[i] = False
        pos = similarity[i, same]
        neg = np.sort(similarity[i, labels_arr != labels_arr[i]])
        if not len(pos) or not len(neg):
            continue
        wins += int(np.searchsorted(neg, pos, side="left").sum())  # negatives strictly below each positive
        total += len(pos) * len(neg)
    return wins / total if total else float("nan")


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def keyword_relevant(text: str, keywords: Sequence[str]) -> bool:
    """The relevance heuristic of KDD'20 §6.3: a keyword occurs in the result's surrounding text (case-insensitive);
    a keyword longer than 10 characters also matches a substring at Levenshtein distance below 2."""
    haystack = text.lower()
    for keyword in keywords:
        k = keyword.lower()
        if k in haystack:
            return True
        if len(k) > 10 and _one_edit_pattern(k).search(haystack):
            return True
    return False


@functools.lru_cache(maxsize=1024)
def _one_edit_pattern(keyword: str) -> re.Pattern[str]:
    """A regex matching exactly the strings at Levenshtein distance 1 from ``keyword``: one character substituted,
    deleted or inserted. Equivalent to sliding `levenshtein` over every window of length len ± 1, in one pass."""
    k, e = keyword, re.escape
    variants = {e(k[:i]) + "." + e(k[i + 1 :]) for i in range(len(k))}  # substitution (same length)
    variants |= {e(k[:i] + k[i + 1 :]) for i in range(len(k))}  # deletion (one shorter)
    variants |= {e(k[:i]) + "." + e(k[i:]) for i in range(len(k) + 1)}  # insertion (one longer)
    return re.compile("|".join(sorted(variants)), re.DOTALL)


def precision_at(relevant: Sequence[bool], k: int) -> float:
    """P@k: share of relevant results among the first k (a shorter list counts its missing results as wrong)."""
    return float(sum(bool(r) for r in relevant[:k])) / k


def unnormalized_average_precision(relevant: Sequence[bool], cutoff: int = 1000) -> float:
    """uMAP term of one query (KDD'20 §6.3): ``∑_{k ≤ cutoff} P(k) Δ_k``, no division by the number relevant."""
    hits = 0
    total = 0.0
    for k, r in enumerate(relevant[:cutoff], 1):
        if r:
            hits += 1
            total += hits / k
    return total


def _prime(ranking: Sequence[str], judgements: Mapping[str, float]) -> list[str]:
    """ARQMath's "prime" evaluation: unjudged results are removed before scoring."""
    return [doc for doc in ranking if doc in judgements]


def ndcg_prime(ranking: Sequence[str], judgements: Mapping[str, float], k: int = 1000) -> float:
    """nDCG′@k: nDCG (gain = graded relevance, log2 discount) after removing unjudged results."""
    ranked = _prime(ranking, judgements)[:k]
    dcg = sum(judgements[d] / math.log2(i + 2) for i, d in enumerate(ranked))
    ideal = sorted(judgements.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def map_prime(ranking: Sequence[str], judgements: Mapping[str, float], threshold: float = 2.0, k: int = 1000) -> float:
    """MAP′@k: average precision with unjudged results removed; relevant = grade ≥ ``threshold`` (ARQMath Task 2
    binarises H+M, grades 2-3)."""
    ranked = _prime(ranking, judgements)[:k]
    n_relevant = sum(1 for g in judgements.values() if g >= threshold)
    if not n_relevant:
        return 0.0
    hits = 0
    total = 0.0
    for i, d in enumerate(ranked, 1):
        if judgements[d] >= threshold:
            hits += 1
            total += hits / i
    return total / n_relevant


def precision_prime_at(
    ranking: Sequence[str], judgements: Mapping[str, float], k: int = 10, threshold: float = 2.0
) -> float:
    """P′@k: precision at k after removing unjudged results."""
    ranked = _prime(ranking, judgements)[:k]
    return sum(1 for d in ranked if judgements[d] >= threshold) / k


def bpref(ranking: Sequence[str], judgements: Mapping[str, float], threshold: float = 2.0) -> float:
    """bpref (Buckley & Voorhees 2004): penalises each relevant result by the judged non-relevant ones above it;
    unjudged results are ignored."""
    relevant = {d for d, g in judgements.items() if g >= threshold}
    nonrelevant = {d for d, g in judgements.items() if g < threshold}
    r, n = len(relevant), len(nonrelevant)
    if not r:
        return 0.0
    denominator = min(r, n)
    seen_nonrelevant = 0
    total = 0.0
    for d in ranking:
        if d in nonrelevant:
            seen_nonrelevant += 1
        elif d in relevant:
            total += 1.0 - (min(seen_nonrelevant, denominator) / denominator if denominator else 0.0)
    return total / r
