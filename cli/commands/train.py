"""`eqsearch train` (optionally exporting the bundle) and `eqsearch ablate`: the runs that need torch (extra `train`).

Imports nothing heavy at module level; a missing torch names the extra to install. Training then exporting is
composed here, so that `eqsearch.training` never imports `eqsearch.export` (export depends on training).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import MissingExtraError


def need_torch() -> None:
    """Raise `MissingExtraError` naming the `train` extra when torch or torch-geometric is missing."""
    for package in ("torch", "torch_geometric"):
        if importlib.util.find_spec(package) is None:
            raise MissingExtraError(package.replace("_", "-"), "train")


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML file of TrainConfig fields (flags override it)")
    parser.add_argument("--corpus", help="papers JSONL from ingest (ingest/FORMAT.md)")
    parser.add_argument("--run-dir", help="where checkpoints, metrics and caches go")
    parser.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--batch-size", type=int, help="triplets per batch (paper: 128)")
    parser.add_argument("--learning-rate", type=float)
    parser.add_argument("--train-triplets", type=int)
    parser.add_argument("--eval-triplets", type=int)
    parser.add_argument("--hidden-dim", type=int)
    parser.add_argument(
        "--loss",
        choices=("histogram", "triplet", "infonce"),
        help="similarity loss: the paper's histogram (default) or triplet loss, or InfoNCE over the batch",
    )
    parser.add_argument("--temperature", type=float, help="InfoNCE temperature (0.1)")
    parser.add_argument(
        "--self-share",
        type=float,
        help="share of training triplets whose positive is the anchor itself in another augmentation and mask (0)",
    )
    parser.add_argument(
        "--inline",
        action="store_const",
        const=True,
        help="train on the papers' inline formulas too (the paper: display equations only)",
    )
    parser.add_argument(
        "--no-masking", dest="masking", action="store_const", const=False, help="ablation: no masking task"
    )
    parser.add_argument(
        "--no-augmentation",
        dest="augmentation",
        action="store_const",
        const=False,
        help="ablation: no identifier permutation",
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--num-workers", type=int, help="DataLoader worker processes")
    parser.add_argument("--threads", type=int, help="torch CPU threads (0 = torch's default)")
    parser.add_argument("--seed", type=int)


_FLAG_FIELDS = (
    "corpus",
    "run_dir",
    "max_steps",
    "epochs",
    "batch_size",
    "learning_rate",
    "train_triplets",
    "eval_triplets",
    "hidden_dim",
    "loss",
    "temperature",
    "self_share",
    "inline",
    "masking",
    "augmentation",
    "device",
    "num_workers",
    "threads",
    "seed",
)


def _config_from(args: argparse.Namespace) -> Any:
    from eqsearch.training.config import load_train_config

    return load_train_config(args.config, {name: getattr(args, name, None) for name in _FLAG_FIELDS})


def _run_train(args: argparse.Namespace) -> int:
    need_torch()
    config = _config_from(args)
    from eqsearch.training.evaluate import evaluate_held_out
    from eqsearch.training.loop import train

    result = train(config, resume=args.resume)
    report = evaluate_held_out(result.model, result.data.test, result.data.eval_triplets)
    evaluation = {
        **report.to_dict(),
        "train_seconds": result.seconds,
        "train_triplets_per_second": result.triplets_per_second,
        "steps": result.steps,
    }
    Path(config.run_dir, "evaluation.json").write_text(json.dumps(evaluation, indent=1) + "\n")
    print(f"held-out ranking score, model: {report.model.describe()}")
    print(f"held-out ranking score, bag of words: {report.bag_of_words.describe()}")
    print(f"held-out model - bag of words: {report.model_minus_bag_of_words.describe()}")
    if args.export_bundle:
        from eqsearch.export.bundle import write_bundle

        write_bundle(
            result.model,
            result.data.vocabulary,
            Path(args.export_bundle),
            training_config=config.to_dict(),
            data_summary=result.data.corpus_summary,
            evaluation=evaluation,
            parity_graphs=result.data.test.graphs[:512],
            overwrite=True,
        )
        print(f"bundle written to {args.export_bundle}")
    return 0


def _run_ablate(args: argparse.Namespace) -> int:
    need_torch()
    from eqsearch.training.ablation import VARIANT_NAMES, run_ablations

    config = _config_from(args)
    variants = tuple(args.variants) if args.variants else VARIANT_NAMES
    table = run_ablations(config, Path(args.out), variants)
    print(table)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the training commands to the `eqsearch` CLI."""
    train = subparsers.add_parser(
        "train",
        help="train the KDD'20 formula encoder (needs eqsearch[train])",
        description="Train the graph network on a papers JSONL, evaluate it on held-out papers against the "
        "bag-of-words baseline, and optionally export the model bundle.",
    )
    _add_config_flags(train)
    train.add_argument("--resume", action="store_true", help="continue from RUN_DIR/checkpoint-last.pt")
    train.add_argument("--export-bundle", metavar="DIR", help="after training, write the model bundle to DIR")
    train.set_defaults(handler=_run_train)

    ablate = subparsers.add_parser(
        "ablate",
        help="train the ablations of KDD'20 Table 1 and write the table",
        description="Train the full model and one model without each of histogram loss, masking and augmentation "
        "on the same split and budget; write a Table-1-shaped markdown table.",
    )
    _add_config_flags(ablate)
    ablate.add_argument("--out", default="runs/ablation.md", help="markdown table to write (rewritten per variant)")
    ablate.add_argument(
        "--variant",
        dest="variants",
        action="append",
        choices=("Full Model", "No Histogram Loss", "No Masking", "No Augmentation"),
        help="run only this variant (repeatable; default: all). Finished variants with the same config are reused",
    )
    ablate.set_defaults(handler=_run_ablate)
