"""Client-side fusion of ranked lists: reciprocal rank fusion and a min-max normalised linear blend.

Both work on any licence and any distribution (the server's ``rrf``/``linear`` retrievers need the rank-rrf module
and a licence). Inputs are ranked lists of ``(doc_id, score)``, best first; outputs are `Fused` items, best first,
ties broken by document id so that the order is deterministic.

A hybrid query has two *sides*, each blended from its ranked lists first (`blend_sides`): the ``formula`` side from
the ``structure`` list (BM25 on the structural terms, reranked) and the ``embedding`` list (kNN on the formula
vectors), the ``text`` side from the ``text`` list (BM25 on the words) and the ``context`` list (kNN of the
keywords' embedding on the context vectors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Ranking = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class Fused:
    """One fused document.

    Args:
        doc_id: the document id.
        score: the fused score (higher is better).
        sources: list name -> the document's raw score in that list (only the lists it appears in).
        ranks: list name -> its 1-based rank in that list.
    """

    doc_id: str
    score: float
    sources: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)


def _collect(rankings: Mapping[str, Ranking]) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    scores: dict[str, dict[str, float]] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ranking in rankings.items():
        for rank, (doc_id, score) in enumerate(ranking, start=1):
            if name in scores.setdefault(doc_id, {}):
                continue  # a list naming a document twice keeps its best (first) entry
            scores[doc_id][name] = float(score)
            ranks.setdefault(doc_id, {})[name] = rank
    return scores, ranks


def _sorted(fused: list[Fused]) -> list[Fused]:
    return sorted(fused, key=lambda item: (-item.score, item.doc_id))


def reciprocal_rank_fusion(
    rankings: Mapping[str, Ranking], *, k: int = 60, weights: Mapping[str, float] | None = None
) -> list[Fused]:
    """Reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009): score = sum of w / (k + rank).

    Args:
        rankings: list name -> ranked ``(doc_id, score)``, best first.
        k: the rank constant (60 in the paper).
        weights: list name -> weight (default 1 each); a weight of 0 drops that list's contribution.

    Returns:
        The fused documents, best first.
    """
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    scores, ranks = _collect(rankings)
    fused = []
    for doc_id, by_list in ranks.items():
        total = sum((1.0 if weights is None else weights.get(name, 1.0)) / (k + rank) for name, rank in by_list.items())
        fused.append(Fused(doc_id, total, scores[doc_id], by_list))
    return _sorted(fused)


def min_max(ranking: Ranking) -> dict[str, float]:
    """Scores rescaled to [0, 1] within the list (all equal -> all 1)."""
    if not ranking:
        return {}
    values = [score for _, score in ranking]
    low, high = min(values), max(values)
    span = high - low
    return {doc_id: (1.0 if span == 0 else (score - low) / span) for doc_id, score in ranking}


def linear_fusion(rankings: Mapping[str, Ranking], weights: Mapping[str, float]) -> list[Fused]:
    """Weighted sum of min-max normalised scores; a document missing from a list gets 0 there.

    Args:
        rankings: list name -> ranked ``(doc_id, score)``, best first.
        weights: list name -> weight (e.g. ``{"formula": w, "text": 1 - w}``).

    Returns:
        The fused documents, best first.
    """
    scores, ranks = _collect(rankings)
    normalised = {name: min_max(ranking) for name, ranking in rankings.items()}
    fused = []
    for doc_id, by_list in scores.items():
        total = sum(weights.get(name, 0.0) * normalised[name].get(doc_id, 0.0) for name in rankings)
        fused.append(Fused(doc_id, total, by_list, ranks[doc_id]))
    return _sorted(fused)


def blend_sides(
    lists: Mapping[str, Ranking], sides: Mapping[str, Mapping[str, float]]
) -> dict[str, list[tuple[str, float]]]:
    """Each side's lists blended into one ranking (`linear_fusion` with the side's weights); a side with one list
    takes it as it is, a side with none is left out.

    Args:
        lists: list name -> ranked ``(doc_id, score)``.
        sides: side name -> {list name -> weight}.
    """
    out: dict[str, list[tuple[str, float]]] = {}
    for side, weights in sides.items():
        present = {name: lists[name] for name in weights if name in lists}
        if len(present) == 1:
            out[side] = list(next(iter(present.values())))
        elif present:
            out[side] = [(item.doc_id, item.score) for item in linear_fusion(present, weights)]
    return out
