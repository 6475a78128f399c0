"""Scoring a structure-bag encoder offline on a formula-retrieval benchmark: `dev_ranking` ranks the collection by
exact inner product in numpy over its terms, to compare variants quickly (the teacher's own ranking, a torch model's,
or stored vectors rounded as a quantized index keeps them); the figures that count come from ``eqsearch evaluate
formulas``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from eqsearch.engine.model.structure_bag import StructureFeatures
from eqsearch.training.quantization import rounded_cosines
from eqsearch.training.structure_data import TermData, term_data
from eqsearch.training.structure_distill import encode_terms
from eqsearch.training.structure_model import StructureBagModel
from eqsearch.training.structure_teacher import Bm25Teacher, SpanTeacher

__all__ = [
    "DevSet",
    "dev_ranking",
    "dev_ranking_scores",
    "head_queries",
    "model_dev_ranking",
    "ranking_figures",
    "teacher_dev_ranking",
]


@dataclass
class DevSet:
    """A formula-retrieval benchmark prepared for `dev_ranking`: terms of the collection and topics, and qrels."""

    collection_ids: list[str]
    topic_ids: list[str]
    collection: TermData
    topics: TermData
    qrels: dict[str, dict[str, float]]

    @classmethod
    def load(
        cls,
        mathml_json: str | Path,
        qrels: str | Path,
        features: StructureFeatures,
        workers: int = 1,
        markup: bool = False,
    ) -> DevSet:
        """From a JSON ``{"collection": [[id, latex, mathml|null], ...], "topics": [...]}`` and TREC qrels (``markup``:
        the terms include `training.structure_data.markup_terms`)."""
        from eqsearch.evaluation.trec import read_qrels

        data = json.loads(Path(mathml_json).read_text(encoding="utf-8"))
        coll = [(i, m or "") for i, _, m in data["collection"]]
        tops = [(i, m or "") for i, _, m in data["topics"]]
        return cls(
            collection_ids=[i for i, _ in coll],
            topic_ids=[i for i, _ in tops],
            collection=term_data([m for _, m in coll], features, workers=workers, markup=markup),
            topics=term_data([m for _, m in tops], features, markup=markup),
            qrels={t: dict(d) for t, d in read_qrels(qrels).items()},
        )


def dev_ranking(
    vectors: np.ndarray,
    queries: np.ndarray,
    dev: DevSet,
    depth: int = 1000,
    quantize_bits: int = 0,
    scale: str = "vector",
    round_queries: bool = False,
) -> dict[str, float]:
    """nDCG′, MAP′, P′@10 of an exact ranking by inner product (ARQMath conventions, `evaluation.trec`).
    Formulas without terms (no MathML) are left out of the ranking, as the embedding channel has no vector for them.
    With ``quantize_bits``, the collection's vectors are first rounded as a quantized index stores them
    (`training.quantization.quantize_vectors` with ``scale``) and scored by cosine, as the index scores them
    (`rounded_cosines`; ``round_queries``: the queries rounded too, as the engine's int8 index does)."""
    has_terms = np.diff(dev.collection.offsets) > 0
    if quantize_bits:
        scores = rounded_cosines(queries, vectors, quantize_bits, scale, round_queries)
    else:
        scores = queries @ vectors.T
    scores[:, ~has_terms] = -np.inf
    return ranking_figures(scores, dev.collection_ids, dev.topic_ids, dev.qrels, depth)


def teacher_dev_ranking(dev: DevSet, span_weight: float = 0.0) -> dict[str, float]:
    """The teacher's own figures on the benchmark: BM25 over the structural tokens (statistics of the collection),
    normalised by each topic's own score, plus ``span_weight`` times the sub-expression match (`teacher_matrix`)."""
    coll = Bm25Teacher.build(dev.collection)
    tops = Bm25Teacher.build(dev.topics)  # its query weights (counts) only
    n = len(coll)
    joint = Bm25Teacher(
        offsets=np.concatenate([coll.offsets, tops.offsets[1:] + coll.offsets[-1]]),
        digest=np.concatenate([coll.digest, tops.digest]),
        query=np.concatenate([coll.query, tops.query]),
        doc=np.concatenate([coll.doc, np.zeros_like(tops.doc)]),
    )
    queries = np.arange(n, n + len(tops))
    scores = joint.scores(queries, np.arange(n))
    if span_weight:
        both = TermData(
            offsets=np.concatenate([dev.collection.offsets, dev.topics.offsets[1:] + dev.collection.offsets[-1]]),
            digest=np.concatenate([dev.collection.digest, dev.topics.digest]),
            count=np.concatenate([dev.collection.count, dev.topics.count]),
            token=np.concatenate([dev.collection.token, dev.topics.token]),
            size=np.concatenate([dev.collection.size, dev.topics.size]),
        )
        own = np.maximum(Bm25Teacher.build(both).self_scores(queries), 1e-6)  # a topic's score against itself
        match = SpanTeacher.build(both).match(queries, np.arange(n))
        scores = scores / own[:, None] + span_weight * match
    return dev_ranking_scores(scores, dev)


def dev_ranking_scores(scores: np.ndarray, dev: DevSet, depth: int = 1000) -> dict[str, float]:
    """`dev_ranking` from a ready score matrix ``[topics, collection]``: only the formulas scoring above 0."""
    return ranking_figures(np.where(scores > 0, scores, -np.inf), dev.collection_ids, dev.topic_ids, dev.qrels, depth)


def ranking_figures(
    scores: np.ndarray,
    collection_ids: list[str],
    topic_ids: list[str],
    qrels: dict[str, dict[str, float]],
    depth: int = 1000,
) -> dict[str, float]:
    """nDCG′, MAP′, P′@10 (ARQMath conventions, `evaluation.trec`) of each topic's ranking by a score matrix
    ``[topics, collection]``, its top ``depth``; a score of ``-inf`` leaves that formula out of the topic's ranking."""
    from eqsearch.evaluation.trec import evaluate_run

    run: dict[str, list[str]] = {}
    for k, topic in enumerate(topic_ids):
        order = np.argsort(-scores[k], kind="stable")[:depth]
        run[topic] = [collection_ids[j] for j in order if np.isfinite(scores[k, j])]
    report = evaluate_run(run, qrels, topics=topic_ids)
    return {name: round(float(value), 4) for name, value in report.means.items()}


@torch.no_grad()
def head_queries(model: StructureBagModel, vectors: np.ndarray, share: float) -> np.ndarray:
    """Query vectors ``(1 - share) z + share M z`` of a model's query head ``M`` (the stored vectors as they are for a
    model without one), as the runtime weighs the parts (`engine.model.structure_bag`); not normalised (ranking by
    inner product does not need it).

    Shapes: vectors ``[N, D]``; returns ``[N, D]`` float32.
    """
    if model.query_head is None or share == 0:
        return np.asarray(vectors, dtype=np.float32)
    matrix = model.query_head.matrix.detach().float().cpu().numpy()
    return ((1.0 - share) * vectors + share * vectors @ matrix.T).astype(np.float32)


def model_dev_ranking(
    model: StructureBagModel, dev: DevSet, features: StructureFeatures, head_share: float = 0.0
) -> dict[str, float]:
    """`dev_ranking` of a torch model (its queries mixed with its query head at ``head_share``, `head_queries`)."""
    topics = head_queries(model, encode_terms(model, dev.topics, features), head_share)
    return dev_ranking(encode_terms(model, dev.collection, features), topics, dev)
