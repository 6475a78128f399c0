"""Screens fine-tuning runs of the graph network (`export.gcn_run --eval-every N`) on the development half: every
saved step of every run, and **soups** (the mean of the weights of runs of other seeds at one step,
`training.gcn_distill.average_states`), alone and fused with the structural lists at several shares
(`benchmarks/structure_fusion.py`, the production fusion replayed offline), into one JSON. It runs where the runs
ran (the GPU machine of `benchmarks/gcn_gpu.sh`, or here).

    python benchmarks/gcn_screen.py --dev-mathml .encdata/dev-mathml.json.gz --qrels .encdata/qrels.txt \\
        --structure STRUCT.json --run DIR [--run DIR ...] [--soup NAME=DIR1,DIR2,...] --shares 0.1,0.15,0.2 \\
        --out screen.json [--save-soups DIR] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import torch
from eqsearch.engine.model.bundle import default_bundle_path
from eqsearch.evaluation.trec import evaluate_run, read_qrels
from eqsearch.export.structure_run import read_json
from eqsearch.training.gcn_distill import average_states, embed_all, featurize_all, model_from_bundle
from eqsearch.training.loop import resolve_device

sys.path.insert(0, str(Path(__file__).resolve().parent))
from structure_fusion import fused_run, knn_lists

_STEP = re.compile(r"dev-vectors-step(\d+)\.npz$")


def saved_steps(run: Path) -> dict[int, Path]:
    """A run's development vectors by step (``dev-vectors-stepN.npz``)."""
    return {int(m.group(1)): p for p in run.glob("dev-vectors-step*.npz") if (m := _STEP.search(p.name))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev-mathml", type=Path, required=True)
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--structure", type=Path, required=True, help="structure_fusion.py's cached lists")
    parser.add_argument("--run", type=Path, action="append", default=[], help="a gcn_run output folder")
    parser.add_argument("--soup", action="append", default=[], help="NAME=DIR1,DIR2,...: runs averaged per step")
    parser.add_argument("--shares", default="0.1,0.15,0.2")
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--bundle", type=Path, default=None, help="the network the runs started from")
    parser.add_argument("--save-soups", type=Path, help="keep each soup's weights and vectors here")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    dev = read_json(args.dev_mathml)
    structure = json.loads(args.structure.read_text(encoding="utf-8"))
    qrels = read_qrels(args.qrels)
    topics = [t for t, _, _ in dev["topics"]]
    shares = [float(s) for s in args.shares.split(",")]
    result: dict[str, dict[str, dict[str, dict[str, float]]]] = {}

    def screen(name: str, step: int, vectors: Path) -> None:
        knn = knn_lists(str(vectors), dev, args.depth)
        alone = evaluate_run({t: [d for d, _ in knn[t]] for t in topics}, qrels, topics=topics).means
        cell = {"alone": {k: round(v, 4) for k, v in alone.items()}}
        for share in shares:
            cell[str(share)] = fused_run(structure, knn, topics, qrels, share, args.depth)[1]
        result.setdefault(name, {})[str(step)] = cell
        line = "  ".join(
            f"{k} {v['ndcg_prime']:.4f}/{v['map_prime']:.4f}/{v['p_prime_10']:.4f}" for k, v in cell.items()
        )
        print(f"{name} step {step}: {line}", flush=True)
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")

    for run in args.run:
        for step, path in sorted(saved_steps(run).items()):
            screen(run.name, step, path)

    if args.soup:
        device = resolve_device(args.device)
        model, vocabulary = model_from_bundle(args.bundle or default_bundle_path())
        graphs = {p: featurize_all([m or "" for _, _, m in dev[p]], vocabulary)[0] for p in ("collection", "topics")}
        ids = {p: np.asarray([i for i, _, _ in dev[p]]) for p in ("collection", "topics")}
        keep = args.save_soups or args.out.parent / "soups"
        keep.mkdir(parents=True, exist_ok=True)
        for spec in args.soup:
            name, _, dirs = spec.partition("=")
            runs = [Path(d) for d in dirs.split(",") if d]
            if not name or len(runs) < 2:
                raise SystemExit(f"--soup {spec!r}: give NAME=DIR1,DIR2[,...]")
            steps = sorted(set.intersection(*(set(saved_steps(r)) for r in runs)))
            for step in steps:
                state = average_states([r / f"state-step{step}.pt" for r in runs])
                model.load_state_dict(state)
                model.to(device)
                path = keep / f"{name}-dev-vectors-step{step}.npz"
                np.savez(
                    path,
                    **{p: embed_all(model, graphs[p]) for p in ("collection", "topics")},
                    collection_ids=ids["collection"],
                    topic_ids=ids["topics"],
                )
                torch.save(state, keep / f"{name}-state-step{step}.pt")
                screen(f"soup-{name}", step, path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
