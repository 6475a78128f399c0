"""Held-out evaluation (KDD'20 §5-6): the encoder against the bag-of-words baseline on the same triplets, with the
eq. 9 / Theorem 5.1 bounds on each score and a paper-clustered bootstrap interval of their difference.

The labelled-set evaluation (§6.1) is `eqsearch.evaluation.labelled`, which needs no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.evaluation.baseline import bag_of_words
from eqsearch.evaluation.metrics import PairedBootstrap, RankingScore, paired_bootstrap_difference, ranking_score
from eqsearch.training.batching import graph_tensors
from eqsearch.training.dataset import Corpus
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
    """Ranking scores on the held-out triplets for the model and the bag-of-words baseline.

    Attributes:
        model: the model with its training similarity, the inner product (as served).
        model_cosine: the model compared by cosine.
        bag_of_words: the §6.3 baseline, cosine.
        by_source: positive source (``section``, ``paper``, ``citation``) -> representation -> ranking score.
        model_minus_bag_of_words: ŝ_model - ŝ_bag_of_words on the same triplets with a paper-clustered bootstrap
            interval (`paired_bootstrap_difference`): an approximate interval for the difference, beside the
            worst-case eq. 9 bounds on each score.
    """

    model: RankingScore
    model_cosine: RankingScore
    bag_of_words: RankingScore
    by_source: dict[str, dict[str, float]]
    model_minus_bag_of_words: PairedBootstrap

    def to_dict(self) -> dict[str, object]:
        from dataclasses import asdict

        return {
            "model": asdict(self.model),
            "model_cosine": asdict(self.model_cosine),
            "bag_of_words": asdict(self.bag_of_words),
            "by_source": self.by_source,
            "model_minus_bag_of_words": asdict(self.model_minus_bag_of_words),
        }

    def describe(self) -> str:
        """Lines for the CLI: each score with its bounds, then the difference with its bootstrap interval."""
        return "\n".join(
            (
                f"model:        {self.model.describe()}",
                f"model cosine: {self.model_cosine.describe()}",
                f"bag of words: {self.bag_of_words.describe()}",
                f"model - bag of words: {self.model_minus_bag_of_words.describe()}",
            )
        )


def held_out_report(
    embeddings: np.ndarray,
    test: Corpus,
    triplets: Triplets,
    vocab_sizes: tuple[int, int, int],
    delta: float = 0.05,
    resamples: int = 2000,
    bootstrap_seed: int = 0,
) -> HeldOutReport:
    """Ranking score (eq. 3) of given embeddings and of the bag-of-words baseline on the same held-out triplets.

    Args:
        embeddings: the model's vectors of ``test.graphs`` (from torch or from the ONNX bundle).
        test: the held-out papers.
        triplets: triplets over ``test``'s equations.
        vocab_sizes: ``(n_tags, n_attrs, n_chars)`` of the vocabulary, for the bag of words.
        delta: 1 - confidence of the eq. 9 / Theorem 5.1 bounds and of the bootstrap interval.
        resamples: bootstrap resamples of the held-out papers.
        bootstrap_seed: seed of the bootstrap.

    Shapes:
        embeddings: ``[len(test.graphs), d]``.
    """
    from eqsearch.training.triplets import SOURCES

    papers = np.stack(
        [
            test.equation_paper[triplets.anchor],
            test.equation_paper[triplets.positive],
            test.equation_paper[triplets.negative],
        ],
        axis=1,
    )
    n_papers = len(test.papers)
    bow = bag_of_words(test.graphs, *vocab_sizes)
    results = {}
    wins = {}
    by_source: dict[str, dict[str, float]] = {}
    for name, vectors, cosine in (
        ("model", embeddings, False),
        ("model_cosine", embeddings, True),
        ("bag_of_words", bow, True),
    ):
        sp, sn = triplet_similarities(vectors, triplets, cosine)
        wins[name] = sp > sn
        results[name] = ranking_score(sp, sn, papers, n_papers, delta)
        for i, source in enumerate(SOURCES):
            rows = triplets.source == i
            if rows.any():
                by_source.setdefault(source, {})[name] = float(np.mean(wins[name][rows]))
    difference = paired_bootstrap_difference(
        wins["model"], wins["bag_of_words"], papers[:, 0], resamples=resamples, delta=delta, seed=bootstrap_seed
    )
    return HeldOutReport(results["model"], results["model_cosine"], results["bag_of_words"], by_source, difference)


def evaluate_held_out(
    model: FormulaEncoder,
    test: Corpus,
    triplets: Triplets,
    delta: float = 0.05,
    vocab_sizes: tuple[int, int, int] | None = None,
    resamples: int = 2000,
    bootstrap_seed: int = 0,
) -> HeldOutReport:
    """`held_out_report` of a torch model's embeddings (eval mode); vocabulary sizes default to the model's."""
    cfg = model.config
    sizes = vocab_sizes or (cfg.n_tags, cfg.n_attrs, cfg.n_chars)
    return held_out_report(embed_graphs(model, test.graphs), test, triplets, sizes, delta, resamples, bootstrap_seed)
