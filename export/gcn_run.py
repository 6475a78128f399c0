"""One prepared run of the KDD'20 graph network fine-tuned on the structural signal (`training.gcn_distill`):
load the shipped network, featurize the corpus formulas, train, evaluate on the development half, export a
``kdd20-gcn`` bundle with its parity check (here in `export/`, which may import `training/`, since it composes both).

    python -m eqsearch.export.gcn_run --formulas FORMULAS.jsonl.gz --dev-mathml DEV.json.gz --qrels QRELS \\
        --out DIR [--bundle engine/model/default-bundle] [--max-seconds S] [--anchor-weight W] [--lr LR]

``FORMULAS`` and ``DEV`` as in `export.structure_run` (the held-out documents' formulas are never trained on; they
serve the parity check and the held-out agreement). Writes into DIR: ``bundle/`` (a checked ``kdd20-gcn`` bundle of
the same kind as the shipped one), ``dev-vectors.npz`` (the development collection's and topics' vectors, for
``benchmarks/structure_fusion.py``; with ``--eval-every N`` also ``dev-vectors-stepN.npz`` and the weights
``state-stepN.pt`` at every N steps, so that a step count chosen on the fusion is exported with ``--init-state
state-stepN.pt --steps 0``) and ``result.json`` (config, timings, losses, the development figures before and
after, the held-out agreement with the structural teacher and the mean cosine to the original vectors).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.model.bundle import default_bundle_path, read_manifest
from eqsearch.engine.model.structure_bag import StructureFeatures
from eqsearch.export.structure_run import read_json, top_k_agreement
from eqsearch.training.gcn_distill import (
    GcnTuneConfig,
    average_states,
    cosine_figures,
    dev_qrels,
    embed_all,
    featurize_all,
    model_from_bundle,
    tune,
)
from eqsearch.training.loop import resolve_device
from eqsearch.training.structure_data import TermData, read_formula_file, term_data
from eqsearch.training.structure_distill import prepare
from eqsearch.training.structure_teacher import Bm25Teacher


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def teacher_agreement(vectors: np.ndarray, teacher: Bm25Teacher, queries: int = 500, k: int = 10) -> float:
    """`export.structure_run.top_k_agreement` of vectors not yet unit length."""
    return top_k_agreement(_unit(vectors), teacher, queries, k)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formulas", type=Path, required=True)
    parser.add_argument("--dev-mathml", type=Path, required=True)
    parser.add_argument("--qrels", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--bundle", type=Path, default=None, help="the network to start from (default: shipped)")
    parser.add_argument("--steps", type=int, default=100000)
    parser.add_argument("--max-seconds", type=float, default=0.0)
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--per-seed", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--tau-teacher", type=float, default=0.05)
    parser.add_argument("--tau-student", type=float, default=0.05)
    parser.add_argument("--bm25-weight", type=float, default=1.0)
    parser.add_argument("--span-weight", type=float, default=0.0)
    parser.add_argument("--vector-weight", type=float, default=0.0, help="the network's own original cosine")
    parser.add_argument("--anchor-weight", type=float, default=1.0, help="weight of 1 - cos(new, original)")
    parser.add_argument("--context-weight", type=float, default=0.0, help='"same document" in the teacher')
    parser.add_argument("--same-document", type=int, default=0, help="neighbours per group from the seed's document")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto (the batches are composed on the CPU)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the batches (runs of other seeds make a soup)")
    parser.add_argument("--prep-workers", type=int, default=1)
    parser.add_argument("--eval-every", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--limit", type=int, default=0, help="use the first N training formulas only")
    parser.add_argument(
        "--init-state",
        type=Path,
        action="append",
        help="start from these weights (a run's state-stepN.pt) instead of the bundle's; given several times, from "
        "their mean (a soup of runs of other seeds); with --steps 0 the run only evaluates and exports them",
    )
    parser.add_argument("--no-bundle", action="store_true")
    parser.add_argument(
        "--terms-cache",
        type=Path,
        help="a folder keeping the training and held-out formulas' structural terms between runs (made when missing)",
    )
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, flush=True)

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    source = args.bundle or default_bundle_path()
    config = GcnTuneConfig(
        steps=args.steps,
        max_seconds=args.max_seconds,
        seeds=args.seeds,
        per_seed=args.per_seed,
        tau_teacher=args.tau_teacher,
        tau_student=args.tau_student,
        bm25_weight=args.bm25_weight,
        span_weight=args.span_weight,
        vector_weight=args.vector_weight,
        anchor_weight=args.anchor_weight,
        context_weight=args.context_weight,
        same_document=args.same_document,
        learning_rate=args.lr,
        warmup_steps=args.warmup,
        threads=args.threads,
        log_every=args.log_every,
        device=args.device,
        seed=args.seed,
    )
    result: dict[str, Any] = {
        "config": config.to_dict(),
        "start_bundle": str(source),
        "init_state": [str(p) for p in args.init_state or []],
        "argv": sys.argv[1:] if argv is None else argv,
    }
    clock = time.perf_counter()
    model, vocabulary = model_from_bundle(source)
    if args.init_state:
        model.load_state_dict(average_states(args.init_state))
    model.to(resolve_device(args.device))
    records = read_formula_file(args.formulas)
    held = [r.mathml for r in records if r.held_out]
    graphs, failed = featurize_all([r.mathml for r in records if not r.held_out], vocabulary)
    training = [(r, g) for r, g in zip((r for r in records if not r.held_out), graphs, strict=True) if g]
    if args.limit:
        training = training[: args.limit]
    log(f"{len(training)} training formulas ({failed} left out: the featurizer refused them), {len(held)} held out")
    original = embed_all(model, [g for _, g in training])
    features = StructureFeatures()
    cached = {"training": [r.mathml for r, _ in training], "held_out": held[:5000]}
    terms = {}
    for part, mathml in cached.items():
        key = hashlib.blake2b("\n".join(mathml).encode("utf-8"), digest_size=8).hexdigest()  # these formulas
        path = args.terms_cache / f"{part}-{len(mathml)}-{key}.npz" if args.terms_cache else None
        if path is not None and path.exists():
            terms[part] = TermData.load(path)
        else:
            terms[part] = term_data(mathml, features, workers=args.prep_workers)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                terms[part].save(path)
    data = prepare(
        cached["training"],
        features,
        vectors=original,
        views=False,
        terms=terms["training"],
        documents=[r.doc for r, _ in training],
    )
    held_graphs = [g for g in featurize_all(held[:5000], vocabulary)[0] if g is not None]
    held_teacher = Bm25Teacher.build(terms["held_out"])
    dev = read_json(args.dev_mathml)
    dev_graphs = {
        part: featurize_all([m or "" for _, _, m in dev[part]], vocabulary)[0] for part in ("collection", "topics")
    }
    ids = {part: [i for i, _, _ in dev[part]] for part in ("collection", "topics")}
    qrels = dev_qrels(args.qrels)

    def dev_vectors(m: torch.nn.Module) -> dict[str, np.ndarray]:
        return {part: embed_all(m, dev_graphs[part]) for part in ("collection", "topics")}

    def save_dev_vectors(v: dict[str, np.ndarray], path: Path) -> None:
        np.savez(
            path,
            collection=v["collection"],
            topics=v["topics"],
            collection_ids=np.asarray(ids["collection"]),
            topic_ids=np.asarray(ids["topics"]),
        )

    evaluations = 0

    def evaluate(m: torch.nn.Module, save: bool = True) -> dict[str, float]:
        """The development figures alone; during training the vectors and weights are kept too (dev-vectors-stepN.npz,
        state-stepN.pt), to screen the fusion at several step counts and export the one chosen (--init-state)."""
        nonlocal evaluations
        v = dev_vectors(m)
        if save:
            evaluations += 1
            step = evaluations * args.eval_every
            save_dev_vectors(v, args.out / f"dev-vectors-step{step}.npz")
            torch.save(m.state_dict(), args.out / f"state-step{step}.pt")
        return cosine_figures(v["collection"], v["topics"], ids["collection"], ids["topics"], qrels)

    before = dev_vectors(model)
    held_before = embed_all(model, held_graphs)
    result["data"] = {
        "formulas": len(records),
        "training_formulas": len(training),
        "featurizer_refused": failed,
        "held_out_formulas": len(held),
    }
    result["prepare_seconds"] = round(time.perf_counter() - clock, 1)
    result["dev_before"] = evaluate(model, save=False)
    result["held_out_agreement_before"] = teacher_agreement(held_before, held_teacher)
    log(f"prepared in {result['prepare_seconds']} s; before: dev {result['dev_before']}")

    history: dict[str, Any] = {"steps": 0, "train_seconds": 0.0}
    if args.steps:
        history = tune(
            config, model, [g for _, g in training], data, log=log, evaluate=evaluate, eval_every=args.eval_every
        )
    after = dev_vectors(model)
    held_after = embed_all(model, held_graphs)
    has = before["collection"].any(axis=1)
    result.update(
        history=history,
        dev=evaluate(model, save=False),
        held_out_agreement=teacher_agreement(held_after, held_teacher),
        cosine_to_original={
            "dev_collection": round(
                float((_unit(before["collection"][has]) * _unit(after["collection"][has])).sum(1).mean()), 4
            ),
            "held_out": round(float((_unit(held_before) * _unit(held_after)).sum(1).mean()), 4),
        },
    )
    log(
        f"after {history['steps']} steps in {history['train_seconds']} s: dev {result['dev']}, held-out agreement "
        f"{result['held_out_agreement_before']} -> {result['held_out_agreement']}, cos to original "
        f"{result['cosine_to_original']}"
    )
    save_dev_vectors(after, args.out / "dev-vectors.npz")
    if not args.no_bundle:
        from eqsearch.export.bundle import write_bundle

        write_bundle(
            model.cpu(),
            vocabulary,
            args.out / "bundle",
            training_config={
                "fine_tuned_from": read_manifest(source).identity,
                "init_state": [str(p) for p in args.init_state or []],
                "objective": "the teacher's similarities distilled (weights below) + anchor (training/gcn_distill.py)",
                **config.to_dict(),
                "steps": history["steps"],
                "train_seconds": history["train_seconds"],
                "device": f"{resolve_device(args.device)}, {args.threads} CPU thread(s)",
            },
            data_summary=result["data"],
            evaluation={"dev_offline": result["dev"], "held_out_agreement": result["held_out_agreement"]},
            parity_graphs=held_graphs[:256],
            overwrite=True,
        )
        log(f"bundle written to {args.out / 'bundle'}")
    (args.out / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
