"""Training the structure-bag encoder by distilling eqsearch's structural score into the vector space.

Each step takes a batch of mined groups (`training.structure_teacher.MinedBatches`: formulas with their structurally
closest neighbours among unrelated ones), encodes every formula and a structure-preserving view of it (letters
renamed, operands commuted: `training.structure_data.augmented_view`), and fits the student's cosine similarities to
the teacher's: for each anchor (a formula, and in turn its view), the softmax of the student's similarities to all
other formulas and views of the batch (temperature ``tau_student``) is pulled towards the softmax of the teacher's
normalised BM25 scores (``tau_teacher``) by a KL divergence. A formula's own view gets the teacher score of the
formula itself (1), so the views are the contrastive positives, the mined neighbours soft positives and hard
negatives, and the rest easy negatives.

With a **query head** (``head_weight``; the 64-d student of the composite, issue 43), the stored vectors also serve a
second similarity: a learned matrix ``M`` maps a query's vector (`structure_model.QueryHead`), and ``(M z_q) . z_d``
is fitted by the same KL to one part of a composite teacher (``TrainingData.head_vectors``: the graph network's
cosine), while the first loss fits the ranker's mix ``(w_s I + w_h M) z_q . z_d`` (``alone_head_share`` = w_h) to the
whole teacher; the runtime weighs the two as a ranker's ``embedding_parts`` ask (`engine.model.structure_bag`).

Scoring a student offline on a formula-retrieval benchmark: `training.structure_dev`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from eqsearch.engine.model.structure_bag import StructureFeatures
from eqsearch.training.quantization import fake_quantize
from eqsearch.training.structure_data import TermData, term_data, term_slots
from eqsearch.training.structure_model import StructureBagConfig, StructureBagModel
from eqsearch.training.structure_teacher import Bm25Teacher, MinedBatches, SpanTeacher
from torch import nn


@dataclass
class DistillConfig:
    """Settings of a distillation run.

    Attributes:
        steps: optimizer steps (a run also stops at ``max_seconds``).
        max_seconds: wall-clock budget of the training loop (0: none).
        seeds, per_seed: groups per batch and formulas per group (`MinedBatches`).
        pool: random formulas in a batch's candidate pool.
        tau_teacher, tau_student: softmax temperatures of the teacher's normalised scores and the student's cosines.
        views: train with the augmented views (False: formulas only, no contrastive positives).
        span_weight: weight of the rerank's sub-expression match in the teacher (`teacher_matrix`; 0: BM25 alone).
        context_weight: weight of "from the same document" in the teacher (the paper's contextual signal; 0: none).
        vector_weight: weight of another encoder's cosine in the teacher (``TrainingData.vectors``: the shipped
            KDD'20 network's vectors, say; 0: none).
        bm25_weight: weight of the structural BM25 in the teacher (0: the other signals alone).
        same_document: of each group's ``per_seed - 1`` neighbours, this many are formulas of the seed's own
            document where it has them (the contextual positives), the rest mined by BM25 (`MinedBatches`).
        align_weight: weight of a second loss, ``1 - cos(student, teacher vector)`` per formula: the student's
            coordinates pulled onto the other encoder's (``TrainingData.vectors``), not only its similarities.
        head_weight: weight of the query head's loss (module docstring; 0: no head, the stored cosine alone).
        alone_head_share: the head's share of the query in the first loss (the ``embedding`` ranker's weight of the
            head's part; the stored cosine has the rest).
        head_lr_scale: the query head's learning rate over the rest's (one matrix that starts as the identity).
        quantize_bits: the candidates' vectors in the loss rounded to this many bits with one scale per vector, a
            straight-through gradient (`training.quantization.fake_quantize`; 0: float), so the space keeps its order
            when a quantized index stores it; queries stay float, as they do in the index.
        markup: the model also reads the MathML tree's own terms (`training.structure_data.markup_terms`; an
            experiment the runtime encoder does not serve yet).
        learning_rate, warmup_steps: AdamW (no weight decay), linear warm-up then cosine decay to a tenth.
        seed: random seed (initialisation and batches).
        workers: processes composing batches (0: in the training process).
        threads: torch intra-op threads.
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
        log_every: steps between log lines.
    """

    steps: int = 3000
    max_seconds: float = 0.0
    seeds: int = 32
    per_seed: int = 8
    pool: int = 2048
    tau_teacher: float = 0.05
    tau_student: float = 0.05
    views: bool = True
    span_weight: float = 0.0
    context_weight: float = 0.0
    vector_weight: float = 0.0
    bm25_weight: float = 1.0
    same_document: int = 0
    markup: bool = False
    align_weight: float = 0.0
    head_weight: float = 0.0
    alone_head_share: float = 0.3
    head_lr_scale: float = 10.0
    quantize_bits: int = 0
    learning_rate: float = 2e-3
    warmup_steps: int = 100
    seed: int = 0
    workers: int = 0
    threads: int = 2
    device: str = "auto"
    log_every: int = 100
    model: StructureBagConfig = field(default_factory=StructureBagConfig)
    features: StructureFeatures = field(default_factory=StructureFeatures)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["features"] = self.features.to_json()
        return out


@dataclass
class TrainingData:
    """The training formulas' terms, their views' terms, and the teachers over them: BM25, the sub-expression match,
    each formula's document index (``documents``) and another encoder's unit vectors (``vectors``, ``[N, D]``; a
    formula it could not encode has a zero row); the query head's teacher vectors (``head_vectors``, unit rows: one
    part of a composite)."""

    terms: TermData
    views: TermData
    teacher: Bm25Teacher
    spans: SpanTeacher
    documents: np.ndarray | None = None
    vectors: np.ndarray | None = None
    head_vectors: np.ndarray | None = None


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def prepare(
    mathml: list[str],
    features: StructureFeatures,
    *,
    workers: int = 1,
    view_seed: int = 1,
    documents: list[str] | None = None,
    vectors: np.ndarray | None = None,
    views: bool = True,
    markup: bool = False,
    terms: TermData | None = None,
    head_vectors: np.ndarray | None = None,
) -> TrainingData:
    """Terms of the training formulas and of one augmented view of each (``views``; False: the formulas' own terms
    stand in, and a run must not train with views); the teachers over the formulas; each formula's document (for the
    contextual signal) and another encoder's vectors of them (normalised here), when given. ``terms``: the formulas'
    terms computed before (`TermData.load`), instead of computing them again.

    Raises:
        ValueError: ``vectors`` or ``documents`` do not have one row per formula.
    """
    for name, given in (("documents", documents), ("vectors", vectors), ("head_vectors", head_vectors)):
        if given is not None and len(given) != len(mathml):
            raise ValueError(f"{name}: {len(given)} rows for {len(mathml)} formulas")
    if terms is None:
        terms = term_data(mathml, features, workers=workers, markup=markup)
    elif len(terms) != len(mathml):
        raise ValueError(f"terms: {len(terms)} rows for {len(mathml)} formulas")
    view_terms = term_data(mathml, features, view_seed=view_seed, workers=workers) if views else terms
    docs = None if documents is None else np.unique(np.asarray(documents), return_inverse=True)[1].astype(np.int64)
    unit = None if vectors is None else _unit_rows(vectors)
    head = None if head_vectors is None else _unit_rows(head_vectors)
    return TrainingData(terms, view_terms, Bm25Teacher.build(terms), SpanTeacher.build(terms), docs, unit, head)


def weigh_vector_parts(vectors: np.ndarray, dims: Sequence[int], weights: Sequence[float]) -> np.ndarray:
    """Side-by-side parts of vectors (a composite's, `engine.model.composite`) made into vectors whose inner product
    is ``sum_i w_i cos_i``: each part's unit vector times ``sqrt(w_i)`` (``weights`` are normalised to add up to 1), as
    a ranker's query weights (``FormulaRanking.embedding_parts``) make the composite's kNN rank. A zero part stays zero.

    Shapes: vectors ``[N, sum(dims)]``; returns the same, float32.

    Raises:
        ValueError: the dims do not add up to the vectors' width, or the weights are negative or all zero.
    """
    v = np.asarray(vectors, dtype=np.float32)
    if sum(dims) != v.shape[1] or len(dims) != len(weights):
        raise ValueError(f"parts of widths {list(dims)} with weights {list(weights)} for {v.shape[1]}-d vectors")
    total = float(sum(weights))
    if min(weights) < 0 or total <= 0:
        raise ValueError(f"part weights {list(weights)} must be non-negative and not all zero")
    out = np.zeros_like(v)
    start = 0
    for dim, weight in zip(dims, weights, strict=True):
        part = v[:, start : start + dim]
        norm = np.linalg.norm(part, axis=1, keepdims=True)
        out[:, start : start + dim] = np.sqrt(weight / total) * part / np.where(norm > 0, norm, 1.0)
        start += dim
    return out


def teacher_matrix(
    bm25: Bm25Teacher,
    spans: SpanTeacher,
    items: np.ndarray,
    span_weight: float,
    documents: np.ndarray | None = None,
    context_weight: float = 0.0,
    vectors: np.ndarray | None = None,
    vector_weight: float = 0.0,
    bm25_weight: float = 1.0,
) -> np.ndarray:
    """The soft targets among some formulas: ``bm25_weight`` times each row's BM25 scores over the row formula's own
    score, plus ``span_weight`` times the sub-expression match, plus ``context_weight`` where two formulas come from
    the same document (``documents``: each formula's document index), plus ``vector_weight`` times the cosine of
    another encoder's unit ``vectors``, over the sum of the weights (so the diagonal is 1).

    Shapes: returns ``[len(items), len(items)]`` float32.

    Raises:
        ValueError: no signal has weight.
    """
    n = len(items)
    total = bm25_weight + span_weight
    target = np.zeros((n, n), dtype=np.float64)
    if bm25_weight:
        scores = bm25.scores(items, items)
        own = np.maximum(np.diag(scores).copy(), 1e-6)
        target += bm25_weight * scores / own[:, None]
    if span_weight:
        target += span_weight * spans.match(items, items)
    if context_weight and documents is not None:
        doc = documents[items]
        target += context_weight * (doc[:, None] == doc[None, :])
        total += context_weight
    if vector_weight and vectors is not None:
        v = vectors[items]
        target += vector_weight * (v @ v.T)
        total += vector_weight
    if total <= 0:
        raise ValueError("the teacher has no signal: give BM25, spans, context or vectors a weight")
    return (target / total).astype(np.float32)


def model_inputs(data: TermData, items: np.ndarray, features: StructureFeatures) -> dict[str, np.ndarray]:
    """The model's flat inputs for some formulas of ``data`` (`engine.model.structure_bag.TermBatch` layout)."""
    starts, ends = data.offsets[items], data.offsets[items + 1]
    sizes = ends - starts
    within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    pos = np.repeat(starts, sizes) + within
    slots = term_slots(data.digest[pos], features)  # [T, hashes]
    weights = (1.0 + np.log(data.count[pos])).astype(np.float32)
    h = features.hashes
    graph = np.repeat(np.arange(len(items), dtype=np.int64), sizes * h)
    return {
        "ids": slots.reshape(-1),
        "weights": np.repeat(weights, h),
        "graph": graph,
        "graph_sizes": (sizes * h).astype(np.int64),
    }


def make_batch(
    data: TrainingData, batches: MinedBatches, config: DistillConfig, rng: np.random.Generator
) -> dict[str, Any]:
    """One step's arrays: the formulas' and views' inputs and the teacher matrix ``[B, B]`` (`teacher_matrix`)."""
    items = batches.batch(rng)
    head = None
    if config.head_weight and data.head_vectors is not None:
        h = data.head_vectors[items]
        head = (h @ h.T).astype(np.float32)
    return {
        "head_teacher": head,
        "formulas": model_inputs(data.terms, items, config.features),
        "views": model_inputs(data.views, items, config.features),
        "teacher": teacher_matrix(
            data.teacher,
            data.spans,
            items,
            config.span_weight,
            data.documents,
            config.context_weight,
            data.vectors,
            config.vector_weight,
            config.bm25_weight,
        ),
        "items": items,
    }


class _BatchStream(torch.utils.data.IterableDataset):
    def __init__(self, data: TrainingData, batches: MinedBatches, config: DistillConfig) -> None:
        self.data, self.batches, self.config = data, batches, config

    def __iter__(self) -> Iterator[dict]:
        info = torch.utils.data.get_worker_info()
        rng = np.random.default_rng([self.config.seed, info.id if info else 0])
        while True:
            yield make_batch(self.data, self.batches, self.config, rng)


def _tensors(inputs: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v).to(device, non_blocking=True) for k, v in inputs.items()}


def distill_loss(
    z: torch.Tensor,
    v: torch.Tensor | None,
    teacher: torch.Tensor,
    tau_t: float,
    tau_s: float,
    quantize_bits: int = 0,
    query: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """KL(teacher softmax || student softmax) over each anchor's other formulas and views (module docstring); with
    ``quantize_bits``, each anchor scored against its candidates' rounded vectors (`DistillConfig.quantize_bits`);
    with ``query``, each anchor's vector mapped by it (a query head's mix) and normalised before it is scored.

    Shapes: z, v: ``[B, D]`` unit vectors; teacher: ``[B, B]`` normalised scores (diagonal 1).
    """
    b = z.shape[0]
    eye = torch.eye(b, dtype=torch.bool, device=z.device)
    t_self = teacher.masked_fill(eye, float("-inf"))
    if v is None:
        anchors, cands, targets = z, z, t_self
    else:
        t_view = teacher.masked_fill(eye, 1.0)
        cands = torch.cat([z, v])
        anchors = torch.cat([z, v])
        # a formula's row: the other formulas (self masked) and every view (its own = 1); a view's row: likewise
        top = torch.cat([t_self, t_view], dim=1)
        bottom = torch.cat([t_view, t_self], dim=1)
        targets = torch.cat([top, bottom])
    if quantize_bits:
        cands = fake_quantize(cands, quantize_bits)
    if query is not None:
        anchors = nn.functional.normalize(query(anchors), dim=1)
    logits = anchors @ cands.T / tau_s
    mask = torch.isinf(targets)
    logits = logits.masked_fill(mask, float("-inf"))
    p = torch.softmax(targets / tau_t, dim=1)
    log_q = torch.log_softmax(logits, dim=1)
    return (p * (torch.log(p.clamp(min=1e-12)) - log_q.masked_fill(mask, 0.0))).sum(dim=1).mean()


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def cosine_decay(step: int, elapsed: float, warmup_steps: int, steps: int, max_seconds: float) -> float:
    """The learning rate's factor after the warm-up: cosine decay from 1 to a tenth over the steps after it or the
    time budget (``max_seconds``, 0: none), whichever runs out first."""
    progress = (step - warmup_steps) / max(1, steps - warmup_steps)
    if max_seconds:
        progress = max(progress, elapsed / max_seconds)
    return 0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * min(1.0, progress)))


def train(
    config: DistillConfig,
    data: TrainingData,
    *,
    log: Callable[[str], None] = print,
    evaluate: Callable[[StructureBagModel], dict[str, float]] | None = None,
    eval_every: int = 0,
    init: StructureBagModel | None = None,
) -> tuple[StructureBagModel, dict[str, Any]]:
    """Train a structure-bag model (``init``: continue this one, of ``config.model``'s shape, instead of a new one);
    returns it (on CPU, eval mode) and the run's history (losses, timings, evals)."""
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    device = resolve_device(config.device)
    if config.head_weight and not config.model.query_head:
        raise ValueError("head_weight needs a model with a query head (StructureBagConfig.query_head)")
    if config.head_weight and data.head_vectors is None:
        raise ValueError("head_weight needs the head's teacher vectors (TrainingData.head_vectors)")
    if init is not None and init.config != config.model:
        raise ValueError(f"init is a {init.config} model, the run trains {config.model}")
    model = (init if init is not None else StructureBagModel(config.model)).to(device).train()
    head = model.query_head if config.head_weight else None
    share = config.alone_head_share

    def alone_query(x: torch.Tensor) -> torch.Tensor:
        """The first loss's query: the stored vector, or its mix with the head as the ranker weighs them."""
        return x if head is None else (1.0 - share) * x + share * head(x)

    head_params = [] if model.query_head is None else list(model.query_head.parameters())
    groups = [
        {"params": [p for p in model.parameters() if all(p is not h for h in head_params)], "scale": 1.0},
        {"params": head_params, "scale": config.head_lr_scale},
    ]
    optimizer = torch.optim.AdamW(
        [g for g in groups if g["params"]], lr=config.learning_rate / max(1, config.warmup_steps), weight_decay=0.0
    )

    def factor(step: int, elapsed: float) -> float:
        """Linear warm-up, then cosine decay to a tenth over the steps or the time budget, whichever runs out first."""
        if step < config.warmup_steps:  # steps count from 1
            return (step + 1) / config.warmup_steps
        return cosine_decay(step, elapsed, config.warmup_steps, config.steps, config.max_seconds)

    batches = MinedBatches(
        data.teacher,
        seeds=config.seeds,
        per_seed=config.per_seed,
        pool=config.pool,
        documents=data.documents if config.same_document else None,
        same_document=config.same_document,
    )
    stream = _BatchStream(data, batches, config)
    loader = torch.utils.data.DataLoader(
        stream,
        batch_size=None,
        num_workers=config.workers,
        prefetch_factor=4 if config.workers else None,
        persistent_workers=False,
    )
    if config.align_weight and data.vectors is None:
        raise ValueError("align_weight needs the teacher's vectors (TrainingData.vectors)")
    history: dict[str, Any] = {"loss": [], "evals": [], "device": str(device)}
    start = time.perf_counter()
    running = 0.0
    model.train()
    step = 0
    for step, batch in enumerate(loader, start=1):
        f = _tensors(batch["formulas"], device)
        z = model(f["ids"], f["weights"], f["graph"], f["graph_sizes"])
        v = None
        if config.views:
            w = _tensors(batch["views"], device)
            v = model(w["ids"], w["weights"], w["graph"], w["graph_sizes"])
        teacher = torch.as_tensor(batch["teacher"]).to(device)
        loss = distill_loss(
            z, v, teacher, config.tau_teacher, config.tau_student, config.quantize_bits, query=alone_query
        )
        if head is not None and batch["head_teacher"] is not None:
            head_teacher = torch.as_tensor(batch["head_teacher"]).to(device)
            loss = loss + config.head_weight * distill_loss(
                z, v, head_teacher, config.tau_teacher, config.tau_student, config.quantize_bits, query=head
            )
        if config.align_weight and data.vectors is not None:
            target = torch.as_tensor(data.vectors[np.asarray(batch["items"])]).to(device)
            loss = loss + config.align_weight * (1.0 - (z * target).sum(dim=1)).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        for group in optimizer.param_groups:
            group["lr"] = config.learning_rate * group["scale"] * factor(step, time.perf_counter() - start)
        running += float(loss.detach())
        elapsed = time.perf_counter() - start
        if step % config.log_every == 0:
            history["loss"].append((step, running / config.log_every, elapsed))
            log(f"step {step} loss {running / config.log_every:.4f} {elapsed:.0f}s")
            running = 0.0
        if evaluate is not None and eval_every and step % eval_every == 0:
            model.eval()
            figures = evaluate(model)
            model.train()
            history["evals"].append({"step": step, "seconds": elapsed, **figures})
            log(f"step {step} dev {figures}")
        if step >= config.steps or (config.max_seconds and elapsed >= config.max_seconds):
            break
    history["steps"] = step
    history["train_seconds"] = time.perf_counter() - start
    model = model.to("cpu").eval()
    return model, history


@torch.no_grad()
def encode_terms(
    model: StructureBagModel, data: TermData, features: StructureFeatures, batch: int = 2048
) -> np.ndarray:
    """Vectors of every formula of ``data`` with a torch model (in its current mode and device)."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(data), batch):
        items = np.arange(start, min(len(data), start + batch), dtype=np.int64)
        t = _tensors(model_inputs(data, items, features), device)
        out.append(model(t["ids"], t["weights"], t["graph"], t["graph_sizes"]).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.config.embedding_dim), dtype=np.float32)
