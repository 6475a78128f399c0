"""Where the benchmarks that score rankings find the ARQMath-1 development half: ``--dev DIR`` on their command line,
or the ``EQSEARCH_ARQMATH_DEV`` variable. Nothing guesses a path outside the checkout, since a clone has none; the
tests use the excerpt in ``tests/data/arqmath1-excerpt`` instead."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ENV = "EQSEARCH_ARQMATH_DEV"
FILES = ("collection.tsv", "topics.tsv", "qrels.txt")
WHERE = (
    "the ARQMath-1 Task 2 development half: a folder with collection.tsv (visual_id, latex), topics.tsv (topic, "
    "latex) and qrels.txt (TREC qrels of visual ids). eqsearch's developers have it in the project's shared reference "
    "folder (benchmarks/arqmath1-dev); the topics and judgements are the ARQMath organisers' (approach0/pya0, "
    "topics-and-qrels/), the formulas those of the judged pools (docs/developing.md, 'Judging a ranking change')"
)


def add_dev_argument(parser: argparse.ArgumentParser) -> None:
    """Adds ``--dev DIR`` (default: ``$EQSEARCH_ARQMATH_DEV``) to ``parser``; read it with `dev_dir`."""
    parser.add_argument("--dev", type=Path, default=os.environ.get(ENV) or None, help=f"{WHERE} (default: ${ENV})")


def dev_dir(value: Path | str | None) -> Path:
    """The development half's folder, checked; exits with where to get it when it is not given or incomplete."""
    if not value:
        raise SystemExit(f"this benchmark needs --dev DIR or {ENV}: {WHERE}")
    folder = Path(value)
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"{folder} lacks {', '.join(missing)}: --dev names {WHERE}")
    return folder


def add_dev_files(parser: argparse.ArgumentParser) -> None:
    """``--dev DIR`` plus ``--topics`` and ``--qrels`` overriding its files; `fill_dev_files` resolves them."""
    add_dev_argument(parser)
    parser.add_argument("--topics", type=Path, help="topic TAB latex (default: DIR/topics.tsv of --dev)")
    parser.add_argument("--qrels", type=Path, help="TREC qrels of visual ids (default: DIR/qrels.txt of --dev)")


def fill_dev_files(args: argparse.Namespace) -> None:
    """Sets ``args.topics`` and ``args.qrels`` from ``args.dev`` where they were not given."""
    if not hasattr(args, "topics"):
        return  # a command without the development files
    if args.topics is None or args.qrels is None:
        folder = dev_dir(args.dev)
        args.topics = args.topics or folder / "topics.tsv"
        args.qrels = args.qrels or folder / "qrels.txt"
