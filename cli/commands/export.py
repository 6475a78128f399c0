"""`eqsearch export`: a training checkpoint -> a model bundle. Imports torch only when the command runs."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

from eqsearch.engine.errors import MissingExtraError


def _run_export(args: argparse.Namespace) -> int:
    for package in ("torch", "onnx", "onnxscript"):
        if importlib.util.find_spec(package) is None:
            raise MissingExtraError(package, "train")
    from eqsearch.engine.model.vocabulary import Vocabulary
    from eqsearch.export.bundle import write_bundle
    from eqsearch.training.dataset import load_corpus
    from eqsearch.training.loop import load_encoder

    model, state = load_encoder(args.checkpoint)
    vocabulary = Vocabulary.from_json(state["vocabulary"], source=str(args.checkpoint))
    run_dir = Path(args.checkpoint).parent
    parity = []
    if (run_dir / "corpus.npz").is_file():
        parity = load_corpus(run_dir / "corpus.npz").graphs[:512]
    evaluation = {}
    if (run_dir / "evaluation.json").is_file():
        evaluation = json.loads((run_dir / "evaluation.json").read_text())
    write_bundle(
        model,
        vocabulary,
        Path(args.out),
        training_config=state["config"],
        data_summary=state.get("data_summary"),
        evaluation=evaluation,
        parity_graphs=parity,
        opset=args.opset,
        similarity=args.similarity,
        overwrite=args.overwrite,
    )
    print(f"bundle written to {args.out}" + (f" (parity checked on {len(parity)} equations)" if parity else ""))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `eqsearch export` to the CLI."""
    export = subparsers.add_parser(
        "export",
        help="export a training checkpoint as a model bundle (ONNX + vocabulary + manifest)",
        description="Export the encoder of a checkpoint to ONNX with dynamic nodes/edges/equations, write the "
        "bundle with checksums, and check torch/onnxruntime parity (1e-4) on the run's equations.",
    )
    export.add_argument("--checkpoint", type=Path, required=True, help="RUN_DIR/checkpoint-last.pt")
    export.add_argument("--out", required=True, help="bundle directory to write")
    export.add_argument("--opset", type=int, default=18)
    export.add_argument(
        "--similarity",
        choices=("cosine", "max_inner_product"),
        default="cosine",
        help="how searches compare the vectors (default cosine: it ranks better, see benchmarks/encoder.md)",
    )
    export.add_argument("--overwrite", action="store_true", help="replace an existing bundle directory")
    export.set_defaults(handler=_run_export)
