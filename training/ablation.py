"""The ablation study of KDD'20 Table 1: the full model, then each design choice switched off on the same split."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eqsearch.evaluation.metrics import PairedBootstrap, RankingScore
from eqsearch.training.config import TrainConfig
from eqsearch.training.evaluate import evaluate_held_out

VARIANTS = (
    ("Full Model", {}),
    ("No Histogram Loss", {"loss": "triplet"}),
    ("No Masking", {"masking": False}),
    ("No Augmentation", {"augmentation": False}),
)
VARIANT_NAMES = tuple(name for name, _ in VARIANTS)
RESULT_FILE = "ablation.json"


def slug(name: str) -> str:
    """Run-directory suffix of a variant: ``"No Masking"`` -> ``"no-masking"``."""
    return name.lower().replace(" ", "-")


def _score(values: dict[str, Any]) -> RankingScore:
    return RankingScore(**values)


def _run_variant(variant: TrainConfig, log: Callable[[str], None]) -> dict[str, Any]:
    """Train one variant (or reuse a finished run with the same config) and return its result record."""
    from eqsearch.training.loop import steps_for, train

    result_path = Path(variant.run_dir, RESULT_FILE)
    if result_path.is_file():
        record = json.loads(result_path.read_text())
        if record.get("config") == variant.to_dict() and record.get("steps") == steps_for(variant):
            log(f"ablation: reusing {result_path}")
            return record
    result = train(variant, log=log)
    report = evaluate_held_out(result.model, result.data.test, result.data.eval_triplets)
    record = {
        "config": variant.to_dict(),
        "steps": result.steps,
        "train_seconds": result.seconds,
        "train_triplets_per_second": result.triplets_per_second,
        **report.to_dict(),
    }
    result_path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def format_table(records: dict[str, dict[str, Any]], config: TrainConfig) -> str:
    """Markdown table in the shape of KDD'20 Table 1 from the variants' result records (finished ones only).

    Args:
        records: variant name -> record written by the ablation run (``RESULT_FILE``); needs "Full Model" for the
            Δ column and at least one record for the bag-of-words row.
        config: the base config (for the budget line).
    """
    from eqsearch.training.loop import steps_for

    full = _score(records["Full Model"]["model"]).score if "Full Model" in records else None
    lines = [
        "| Influence factor | Ranking hold-out (± eq. 9) | Δ vs full | model − BoW (paper bootstrap) | "
        "Ranking hold-out, cosine | train triplets/s |",
        "|---|---|---|---|---|---|",
    ]
    bootstrap: PairedBootstrap | None = None
    for name in VARIANT_NAMES:
        if name not in records:
            lines.append(f"| {name} | not run | | | | |")
            continue
        record = records[name]
        score, cosine = _score(record["model"]), _score(record["model_cosine"])
        delta = "" if name == "Full Model" or full is None else f"{100 * (score.score - full):+.1f}"
        difference = ""
        if "model_minus_bag_of_words" in record:  # records written before the bootstrap existed lack it
            bootstrap = PairedBootstrap(**record["model_minus_bag_of_words"])
            difference = f"{100 * bootstrap.difference:+.1f} [{100 * bootstrap.low:+.1f}, {100 * bootstrap.high:+.1f}]"
        lines.append(
            f"| {name} | {100 * score.score:.1f} (± {100 * score.bound_eq9:.1f}) | {delta} | {difference} | "
            f"{100 * cosine.score:.1f} | {record['train_triplets_per_second']:.0f} |"
        )
    first = next(iter(records.values()))
    bow, s = _score(first["bag_of_words"]), _score(first["model"])
    bow_delta = "" if full is None else f"{100 * (bow.score - full):+.1f}"
    lines.append(
        f"| Bag of words (§6.3) | {100 * bow.score:.1f} (± {100 * bow.bound_eq9:.1f}) | {bow_delta} | | "
        f"{100 * bow.score:.1f} | |"
    )
    lines.append("")
    lines.append(
        f"Held-out: {s.triplets} triplets from {s.papers} papers never seen in training; ± = eq. 9 bound at "
        f"δ = {s.delta} (greedy colouring χ̂ = {s.chromatic}); Theorem 5.1 bound over N = {s.papers} papers: "
        f"± {100 * s.bound_theorem51:.1f}. Budget per variant: {steps_for(config)} steps of "
        f"{config.batch_size} triplets."
    )
    if bootstrap is not None:
        lines.append(
            f"model − BoW: the variant's ranking score minus the bag of words' on the same triplets, with the "
            f"{100 * (1 - bootstrap.delta):g}% percentile interval of {bootstrap.resamples} bootstrap resamples of the "
            f"{bootstrap.papers} held-out anchor papers (seed {bootstrap.seed}): approximate, assuming exchangeable "
            "papers, not a worst-case bound like eq. 9."
        )
    return "\n".join(lines) + "\n"


def run_ablations(
    config: TrainConfig,
    out: Path,
    variants: tuple[str, ...] = VARIANT_NAMES,
    log: Callable[[str], None] = print,
) -> str:
    """Train each chosen variant of ``VARIANTS`` (run directories ``<run_dir>-<slug>``), evaluate it on the held-out
    triplets, and write a markdown table with the bag-of-words baseline; returns the table.

    The table is rewritten after every variant, so an interrupted study keeps what finished; a rerun reuses a
    variant whose run directory already holds a result for the same config (``RESULT_FILE``).

    Args:
        config: the full model's config; each variant changes one field of it.
        out: the markdown file to write.
        variants: names from ``VARIANT_NAMES`` to run, in table order.
        log: progress lines.

    Raises:
        ValueError: an unknown variant name.
    """
    unknown = [name for name in variants if name not in VARIANT_NAMES]
    if unknown:
        raise ValueError(f"unknown ablation variants {unknown}; choose from {list(VARIANT_NAMES)}")
    records: dict[str, dict[str, Any]] = {}
    table = ""
    out.parent.mkdir(parents=True, exist_ok=True)
    for name, changes in VARIANTS:
        if name not in variants:
            continue
        variant = config.replace(run_dir=f"{config.run_dir}-{slug(name)}", **changes)
        records[name] = _run_variant(variant, log)
        table = format_table(records, config)
        out.write_text(table)
        log(f"ablation: {name}: {_score(records[name]['model']).describe()}")
    return table
