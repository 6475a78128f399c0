"""The training run: data preparation, Adam with warm-up + linear decay, checkpoints and resume, metrics."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.errors import EqsearchError
from eqsearch.ingest.records import read_papers
from eqsearch.training.batching import AugmentSettings, TripletBatches, triplet_loader
from eqsearch.training.config import TrainConfig
from eqsearch.training.dataset import Corpus, build_corpus, corpus_file, load_corpus, save_corpus, split_papers
from eqsearch.training.model import FormulaEncoder, MaskingHeads, ModelConfig
from eqsearch.training.objective import training_losses
from eqsearch.training.triplets import Triplets, TripletSampler
from tqdm import tqdm

CHECKPOINT_NAME = "checkpoint-last.pt"
CHECKPOINT_FORMAT = 1


@dataclass
class PreparedData:
    """Everything a run trains and evaluates on; deterministic given the config and the corpus file."""

    vocabulary: Any  # eqsearch.engine.model.vocabulary.Vocabulary
    train: Corpus
    test: Corpus
    train_triplets: Triplets
    eval_triplets: Triplets
    corpus_summary: dict[str, Any]


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def prepare_data(config: TrainConfig, log: Callable[[str], None] = print) -> PreparedData:
    """Vocabulary, featurized corpus (cached in the run directory), paper split and triplets.

    The vocabulary is built from the TRAINING papers only when none is given, so that nothing about the held-out
    papers leaks into the model.
    """
    from eqsearch.engine.model.featurize import featurize_mathml
    from eqsearch.engine.model.vocabulary import Vocabulary, build_vocabulary

    corpus_path = corpus_file(config.corpus)
    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    vocab_path = run_dir / "vocabulary.json"
    cache_path = run_dir / "corpus.npz"
    stamp = {
        "corpus": str(corpus_path.resolve()),
        "size": corpus_path.stat().st_size,
        "mtime": corpus_path.stat().st_mtime,
        "vocabulary": config.vocabulary,
        "split": [config.test_fraction, config.split_seed],
        "nodes": [config.min_nodes, config.max_nodes],
        "inline": config.inline,
    }
    stamp_path = run_dir / "corpus.stamp.json"
    if (
        cache_path.is_file()
        and vocab_path.is_file()
        and stamp_path.is_file()
        and json.loads(stamp_path.read_text()) == stamp
    ):
        vocab = Vocabulary.load(vocab_path)
        corpus = load_corpus(cache_path)
        log(f"featurized corpus from cache {cache_path}")
    else:
        if config.vocabulary:
            vocab = Vocabulary.load(config.vocabulary)
        else:
            # the vocabulary comes from the training papers of the split, computed on the raw records
            train_ids = _train_paper_ids(corpus_path, config)
            mathml = _read_mathml_of(corpus_path, train_ids, inline=config.inline)
            vocab = build_vocabulary(mathml, skip_malformed=True)
            log(f"vocabulary built from {len(mathml)} training equations")
        vocab.save(vocab_path)
        with tqdm(desc="featurizing", unit="eq", leave=False) as bar:
            corpus = build_corpus(
                read_papers(corpus_path),
                partial(featurize_mathml, vocab=vocab),
                min_nodes=config.min_nodes,
                max_nodes=config.max_nodes,
                progress=lambda n: bar.update(n - bar.n),
                inline=config.inline,
            )
        save_corpus(corpus, cache_path)
        stamp_path.write_text(json.dumps(stamp))
    train, test = split_papers(corpus, config.test_fraction, config.split_seed)
    if len(train.papers) < 2 or len(test.papers) < 2:
        raise EqsearchError(
            f"the corpus {corpus_path} has too few papers with equations for a split "
            f"({len(train.papers)} train / {len(test.papers)} test)"
        )
    train_triplets = TripletSampler(train, self_share=config.self_share).sample(config.train_triplets, seed=config.seed)
    eval_triplets = TripletSampler(test).sample(config.eval_triplets, seed=config.seed + 1)
    summary = {
        "corpus_file": corpus_path.name,
        "all": corpus.summary(),
        "train": {k: v for k, v in train.summary().items() if k != "skipped"},
        "test": {k: v for k, v in test.summary().items() if k != "skipped"},
        "train_triplet_sources": train_triplets.source_fractions(),
        "eval_triplet_sources": eval_triplets.source_fractions(),
    }
    return PreparedData(vocab, train, test, train_triplets, eval_triplets, summary)


def _train_paper_ids(corpus_path: Path, config: TrainConfig) -> set[str]:
    import hashlib

    ids = set()
    for record in read_papers(corpus_path):
        pid = str(record.get("id"))
        u = int.from_bytes(hashlib.sha256(f"{config.split_seed}:{pid}".encode()).digest()[:8], "big") / 2**64
        if u >= config.test_fraction:
            ids.add(pid)
    return ids


def _read_mathml_of(corpus_path: Path, ids: set[str], *, inline: bool = False) -> list[str]:
    return [
        eq["mathml"]
        for record in read_papers(corpus_path)
        if str(record.get("id")) in ids
        for section in record.get("sections") or []
        for eq in [*(section.get("equations") or []), *((section.get("inline") or []) if inline else [])]
        if eq.get("mathml") and (inline or eq.get("display") is not False)
    ]


def model_config_for(config: TrainConfig, vocab: Any) -> ModelConfig:
    """Model dimensions from the training config and the vocabulary sizes."""
    return ModelConfig(
        n_tags=vocab.n_tags,
        n_attrs=vocab.n_attrs,
        n_chars=vocab.n_chars,
        hidden_dim=config.hidden_dim,
        embedding_dim=config.embedding_dim,
        n_convs=config.n_convs,
    )


def resolve_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise EqsearchError("--device cuda was asked for, but torch sees no CUDA device", hint="use --device cpu")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def linear_schedule(step: int, warmup: int, total: int) -> float:
    """Learning-rate factor: linear warm-up to 1, then linear decay to 0 at ``total`` (KDD'20 §4.4)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def train_step(
    model: FormulaEncoder,
    heads: MaskingHeads | None,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    config: TrainConfig,
    device: torch.device,
    use_amp: bool,
) -> dict[str, torch.Tensor]:
    """One optimizer step on one batch (moved to ``device``; bfloat16 autocast when ``use_amp``); returns the
    losses of `training_losses` (the learning-rate schedule is the caller's)."""
    batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
        losses = training_losses(
            model,
            heads,
            batch,
            loss=config.loss,
            histogram_bins=config.histogram_bins,
            margin=config.margin,
            temperature=config.temperature,
        )
    optimizer.zero_grad(set_to_none=True)
    losses["loss"].backward()
    optimizer.step()
    return losses


@dataclass
class TrainResult:
    model: FormulaEncoder
    data: PreparedData
    steps: int
    seconds: float
    triplets_per_second: float
    checkpoint: Path


def train(config: TrainConfig, *, resume: bool = False, log: Callable[[str], None] = print) -> TrainResult:
    """Train the encoder as configured; writes ``metrics.jsonl`` and ``checkpoint-last.pt`` in ``run_dir``.

    Args:
        config: the run.
        resume: continue from ``run_dir/checkpoint-last.pt`` (same config required).
        log: where progress lines go.
    """
    if config.threads:
        torch.set_num_threads(config.threads)
    seed_everything(config.seed)
    device = resolve_device(config.device)
    data = prepare_data(config, log)
    log(f"data: {json.dumps(data.corpus_summary)}")
    model_config = model_config_for(config, data.vocabulary)
    model = FormulaEncoder(model_config).to(device)
    heads = MaskingHeads(model_config).to(device) if config.masking else None
    params = list(model.parameters()) + (list(heads.parameters()) if heads is not None else [])
    optimizer = torch.optim.Adam(params, lr=config.learning_rate)
    batches_per_epoch = len(data.train_triplets) // config.batch_size
    if batches_per_epoch < 1:
        raise EqsearchError(
            f"train_triplets ({config.train_triplets}) is smaller than batch_size ({config.batch_size})"
        )
    total_steps = config.epochs * batches_per_epoch
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, partial(linear_schedule, warmup=config.warmup_steps, total=total_steps)
    )
    run_dir = Path(config.run_dir)
    checkpoint_path = run_dir / CHECKPOINT_NAME
    step = 0
    if resume:
        if not checkpoint_path.is_file():
            raise EqsearchError(f"--resume: no checkpoint at {checkpoint_path}")
        state = torch.load(checkpoint_path, map_location=device, weights_only=False)
        if state["config"] != config.to_dict():
            changed = sorted(k for k, v in config.to_dict().items() if state["config"].get(k) != v)
            raise EqsearchError(
                f"--resume: the checkpoint was trained with another config (differs in {changed})",
                hint="resume with the same config, or start a new run_dir",
            )
        model.load_state_dict(state["model"])
        if heads is not None:
            heads.load_state_dict(state["heads"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        step = int(state["step"])
        log(f"resumed at step {step} of {total_steps}")
    settings = AugmentSettings(
        augmentation=config.augmentation,
        mi_tag=data.vocabulary.tag_index("mi") if config.augmentation else None,
        n_chars=data.vocabulary.n_chars,
        mean_swaps=config.mean_swaps,
        masking=config.masking,
        mask_rate=config.mask_rate,
    )
    use_amp = config.amp and device.type == "cuda"
    metrics_path = run_dir / "metrics.jsonl"
    model.train()
    started = time.perf_counter()
    first_step = step
    window: dict[str, list[float]] = {}
    with tqdm(total=total_steps, initial=step, desc="training", unit="step") as bar, metrics_path.open("a") as mlog:
        while step < total_steps:
            epoch, skip = divmod(step, batches_per_epoch)
            dataset = TripletBatches(
                data.train.graphs, data.train_triplets, config.batch_size, settings, config.seed, epoch, skip
            )
            loader = triplet_loader(dataset, config.num_workers, pin_memory=device.type == "cuda")
            for batch in loader:
                losses = train_step(model, heads, optimizer, batch, config, device, use_amp)
                scheduler.step()
                step += 1
                bar.update(1)
                for k, v in losses.items():
                    window.setdefault(k, []).append(float(v.detach()))
                if step % config.log_every == 0 or step == total_steps:
                    elapsed = time.perf_counter() - started
                    record = {
                        "step": step,
                        "epoch": epoch,
                        "lr": scheduler.get_last_lr()[0],
                        "triplets_per_s": (step - first_step) * config.batch_size / max(elapsed, 1e-9),
                        **{k: float(np.mean(v)) for k, v in window.items()},
                    }
                    window = {}
                    mlog.write(json.dumps(record) + "\n")
                    mlog.flush()
                    bar.set_postfix(loss=f"{record['loss']:.3f}", acc=f"{record['accuracy']:.3f}")
                if step % config.checkpoint_every == 0 or step == total_steps:
                    save_checkpoint(checkpoint_path, config, model, heads, optimizer, scheduler, step, data)
                if step >= total_steps:
                    break
    seconds = time.perf_counter() - started
    rate = (step - first_step) * config.batch_size / max(seconds, 1e-9)
    log(f"trained {step} steps in {seconds:.0f}s ({rate:.0f} triplets/s on {device})")
    model.eval()
    return TrainResult(model, data, step, seconds, rate, checkpoint_path)


def save_checkpoint(
    path: Path,
    config: TrainConfig,
    model: FormulaEncoder,
    heads: MaskingHeads | None,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    step: int,
    data: PreparedData,
) -> None:
    """Write the full training state atomically (a crash never leaves a half-written checkpoint)."""
    state = {
        "format": CHECKPOINT_FORMAT,
        "config": config.to_dict(),
        "model_config": model.config.to_dict(),
        "model": model.state_dict(),
        "heads": heads.state_dict() if heads is not None else None,
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "step": step,
        "vocabulary": data.vocabulary.to_json(),
        "data_summary": data.corpus_summary,
    }
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def load_encoder(checkpoint: Path) -> tuple[FormulaEncoder, dict[str, Any]]:
    """The encoder of a checkpoint in eval mode, and the checkpoint's other fields (config, vocabulary, ...)."""
    try:
        state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    except FileNotFoundError:
        raise EqsearchError(f"checkpoint not found: {checkpoint}") from None
    if state.get("format") != CHECKPOINT_FORMAT:
        raise EqsearchError(f"{checkpoint} is not an eqsearch training checkpoint (format {state.get('format')!r})")
    model = FormulaEncoder(ModelConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


def steps_for(config: TrainConfig) -> int:
    """Optimizer steps the config asks for."""
    steps = config.epochs * (config.train_triplets // config.batch_size)
    return steps if config.max_steps is None else min(steps, config.max_steps)
