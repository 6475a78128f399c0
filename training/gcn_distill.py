"""Fine-tuning the shipped KDD'20 graph network on the structural signal (issue 27, rounds 3 and 4).

The structure-bag students (`training.structure_distill`) read the structural terms, so they learn what the
structural channel already has. Here the graph network itself is the student: it starts from the shipped bundle's
weights (read back from its ONNX initialisers, `model_from_bundle`, since no torch checkpoint ships) and keeps its
view of the MathML tree, while it is taught the structural similarity it lacks. Each step takes a batch of mined groups
(`training.structure_teacher.MinedBatches`) and minimises

    KL(softmax(teacher / tau_t) || softmax(cos / tau_s))  +  anchor_weight * mean(1 - cos(new, original))

where the teacher is `training.structure_distill.teacher_matrix` (the structural BM25, optionally the network's own
original similarities with ``vector_weight`` and the contextual signal, "from the same document", with
``context_weight``; ``benchmarks/history/encoder.md``, "Round 4") and the second term holds each formula's vector near
the shipped one, so the network does not drift into a copy of the structure. Batch and soft normalisation stay frozen
(eval mode: the running statistics of the shipped model), so the exported function is the one trained. Runs of other
seeds average into one network (`average_states`, a soup).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.model.bundle import read_manifest
from eqsearch.engine.model.featurize import MathMLError, featurize_mathml
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.engine.model.vocabulary import Vocabulary
from eqsearch.evaluation.trec import read_qrels
from eqsearch.training.batching import graph_tensors
from eqsearch.training.evaluate import embed_graphs
from eqsearch.training.loop import resolve_device
from eqsearch.training.model import FormulaEncoder, ModelConfig
from eqsearch.training.structure_dev import ranking_figures
from eqsearch.training.structure_distill import (
    TrainingData,
    cosine_decay,
    distill_loss,
    teacher_matrix,
)
from eqsearch.training.structure_teacher import MinedBatches

# the ONNX export folds the soft normalisation's running mean + std + eps into one constant the output is divided by
_SOFT_NORM_DIVISOR = "add_172"


def model_from_bundle(bundle: str | Path) -> tuple[FormulaEncoder, Vocabulary]:
    """The torch model of a ``kdd20-gcn`` bundle, its weights read from the ONNX initialisers (named as the torch
    state dict), and the bundle's vocabulary. Eval mode.

    Raises:
        ValueError: the bundle is not a graph network, or its ONNX graph lacks a weight the model has.
    """
    import onnx
    from onnx import numpy_helper

    manifest = read_manifest(Path(bundle))
    if manifest.encoder != "kdd20-gcn":
        raise ValueError(f"{bundle}: a {manifest.encoder!r} bundle, not the graph network (kdd20-gcn)")
    model = FormulaEncoder(ModelConfig(**manifest.raw["model_config"]))
    weights = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(manifest.model_path)).graph.initializer}
    state = model.state_dict()
    loaded = {}
    for name, value in state.items():
        if name.endswith("num_batches_tracked"):
            loaded[name] = value
        elif name == "soft_norm.running_mean":
            divisor = weights.get(_SOFT_NORM_DIVISOR)
            if divisor is None or divisor.size != 1:
                raise ValueError(f"{bundle}: no soft-normalisation constant {_SOFT_NORM_DIVISOR!r} in the ONNX graph")
            loaded[name] = torch.tensor(float(divisor) - model.soft_norm.eps)
        elif name == "soft_norm.running_std":
            loaded[name] = torch.zeros(())
        elif name in weights:
            loaded[name] = torch.from_numpy(weights[name].copy()).reshape(value.shape)
        else:
            raise ValueError(f"{bundle}: the ONNX graph has no weight {name!r}")
    model.load_state_dict(loaded)
    return model.eval(), Vocabulary.load(manifest.vocabulary_path)


def average_states(paths: Sequence[str | Path]) -> dict[str, torch.Tensor]:
    """The mean of several runs' weights (a "model soup": runs fine-tuned from the same start with other batches
    average into one network whose vectors vary less from run to run than any one's). Integer entries (batch
    counters) are taken from the first.

    Raises:
        ValueError: no paths, or the states do not hold the same weights.
    """
    if not paths:
        raise ValueError("no states to average")
    states = [torch.load(p, map_location="cpu", weights_only=True) for p in paths]
    names = set(states[0])
    for path, state in zip(paths[1:], states[1:], strict=True):
        if set(state) != names:
            raise ValueError(f"{path}: not the same network as {paths[0]}")
    return {
        name: (
            torch.stack([s[name].float() for s in states]).mean(dim=0).to(value.dtype)
            if value.is_floating_point()
            else value
        )
        for name, value in states[0].items()
    }


def featurize_all(mathml: Sequence[str], vocabulary: Vocabulary) -> tuple[list[GraphArrays | None], int]:
    """Each formula's graph (None where the MathML is missing or malformed), and how many are None."""
    graphs: list[GraphArrays | None] = []
    for m in mathml:
        try:
            graphs.append(featurize_mathml(m, vocabulary) if m else None)
        except MathMLError:
            graphs.append(None)
    return graphs, sum(g is None for g in graphs)


def embed_all(model: FormulaEncoder, graphs: Sequence[GraphArrays | None], batch_size: int = 512) -> np.ndarray:
    """Vectors of featurized formulas (eval mode); a zero row where there is no graph. Shapes: ``[N, D]``."""
    out = np.zeros((len(graphs), model.config.embedding_dim), dtype=np.float32)
    present = [i for i, g in enumerate(graphs) if g is not None]
    if present:
        out[present] = embed_graphs(model, [graphs[i] for i in present], batch_size=batch_size)  # type: ignore[misc]
    return out


@dataclass
class GcnTuneConfig:
    """Settings of a fine-tuning run.

    Attributes:
        steps: optimizer steps (a run also stops at ``max_seconds``).
        max_seconds: wall-clock budget of the loop (0: none).
        seeds, per_seed, pool: the mined batches (`MinedBatches`): groups, formulas per group, random candidates.
        tau_teacher, tau_student: softmax temperatures of the teacher's scores and the network's cosines.
        bm25_weight, span_weight, vector_weight: the teacher's signals (`teacher_matrix`): the structural BM25, the
            sub-expression match, the network's own original cosine.
        anchor_weight: weight of ``1 - cos(new vector, original vector)`` (0: no anchor).
        context_weight: weight of "from the same document" in the teacher (the paper's contextual signal; needs the
            training formulas' documents, ``data.documents``).
        same_document: neighbours per group drawn from the seed's own document (`MinedBatches`), so that batches hold
            contextual pairs.
        learning_rate, warmup_steps: AdamW (no weight decay), linear warm-up then cosine decay to a tenth.
        seed: random seed of the batches.
        threads: torch intra-op threads.
        log_every: steps between log lines.
        device: where the network trains (``cpu``, ``cuda``, ``auto``: `training.loop.resolve_device`); the batches
            are composed on the CPU either way.
    """

    steps: int = 1000
    max_seconds: float = 0.0
    seeds: int = 16
    per_seed: int = 8
    pool: int = 2048
    tau_teacher: float = 0.05
    tau_student: float = 0.05
    bm25_weight: float = 1.0
    span_weight: float = 0.0
    vector_weight: float = 0.0
    anchor_weight: float = 1.0
    context_weight: float = 0.0
    same_document: int = 0
    learning_rate: float = 1e-4
    warmup_steps: int = 20
    seed: int = 0
    threads: int = 1
    log_every: int = 20
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tune_step_loss(
    model: FormulaEncoder,
    graphs: Sequence[GraphArrays],
    teacher: torch.Tensor,
    original: torch.Tensor,
    config: GcnTuneConfig,
) -> dict[str, torch.Tensor]:
    """One batch's losses: ``{"loss", "distill", "anchor"}`` (module docstring).

    Shapes: teacher ``[B, B]`` (diagonal 1); original ``[B, D]`` unit vectors.
    """
    device = next(model.parameters()).device
    inputs = {k: v.to(device, non_blocking=True) for k, v in graph_tensors(concatenate_graphs(graphs)).items()}
    z = torch.nn.functional.normalize(model(**inputs), dim=1)
    distill = distill_loss(z, None, teacher.to(device), config.tau_teacher, config.tau_student)
    anchor = (1.0 - (z * original.to(device)).sum(dim=1)).mean()
    return {"loss": distill + config.anchor_weight * anchor, "distill": distill, "anchor": anchor}


def tune(
    config: GcnTuneConfig,
    model: FormulaEncoder,
    graphs: Sequence[GraphArrays],
    data: TrainingData,
    *,
    log: Callable[[str], None] = print,
    evaluate: Callable[[FormulaEncoder], dict[str, float]] | None = None,
    eval_every: int = 0,
) -> dict[str, Any]:
    """Fine-tune ``model`` in place on the training formulas' ``graphs`` (one per formula of ``data``, whose
    ``vectors`` are the original network's unit vectors of them); returns the run's history.

    Raises:
        ValueError: ``data`` has no original vectors, or not one graph per formula.
    """
    if data.vectors is None:
        raise ValueError("the anchor and the network's own similarities need the original vectors (data.vectors)")
    if len(graphs) != len(data.terms):
        raise ValueError(f"{len(graphs)} graphs for {len(data.terms)} formulas")
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    model.to(resolve_device(config.device))
    rng = np.random.default_rng(config.seed)
    if (config.context_weight or config.same_document) and data.documents is None:
        raise ValueError("the contextual signal needs the training formulas' documents (data.documents)")
    batches = MinedBatches(
        data.teacher,
        seeds=config.seeds,
        per_seed=config.per_seed,
        pool=config.pool,
        documents=data.documents,
        same_document=config.same_document,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)

    def factor(step: int, elapsed: float) -> float:
        if step <= config.warmup_steps:
            return step / max(1, config.warmup_steps)
        return cosine_decay(step, elapsed, config.warmup_steps, config.steps, config.max_seconds)

    history: dict[str, Any] = {"loss": [], "evals": []}
    model.eval()  # frozen batch and soft normalisation: the shipped running statistics
    start = time.perf_counter()
    running = np.zeros(3)
    step = 0
    while True:
        step += 1
        elapsed = time.perf_counter() - start
        for group in optimizer.param_groups:
            group["lr"] = config.learning_rate * factor(step, elapsed)
        items = batches.batch(rng)
        target = teacher_matrix(
            data.teacher,
            data.spans,
            items,
            config.span_weight,
            documents=data.documents,
            context_weight=config.context_weight,
            vectors=data.vectors,
            vector_weight=config.vector_weight,
            bm25_weight=config.bm25_weight,
        )
        losses = tune_step_loss(
            model,
            [graphs[i] for i in items],
            torch.from_numpy(target),
            torch.from_numpy(data.vectors[items]),
            config,
        )
        optimizer.zero_grad(set_to_none=True)
        losses["loss"].backward()
        optimizer.step()
        running += [float(losses[k].detach()) for k in ("loss", "distill", "anchor")]
        elapsed = time.perf_counter() - start
        if step % config.log_every == 0:
            mean = running / config.log_every
            history["loss"].append({"step": step, "loss": mean[0], "distill": mean[1], "anchor": mean[2], "s": elapsed})
            log(f"step {step} loss {mean[0]:.4f} distill {mean[1]:.4f} anchor {mean[2]:.4f} {elapsed:.0f}s")
            running[:] = 0
        if evaluate is not None and eval_every and step % eval_every == 0:
            figures = evaluate(model)
            history["evals"].append({"step": step, "seconds": round(elapsed, 1), **figures})
            log(f"step {step} dev {figures}")
        if step >= config.steps or (config.max_seconds and elapsed >= config.max_seconds):
            break
    history["steps"] = step
    history["train_seconds"] = round(time.perf_counter() - start, 1)
    return history


def dev_qrels(path: str | Path) -> dict[str, dict[str, float]]:
    """TREC qrels as `cosine_figures` takes them (`evaluation.trec.read_qrels`)."""
    return {topic: dict(grades) for topic, grades in read_qrels(path).items()}


def cosine_figures(
    collection: np.ndarray,
    topics: np.ndarray,
    collection_ids: Sequence[str],
    topic_ids: Sequence[str],
    qrels: dict[str, dict[str, float]],
    depth: int = 1000,
) -> dict[str, float]:
    """nDCG′, MAP′, P′@10 of the exact cosine ranking (`evaluation.trec`); zero rows (no vector) are never ranked,
    as the embedding channel has no vector for them."""
    unit = collection / np.maximum(np.linalg.norm(collection, axis=1, keepdims=True), 1e-12)
    q = topics / np.maximum(np.linalg.norm(topics, axis=1, keepdims=True), 1e-12)
    scores = q @ unit.T
    scores[:, ~collection.any(axis=1)] = -np.inf
    scores[~topics.any(axis=1), :] = -np.inf
    return ranking_figures(scores, list(collection_ids), list(topic_ids), qrels, depth)
