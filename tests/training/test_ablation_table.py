"""The Table-1-shaped markdown of `eqsearch ablate`, from hand-written result records."""

from __future__ import annotations

from dataclasses import asdict

from eqsearch.evaluation.metrics import PairedBootstrap, RankingScore
from eqsearch.training.ablation import format_table
from eqsearch.training.config import TrainConfig


def _score(score: float) -> dict:
    return asdict(RankingScore(score, 1000, 50, 40, 0.05, 0.1, 0.2))


def _record(model: float, bootstrap: PairedBootstrap | None) -> dict:
    record = {
        "model": _score(model),
        "model_cosine": _score(model + 0.01),
        "bag_of_words": _score(0.7),
        "train_triplets_per_second": 80.0,
    }
    if bootstrap is not None:
        record["model_minus_bag_of_words"] = asdict(bootstrap)
    return record


def test_table_shows_the_paired_bootstrap_beside_the_eq9_bound() -> None:
    boot = PairedBootstrap(0.05, 0.012, 0.094, 0.05, 2000, 50, 0, 0.99)
    table = format_table(
        {"Full Model": _record(0.75, boot), "No Masking": _record(0.72, None)},
        TrainConfig(max_steps=10, batch_size=8),
    )
    lines = table.splitlines()
    assert lines[0].split(" | ")[2:4] == ["Δ vs full", "model − BoW (paper bootstrap)"]
    assert "| Full Model | 75.0 (± 10.0) |  | +5.0 [+1.2, +9.4] | 76.0 | 80 |" in lines
    assert "| No Masking | 72.0 (± 10.0) | -3.0 |  | 73.0 | 80 |" in lines  # an older record: no bootstrap
    assert "| No Histogram Loss | not run | | | | |" in lines
    assert "| Bag of words (§6.3) | 70.0 (± 10.0) | -5.0 | | 70.0 | |" in lines
    assert "95% percentile interval of 2000 bootstrap resamples of the 50 held-out anchor papers (seed 0)" in table
