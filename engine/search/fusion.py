"""Client-side fusion of ranked lists: reciprocal rank fusion and a min-max normalised linear blend.

Both work on any licence and any distribution (the server's ``rrf``/``linear`` retrievers need the rank-rrf module
and a licence). Inputs are ranked lists of ``(doc_id, score)``, best first; outputs are `Fused` items, best first,
ties broken by document id so that the order is deterministic.

A hybrid query has two *sides*, each blended from its ranked lists first (`blend_sides`): the ``formula`` side from
the ``structure`` list (BM25 on the structural terms, reranked) and the ``embedding`` list (kNN on the formula
vectors), the ``words`` side from the ``text`` list (BM25 on the words) and the ``context`` list (kNN of the
keywords' embedding on the context vectors). A list is a ranking Elasticsearch returned; a side is what fusion weighs.
The papers list ranks papers, not equations (the words in their titles and abstracts): its evidence reaches every
candidate equation of a paper, and a paper none of whose equations is a candidate stands in the fusion under a
placeholder (`paper_placeholder`) until the page names one of its equations.
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


#: The start of a placeholder's id: no document id holds a NUL.
_PLACEHOLDER = "\x00paper:"


def paper_placeholder(paper_id: str) -> str:
    """The id under which a paper found by its words alone, none of its equations a candidate, is fused."""
    return _PLACEHOLDER + paper_id


def placeholder_paper(doc_id: str) -> str | None:
    """The paper a placeholder stands for; None for an equation's id."""
    return doc_id[len(_PLACEHOLDER) :] if doc_id.startswith(_PLACEHOLDER) else None


def paper_evidence(
    papers: Ranking, paper_contexts: Ranking, paper_of: Mapping[str, str], lists: Mapping[str, Ranking]
) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """The papers ranked by the words anywhere in them, and the candidates that stand for them.

    A paper's score is the larger of its own fields' (``papers``: its title and abstract, the papers index's) and its
    best equation's own fields' (``paper_contexts``: a context or a section title, one equation per paper), as one
    BM25 query over all those fields ranked the papers when each equation held a copy of its paper's fields
    (`engine.index.mappings.PAPER_ONLY_FIELDS`). Each paper is a candidate through its best-worded equation; a paper
    found by its title and abstract alone, none of whose equations is in ``lists``, through a placeholder
    (`paper_placeholder`): a page named only by its title still shows.

    Args:
        papers: ``(paper_id, score)`` by the papers' title and abstract.
        paper_contexts: ``(eq_id, score)``, each paper's best equation by its own fields.
        paper_of: eq_id -> paper_id of the candidates (``paper_contexts``' included).
        lists: the ranked lists of equations (a paper with a candidate there needs no placeholder).

    Returns:
        The papers, best first, and representative id -> paper_id, in that order.
    """
    best = dict(papers)
    named: dict[str, str] = {}
    for doc_id, score in paper_contexts:
        paper = paper_of.get(doc_id)
        if paper is None or paper in named:
            continue
        named[paper] = doc_id
        best[paper] = max(score, best.get(paper, score))
    ranking = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    covered = {paper_of[doc_id] for ranking_ in lists.values() for doc_id, _ in ranking_ if doc_id in paper_of}
    representatives = {}
    for paper, _ in ranking:
        if paper in named:
            representatives[named[paper]] = paper
        elif paper not in covered:
            representatives[paper_placeholder(paper)] = paper
    return ranking, representatives


def words_evidence(
    candidates: Sequence[str], text: Ranking, papers: Ranking, paper_of: Mapping[str, str], paper_share: float
) -> dict[str, float]:
    """Each candidate's words evidence: ``paper_share`` of its paper's (the papers list's score over the best
    paper's) plus the rest of its own fields' (the text list's score over the best equation's)."""
    t, p = _by_top(text), _by_top(papers)
    return {
        doc_id: paper_share * p.get(paper_of.get(doc_id, ""), 0.0) + (1.0 - paper_share) * t.get(doc_id, 0.0)
        for doc_id in candidates
    }


def words_side(
    text: Ranking, papers: Ranking, paper_of: Mapping[str, str], representatives: Sequence[str], paper_share: float
) -> Ranking:
    """The words side as one ranking (what reciprocal rank and linear fusion take): the text list's equations and
    the papers' representatives (`paper_evidence`), by `words_evidence`."""
    candidates = list(dict.fromkeys([*(doc_id for doc_id, _ in text), *representatives]))
    evidence = words_evidence(candidates, text, papers, paper_of, paper_share)
    return sorted(evidence.items(), key=lambda item: (-item[1], item[0]))


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
    representatives: Sequence[str] = (),
    inline_factor: float = INLINE_FACTOR,
) -> list[Fused]:
    """Each kind of evidence where it belongs: the formula judges the equation, the words its paper and its place.

    An equation's score is ``weight x formula + (1 - weight) x words``, where ``formula`` is its formula side's
    score over the side's best (an exact match of the query is 1, a weak one far less, whatever the words) and
    ``words`` its `words_evidence`: the words' BM25 of its paper (``papers``: the papers ranked by the words anywhere
    in them, over the best paper's; a ``paper_share`` of it) blended with the words' BM25 of the equation's own
    fields (its context and section title, over the best equation's). The candidates are the formula side's, the
    text list's and the papers' representatives (`paper_evidence`: each paper's best-worded equation, or a
    placeholder). So the words lift the formula candidates of the right paper, and among a paper's
    equations the one the formula matches best stays first: siblings that share the page's words but not the formula
    no longer outrank it. When both sides search, an inline formula's formula evidence is multiplied by
    ``inline_factor``, so that a fragment of a display, matching the formula as well as the display does, no longer
    outranks it.

    Args:
        formula: the formula side, ranked (empty: keywords only).
        text: the equations ranked by the words' BM25 in their own fields (empty: formula only).
        papers: the papers ranked by the words, ``(paper_id, score)`` (`paper_evidence`).
        paper_of: eq_id -> paper_id of every candidate, and placeholder -> paper_id of the placeholders.
        weight: the formula's share (`HybridQuery.formula_weight`).
        paper_share: the paper's share of the words' evidence, in [0, 1].
        inline_factor: what an inline formula's formula evidence is multiplied by when the formula and the words are
            both searched (`is_inline`; 1: no change); a search without both sides ranks the same whatever it is.
        representatives: the ids that stand for the words' papers (`paper_evidence`).

    Returns:
        The fused equations and placeholders, best first; ``scores`` holds their raw scores in the formula side
        (``formula``), the words' list of the equations' own fields (``words``) and their paper's (``paper``).
    """
    if not 0.0 <= inline_factor <= 1.0:
        raise ValueError(f"inline_factor must be in [0, 1], got {inline_factor}")
    f = _by_top(formula)
    raw = {"formula": dict(formula), "words": dict(text)}
    paper_raw = dict(papers)
    ranks = {name: {doc: rank for rank, doc in enumerate(values, 1)} for name, values in raw.items()}
    inline_factor = inline_factor if formula and (text or papers) else 1.0
    candidates = list(dict.fromkeys([*f, *(doc_id for doc_id, _ in text), *representatives]))
    words = words_evidence(candidates, text, papers, paper_of, paper_share)
    fused = []
    for doc_id in candidates:
        paper = paper_of.get(doc_id, "")
        formula_part = f.get(doc_id, 0.0) * (inline_factor if is_inline(doc_id) else 1.0)
        score = weight * formula_part + (1.0 - weight) * words[doc_id]
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
