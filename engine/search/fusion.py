"""Client-side fusion of ranked lists: reciprocal rank fusion and a min-max normalised linear blend.

Both work on any licence and any distribution (the server's ``rrf``/``linear`` retrievers need the rank-rrf module
and a licence). Inputs are ranked lists of ``(doc_id, score)``, best first; outputs are `Fused` items, best first,
ties broken by document id so that the order is deterministic.

A hybrid query has two *sides*, each blended from its ranked lists first (`blend_sides`): the ``formula`` side from
the ``structure`` list (BM25 on the structural terms, reranked) and the ``embedding`` list (kNN on the formula
vectors), the ``words`` side from the ``text`` list (BM25 on the words) and the ``context`` list (kNN of the
keywords' embedding on the context vectors). A list is a ranking Elasticsearch returned; a side is what fusion weighs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Ranking = Sequence[tuple[str, float]]
#: What an inline formula's formula evidence is multiplied by in the evidence fusion when the formula and the words
#: are both searched: an inline formula is often a fragment of a display of its page (a term of it, its left-hand
#: side), matching the query's formula as well as the display does, and the display should then come first
#: (docs/decisions/evidence-fusion.md: dev "both" equation MRR@10 0.958 -> 0.962 and 0.869 -> 0.895 on the two query
#: sets). Only the formula's share: an inline formula found by its words keeps them.
INLINE_FACTOR = 0.8


@dataclass(frozen=True)
class Fused:
    """One fused document.

    Args:
        doc_id: the document id.
        score: the fused score (higher is better).
        scores: ranking name (a side's, or a list's, as the fusion took them) -> the document's raw score there (only
            where it appears); the evidence fusion's are ``formula``, ``words`` and ``paper`` (`evidence_fusion`).
        ranks: ranking name -> its 1-based rank there.
    """

    doc_id: str
    score: float
    scores: dict[str, float] = field(default_factory=dict)
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
        weights: list name -> weight (e.g. ``{"formula": w, "words": 1 - w}``).

    Returns:
        The fused documents, best first.
    """
    scores, ranks = _collect(rankings)
    totals = dict(_linear_scores(rankings, weights))
    return _sorted([Fused(doc_id, totals[doc_id], by_list, ranks[doc_id]) for doc_id, by_list in scores.items()])


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
            out[side] = _linear_scores(present, weights)
    return out


def _linear_scores(rankings: Mapping[str, Ranking], weights: Mapping[str, float]) -> list[tuple[str, float]]:
    """`linear_fusion`'s ranking as ``(doc_id, score)`` alone: the same sums in the same order, without the
    `Fused` items and their sources and ranks, which a side's blend does not keep (a third of the client's fusion
    time for a formula query's two lists of 100)."""
    normalised = [(weights.get(name, 0.0), min_max(ranking)) for name, ranking in rankings.items()]
    documents = dict.fromkeys(doc_id for ranking in rankings.values() for doc_id, _ in ranking)
    blended = [
        (doc_id, sum([weight * scores.get(doc_id, 0.0) for weight, scores in normalised])) for doc_id in documents
    ]
    blended.sort(key=lambda item: (-item[1], item[0]))
    return blended


def _by_top(ranking: Ranking) -> dict[str, float]:
    """Scores divided by the list's best (a list of non-positive scores: all 1), so that a list's best is 1 and
    the others keep their distance from it."""
    if not ranking:
        return {}
    top = max(score for _, score in ranking)
    if top <= 0:
        return {doc_id: 1.0 for doc_id, _ in ranking}
    return {doc_id: max(score, 0.0) / top for doc_id, score in ranking}


def is_inline(eq_id: str) -> bool:
    """Whether an equation id names an inline formula of the running text (``<paper key>:i<number>``,
    `engine.index.documents.inline_id`) rather than a display (``<paper key>:<number>``)."""
    return eq_id.rpartition(":")[2].startswith("i")


def evidence_fusion(
    formula: Ranking,
    text: Ranking,
    papers: Ranking,
    paper_of: Mapping[str, str],
    *,
    weight: float,
    paper_share: float,
    inline_factor: float = INLINE_FACTOR,
) -> list[Fused]:
    """Each kind of evidence where it belongs: the formula judges the equation, the words its paper and its place.

    An equation's score is ``weight x formula + (1 - weight) x words``, where ``formula`` is its formula side's
    score over the side's best (an exact match of the query is 1, a weak one far less, whatever the words) and
    ``words`` blends the words' BM25 of its paper (``papers``: one hit per paper, its best equation on all the
    text fields, over the best paper's; a ``paper_share`` of it) with the words' BM25 of the equation's own fields
    (its context and section title, over the best equation's). The candidates are the formula side's, the text
    list's and each of the words' papers' best equation (a page named only by its title still shows).
    So the words lift the formula candidates of the right paper, and among a paper's equations the one the formula
    matches best stays first: siblings that share the page's words but not the formula no longer outrank it. When
    both sides search, an inline formula's formula evidence is multiplied by ``inline_factor``, so that a fragment
    of a display, matching the formula as well as the display does, no longer outranks it.

    Args:
        formula: the formula side, ranked (empty: keywords only).
        text: the equations ranked by the words' BM25 (empty: formula only).
        papers: the papers ranked by the words, as their best equation's ``(eq_id, score)``, one per paper.
        paper_of: eq_id -> paper_id of every candidate.
        weight: the formula's share (`HybridQuery.formula_weight`).
        paper_share: the paper's share of the words' evidence, in [0, 1].
        inline_factor: what an inline formula's formula evidence is multiplied by when the formula and the words are
            both searched (`is_inline`; 1: no change); a search without both sides ranks the same whatever it is.

    Returns:
        The fused equations, best first; ``scores`` holds their raw scores in the formula side (``formula``), the
        words' list of the equations' own fields (``words``) and their paper's (``paper``).
    """
    by_paper = [(paper_of.get(eq_id, ""), score) for eq_id, score in papers]
    f, t, p = _by_top(formula), _by_top(text), _by_top(by_paper)
    raw = {"formula": dict(formula), "words": dict(text)}
    paper_raw = dict(by_paper)
    ranks = {name: {doc: rank for rank, doc in enumerate(values, 1)} for name, values in raw.items()}
    if not 0.0 <= inline_factor <= 1.0:
        raise ValueError(f"inline_factor must be in [0, 1], got {inline_factor}")
    inline_factor = inline_factor if formula and (text or papers) else 1.0
    fused = []
    for doc_id in dict.fromkeys([*f, *t, *(eq_id for eq_id, _ in papers)]):
        paper = paper_of.get(doc_id, "")
        words = paper_share * p.get(paper, 0.0) + (1.0 - paper_share) * t.get(doc_id, 0.0)
        formula_part = f.get(doc_id, 0.0) * (inline_factor if is_inline(doc_id) else 1.0)
        score = weight * formula_part + (1.0 - weight) * words
        scores = {name: float(values[doc_id]) for name, values in raw.items() if doc_id in values}
        if paper in paper_raw:
            scores["paper"] = float(paper_raw[paper])
        fused.append(Fused(doc_id, score, scores, {name: r[doc_id] for name, r in ranks.items() if doc_id in r}))
    # ties keep the formula side's order (then the words'), so that a formula-only search ranks as its side does
    unranked = len(formula) + len(text) + 1
    return sorted(
        fused,
        key=lambda item: (
            -item.score,
            item.ranks.get("formula", unranked),
            item.ranks.get("words", unranked),
            item.doc_id,
        ),
    )
