"""`eqsearch export`: a training checkpoint -> a model bundle. Imports torch only when the command runs."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

from eqsearch.engine.errors import MissingExtraError


def _run_export_node_states(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("onnx") is None:
        raise MissingExtraError("onnx", "train")
    from eqsearch.engine.model.bundle import default_bundle_path, read_manifest
    from eqsearch.export.node_states import random_graphs, write_node_sidecar

    bundle = Path(args.bundle) if args.bundle else default_bundle_path()
    written = write_node_sidecar(bundle, random_graphs(read_manifest(bundle).vocabulary_sizes))
    parity = json.loads(written.read_text())["parity"]
    print(
        f"node-states sidecar written to {written.parent} "
        f"(each mean node vector = the embedding within {parity['max_abs_diff']:.1e})"
    )
    return 0


def _run_export_node_projection(args: argparse.Namespace) -> int:
    from eqsearch.engine.model.bundle import default_bundle_path
    from eqsearch.export.node_projection import corpus_mathml, fit_node_projection, write_node_projection

    bundle = Path(args.bundle) if args.bundle else default_bundle_path()
    formulas = corpus_mathml(args.corpus, args.formulas, args.seed)
    matrix, kept = fit_node_projection(bundle, formulas, args.dims, output=args.output)
    provenance = {
        "fitted_on": {
            "papers": f"{Path(args.corpus).parent.name}/{Path(args.corpus).name}",
            "formulas": len(formulas),
            "seed": args.seed,
            **kept,
        }
    }
    written = write_node_projection(bundle, args.key, matrix, output=args.output, provenance=provenance)
    print(
        f"projection {args.key} ({args.output} -> {args.dims}-d) written beside {written} "
        f"({len(formulas):,} formulas, {kept['nodes']:,} nodes, {kept['energy_kept']:.1%} of their energy kept); "
        f"its node vectors: output '{args.output}@{args.key}'"
    )
    return 0


def _run_export_composite(args: argparse.Namespace) -> int:
    import os

    from eqsearch import __version__
    from eqsearch.engine.model.bundle import read_manifest, write_manifest
    from eqsearch.engine.model.composite import make_composite_manifest

    parts = []
    for spec in args.part:
        name, _, rest = spec.partition("=")
        path, _, weight = rest.rpartition(":")
        try:
            value = float(weight)
        except ValueError:
            value = None
        if not name or not path or value is None:
            args.parser.error(
                f"--part {spec!r}: give NAME=BUNDLE_DIR:WEIGHT, e.g. graph=engine/model/default-bundle:0.5"
            )
        parts.append((name, os.path.relpath(Path(path).resolve(), Path(args.out).resolve()), value))
    manifest = make_composite_manifest(args.out, parts, eqsearch_version=__version__)  # parts checked first
    Path(args.out).mkdir(parents=True, exist_ok=True)
    write_manifest(args.out, manifest)
    checked = read_manifest(args.out)
    print(f"composite bundle written to {args.out}: {checked.identity}, {checked.embedding_dim}-d, parts "
          + ", ".join(f"{p['name']} ({p['identity']}, weight {p['weight']})" for p in manifest["parts"]))  # fmt: skip
    return 0


def _run_export_bitmap_cnn(args: argparse.Namespace) -> int:
    if (args.checkpoint is None) == (args.corpus is None):
        args.parser.error("give --corpus (train, then export) or --checkpoint (export a trained run)")
    for package in ("torch", "onnx", "onnxscript"):
        if importlib.util.find_spec(package) is None:
            raise MissingExtraError(package, "train")
    import numpy as np
    from eqsearch.engine.model.bitmap_render import pinned_versions
    from eqsearch.export.bitmap import write_bitmap_bundle
    from eqsearch.training.bitmap import BitmapTrainConfig, load_bitmap_checkpoint, train_bitmap_cnn

    if args.checkpoint is not None:
        model, state = load_bitmap_checkpoint(args.checkpoint)
        run_dir = Path(args.checkpoint).parent
        training, data = state.get("training", {}), state.get("data", {})
        config = BitmapTrainConfig(**training.get("config", {}))
    else:
        config = BitmapTrainConfig(
            corpus=str(args.corpus),
            run_dir=str(args.run_dir),
            architecture=args.architecture,
            steps=args.steps,
            threads=args.threads,
        )
        result = train_bitmap_cnn(config)
        model, training, data, run_dir = result.model, result.training, result.data_summary, Path(args.run_dir)
    evaluation = {}
    if (run_dir / "evaluation.json").is_file():
        evaluation = json.loads((run_dir / "evaluation.json").read_text())
    parity = np.load(run_dir / "parity-bitmaps.npy") if (run_dir / "parity-bitmaps.npy").is_file() else None
    write_bitmap_bundle(
        model,
        Path(args.out),
        render_config=config.render_config(),
        renderer_versions=pinned_versions(),
        training=training,
        data_summary=data,
        evaluation=evaluation,
        parity_bitmaps=parity,
        overwrite=args.overwrite,
    )
    checked = f" (parity checked on {len(parity)} bitmaps)" if parity is not None else ""
    print(f"ecml19-cnn bundle written to {args.out}{checked}")
    return 0


def _run_export(args: argparse.Namespace) -> int:
    missing = [flag for flag in ("checkpoint", "out") if getattr(args, flag) is None]
    if missing:
        args.parser.error("need " + " and ".join(f"--{flag}" for flag in missing) + " (or a subcommand)")
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
    export.add_argument("--checkpoint", type=Path, help="RUN_DIR/checkpoint-last.pt (required)")
    export.add_argument("--out", help="bundle directory to write (required)")
    export.add_argument("--opset", type=int, default=18)
    export.add_argument(
        "--similarity",
        choices=("cosine", "max_inner_product"),
        default="cosine",
        help="how searches compare the vectors (default cosine: it ranks better, see benchmarks/encoder.md)",
    )
    export.add_argument("--overwrite", action="store_true", help="replace an existing bundle directory")
    export.set_defaults(handler=_run_export, parser=export)
    artifacts = export.add_subparsers(dest="artifact", title="other exports")
    node_states = artifacts.add_parser(
        "node-states",
        help="write a bundle's node-states sidecar (node vectors for the MaxSim rerank)",
        description="Cut the bundle's model.onnx at its node states (onnx only, no torch), add the per-node "
        "projection, check that each equation's mean node vector equals its embedding (1e-5), and write "
        "node-states.onnx and node-states.json beside it. The bundle's own files are not changed.",
    )
    node_states.add_argument("--bundle", help="bundle directory (default: the installed one)")
    node_states.set_defaults(handler=_run_export_node_states)
    projection = artifacts.add_parser(
        "node-projection",
        help="fit a fixed projection of a bundle's node states for the MaxSim rerank (fewer bytes and dimensions)",
        description="Run the bundle's node-states sidecar on formulas drawn from a TRAINING corpus (a papers JSONL, "
        "never an evaluation collection), fit the top singular vectors of their unit node states, and write "
        "node-projection-KEY.npy beside the sidecar with its entry in node-states.json; node output OUTPUT@KEY "
        "(the MaxSim rankers', 'ingest run --node-output') then uses it. numpy only.",
    )
    projection.add_argument("--corpus", type=Path, required=True, help="the training corpus's papers JSONL")
    projection.add_argument("--bundle", help="bundle directory (default: the installed one)")
    projection.add_argument("--key", default="p64", help="the projection's name (default p64)")
    projection.add_argument("--dims", type=int, default=64, help="its width (default 64)")
    projection.add_argument("--output", choices=("node_states",), default="node_states", help="what it projects")
    projection.add_argument("--formulas", type=int, default=3000, help="formulas fitted on (default 3000)")
    projection.add_argument("--seed", type=int, default=26, help="which formulas (default 26)")
    projection.set_defaults(handler=_run_export_node_projection)
    composite = artifacts.add_parser(
        "composite",
        help="write a composite bundle: other bundles' vectors side by side, each weighted",
        description="Write the manifest of a composite bundle (engine/model/composite.py): each part's unit vector "
        "times the square root of its weight, side by side, so that the stored vectors' cosine is the weighted sum of "
        "the parts' cosines and a ranker may weigh the parts otherwise at query time. Every part is read and "
        "checked; its identity and width are recorded, so a changed part is refused until this runs again. "
        "The shipped one: --out engine/model/search-bundle --part graph=engine/model/default-bundle:0.5 "
        "--part structure=engine/model/structure-bundle:0.5",
    )
    composite.add_argument("--out", required=True, help="the composite's directory (parts are recorded relative to it)")
    composite.add_argument(
        "--part",
        action="append",
        required=True,
        help="NAME=BUNDLE_DIR:WEIGHT, in the order of the vector's slices; the weights add up to 1",
    )
    composite.set_defaults(handler=_run_export_composite, parser=composite)
    bitmap = artifacts.add_parser(
        "bitmap-cnn",
        help="train (or take a trained run of) the ECML'19 bitmap CNN and write its ecml19-cnn bundle",
        description="Render every equation of a papers JSONL once with MathJax + resvg (cached in the run "
        "directory), train the bitmap CNN of Pfahler, Schill & Morik (ECML'19) on same-section/same-paper triplets, "
        "evaluate it on held-out papers, export it to ONNX and write an ecml19-cnn bundle (model.onnx + manifest "
        "with the render settings), checking torch/onnxruntime parity (1e-4). Or export --checkpoint of a run.",
    )
    bitmap.add_argument("--corpus", type=Path, help="papers JSONL to train on (ingest/FORMAT.md)")
    bitmap.add_argument("--checkpoint", type=Path, help="RUN_DIR/bitmap-checkpoint.pt of a finished run")
    bitmap.add_argument("--run-dir", type=Path, default=Path("runs/bitmap"), help="default runs/bitmap")
    bitmap.add_argument("--out", required=True, help="bundle directory to write (shipped: engine/model/bitmap-bundle)")
    bitmap.add_argument("--architecture", choices=("small", "large"), default="small", help="default small")
    bitmap.add_argument("--steps", type=int, default=360, help="optimizer steps of 100 triplets (default 360)")
    bitmap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    bitmap.add_argument("--overwrite", action="store_true", help="replace an existing bundle directory")
    bitmap.set_defaults(handler=_run_export_bitmap_cnn, parser=bitmap)
