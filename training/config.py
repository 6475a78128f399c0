"""`TrainConfig`: every knob of a training run, built once at the edge (TOML file + CLI flags) and passed down."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import EqsearchError

LOSSES = ("histogram", "triplet", "infonce")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class TrainConfig:
    """A training run of the KDD'20 encoder (paper defaults in brackets where they differ).

    Args:
        corpus: the papers JSONL written by ingest (``ingest/FORMAT.md``).
        run_dir: where checkpoints, metrics, the vocabulary and the featurized-corpus cache go.
        vocabulary: an existing vocabulary JSON to use; None builds one from the training papers.
        test_fraction: share of PAPERS held out for evaluation.
        split_seed: seed of the paper split.
        hidden_dim: width of the first layer and graph convolutions [512].
        embedding_dim: width of the equation embedding [64].
        n_convs: graph convolutions after the first layer [3].
        loss: "histogram" (R bins, all anchor/negative pairs of the batch), "triplet" (margin) or "infonce" (each
            anchor picks its positive among the batch's positives and negatives; not in the paper).
        temperature: InfoNCE's temperature.
        self_share: share of the training triplets whose positive is the anchor itself, seen through another
            augmentation and mask (a contrastive view pair; 0 in the paper).
        inline: train on the papers' inline formulas too (the paper uses display equations only).
        histogram_bins: R [64].
        margin: Δ of the triplet loss [1].
        masking: add the masking task (ablation switch).
        mask_rate: share of nodes masked per equation [0.15].
        augmentation: identifier-permutation augmentation (ablation switch).
        mean_swaps: Poisson mean of the number of character transpositions [32].
        train_triplets: triplets sampled once from the training papers [1M on cs.LG].
        eval_triplets: triplets sampled from the held-out papers [100k].
        epochs: passes over the training triplets [20].
        max_steps: stop after this many optimizer steps (None: epochs decide).
        batch_size: triplets per batch [128].
        learning_rate: Adam's initial learning rate [1e-4], decayed linearly to 0 after the warm-up.
        warmup_steps: linear warm-up steps.
        seed: seed of triplet sampling, initialisation, masking and augmentation.
        device: "auto" (CUDA when available), "cpu" or "cuda".
        amp: bfloat16 autocast on CUDA (ignored on CPU).
        num_workers: DataLoader worker processes building batches (0 = in the training process).
        threads: torch intra-op threads on CPU (0 = leave torch's default).
        log_every: steps between metric lines.
        checkpoint_every: steps between checkpoints (one is always written at the end).
        min_nodes: skip equations with fewer nodes.
        max_nodes: skip equations with more nodes.
    """

    corpus: str = ""
    run_dir: str = "runs/default"
    vocabulary: str | None = None
    test_fraction: float = 0.2
    split_seed: int = 0
    temperature: float = 0.1
    self_share: float = 0.0
    inline: bool = False
    hidden_dim: int = 512
    embedding_dim: int = 64
    n_convs: int = 3
    loss: str = "histogram"
    histogram_bins: int = 64
    margin: float = 1.0
    masking: bool = True
    mask_rate: float = 0.15
    augmentation: bool = True
    mean_swaps: float = 32.0
    train_triplets: int = 100_000
    eval_triplets: int = 10_000
    epochs: int = 20
    max_steps: int | None = None
    batch_size: int = 128
    learning_rate: float = 1e-4
    warmup_steps: int = 0
    seed: int = 0
    device: str = "auto"
    amp: bool = True
    num_workers: int = 0
    threads: int = 0
    log_every: int = 20
    checkpoint_every: int = 200
    min_nodes: int = 2
    max_nodes: int = 512

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if not 0.0 < self.test_fraction < 1.0:
            raise ValueError(f"test_fraction must be in (0, 1), got {self.test_fraction}")
        if not 0.0 < self.mask_rate < 1.0:
            raise ValueError(f"mask_rate must be in (0, 1), got {self.mask_rate}")
        if not 0.0 <= self.self_share < 1.0:
            raise ValueError(f"self_share must be in [0, 1), got {self.self_share}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if self.batch_size < 2:
            raise ValueError("batch_size must be at least 2 (the histogram loss contrasts within a batch)")
        if self.histogram_bins < 2:
            raise ValueError("histogram_bins must be at least 2")
        for name in ("train_triplets", "eval_triplets", "epochs", "hidden_dim", "embedding_dim", "n_convs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be positive or None")

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def config_field_names() -> list[str]:
    return [f.name for f in fields(TrainConfig)]


def load_train_config(path: Path | None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read a TOML config (top-level keys = TrainConfig fields), then apply non-None overrides (CLI flags).

    Relative paths in the file (``corpus``, ``run_dir``, ``vocabulary``) are taken as they are, relative to the
    working directory: configs are meant to be run from the repository root.

    Raises:
        EqsearchError: unreadable file, unknown key, or a value the config rejects.
    """
    values: dict[str, Any] = {}
    if path is not None:
        try:
            values = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise EqsearchError(f"cannot read the training config {path}: {error}") from error
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = sorted(set(values) - set(config_field_names()))
    if unknown:
        raise EqsearchError(
            f"unknown training config keys {unknown} (in {path or 'flags'})",
            hint=f"known keys: {', '.join(config_field_names())}",
        )
    try:
        return TrainConfig(**values)
    except (TypeError, ValueError) as error:
        raise EqsearchError(f"invalid training config: {error}") from error
