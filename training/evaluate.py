"""Held-out evaluation (KDD'20 §5-6): the encoder against the bag-of-words baseline on the same triplets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from eqsearch.engine.graph import GraphArrays, concatenate_graphs
from eqsearch.training.baseline import bag_of_words
from eqsearch.training.batching import graph_tensors
from eqsearch.training.corpus import Corpus
from eqsearch.training.metrics import RankingScore, cosine_matrix, ranking_score
from eqsearch.training.model import FormulaEncoder
from eqsearch.training.triplets import Triplets


@torch.no_grad()
def embed_graphs(model: FormulaEncoder, graphs: Sequence[GraphArrays], batch_size: int = 256) -> np.ndarray:
    """Embeddings φ̄(x) of equations with the model in eval mode (running statistics).

    Shapes:
        returns ``[len(graphs), embedding_dim]`` float32.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(graphs), batch_size):
        batch = graph_tensors(concatenate_graphs(graphs[start : start + batch_size]))
        out.append(model(**{k: v.to(device) for k, v in batch.items()}).float().cpu().numpy())
    model.train(was_training)
    dim = model.config.embedding_dim
    return np.concatenate(out) if out else np.zeros((0, dim), dtype=np.float32)


def triplet_similarities(vectors: np.ndarray, triplets: Triplets, cosine: bool) -> tuple[np.ndarray, np.ndarray]:
    """s(anchor, positive) and s(anchor, negative) per triplet; inner product (the model's training similarity)
    or cosine (the baseline's).

    Shapes:
        vectors: ``[n, d]``; returns two ``[T]``.
    """
    v = vectors
    if cosine:
        v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    a, p, n = v[triplets.anchor], v[triplets.positive], v[triplets.negative]
    return (a * p).sum(1), (a * n).sum(1)


@dataclass(frozen=True)
class HeldOutReport:
    """Ranking scores on the held-out triplets for the model and the bag-of-words baseline."""

    model: RankingScore
    model_cosine: RankingScore
    bag_of_words: RankingScore
    by_source: dict[str, dict[str, float]]

    def to_dict(self) -> dict[str, object]:
        from dataclasses import asdict

        return {
            "model": asdict(self.model),
            "model_cosine": asdict(self.model_cosine),
            "bag_of_words": asdict(self.bag_of_words),
            "by_source": self.by_source,
        }


def evaluate_held_out(
    model: FormulaEncoder,
    test: Corpus,
    triplets: Triplets,
    delta: float = 0.05,
    vocab_sizes: tuple[int, int, int] | None = None,
) -> HeldOutReport:
    """Ranking score (eq. 3) of the model and of the bag-of-words baseline on the same held-out triplets."""
    from eqsearch.training.triplets import SOURCES

    cfg = model.config
    sizes = vocab_sizes or (cfg.n_tags, cfg.n_attrs, cfg.n_chars)
    papers = np.stack(
        [
            test.equation_paper[triplets.anchor],
            test.equation_paper[triplets.positive],
            test.equation_paper[triplets.negative],
        ],
        axis=1,
    )
    n_papers = len(test.papers)
    emb = embed_graphs(model, test.graphs)
    bow = bag_of_words(test.graphs, *sizes)
    results = {}
    by_source: dict[str, dict[str, float]] = {}
    for name, vectors, cosine in (("model", emb, False), ("model_cosine", emb, True), ("bag_of_words", bow, True)):
        sp, sn = triplet_similarities(vectors, triplets, cosine)
        results[name] = ranking_score(sp, sn, papers, n_papers, delta)
        for i, source in enumerate(SOURCES):
            rows = triplets.source == i
            if rows.any():
                by_source.setdefault(source, {})[name] = float(np.mean(sp[rows] > sn[rows]))
    return HeldOutReport(results["model"], results["model_cosine"], results["bag_of_words"], by_source)


def labelled_evaluation(vectors: np.ndarray, labels: Sequence[int], cosine: bool) -> dict[str, float]:
    """1-NN leave-one-out accuracy and ranking score on a labelled set of equations (KDD'20 §6.1, Table 1)."""
    from eqsearch.training.metrics import labelled_ranking_score, leave_one_out_accuracy

    sim = cosine_matrix(vectors, vectors) if cosine else vectors @ vectors.T
    return {"accuracy": leave_one_out_accuracy(sim, labels), "ranking": labelled_ranking_score(sim, labels)}
