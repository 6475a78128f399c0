"""One prepared run of the structure-bag encoder: prepare the terms, train by distillation, evaluate, export (here in
`export/`, which may import `training/`, since it composes both).

The same script runs on 2 CPU cores and on a lent GPU (benchmarks/encoder.md records both):

    python -m eqsearch.export.structure_run --formulas FORMULAS.jsonl.gz --dev-mathml DEV.json.gz \\
        --qrels QRELS --out DIR [--steps N] [--max-seconds S] [--workers W] [--device auto]

``FORMULAS`` is `training.structure_data.write_formula_file`'s output (the corpus's distinct formulas with their
document split); ``DEV`` the development half's collection and topics with their MathML (`DevSet.load`). It writes
into DIR: ``bundle/`` (a checked ``structure-bag`` bundle), ``state.pt`` (the weights, the term table in float16),
``result.json`` (config, data counts, timings, loss curve, the offline development figures during training, the
teacher's own figures, and the held-out agreement with the teacher).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.model.structure_bag import StructureFeatures
from eqsearch.training.structure_data import TermData, read_formula_file, term_data
from eqsearch.training.structure_distill import (
    DevSet,
    DistillConfig,
    TrainingData,
    encode_terms,
    model_dev_ranking,
    prepare,
    teacher_dev_ranking,
    train,
)
from eqsearch.training.structure_model import StructureBagConfig, StructureBagModel
from eqsearch.training.structure_teacher import Bm25Teacher


def held_out_agreement(
    model: StructureBagModel, data: TermData, features: StructureFeatures, queries: int = 500, k: int = 10
) -> dict[str, float]:
    """How well the student reproduces the teacher on held-out documents' formulas: for ``queries`` of them, the
    share of the teacher's top ``k`` (BM25 over the held-out formulas, the query itself left out) that the student's
    cosine top ``k`` holds (recall@k), against a random ranking's ``k / n``."""
    teacher = Bm25Teacher.build(data)
    n = len(data)
    if n < 2 * k:
        return {}
    recall = top_k_agreement(encode_terms(model, data, features), teacher, queries, k)
    return {"recall_at_10": recall, "random": round(k / n, 5), "formulas": n}


def top_k_agreement(vectors: np.ndarray, teacher: Bm25Teacher, queries: int = 500, k: int = 10) -> float:
    """For ``queries`` formulas picked with seed 0, the share of the teacher's top ``k`` (the query itself left out)
    that the vectors' cosine top ``k`` holds, averaged (the rows of ``vectors`` are unit length)."""
    n = len(vectors)
    picks = np.random.default_rng(0).choice(n, size=min(queries, n), replace=False)
    scores = teacher.scores(picks, np.arange(n))
    cos = vectors[picks] @ vectors.T
    hits = []
    for row, q in enumerate(picks):
        scores[row, q] = cos[row, q] = -np.inf
        top_t = set(np.argsort(-scores[row], kind="stable")[:k].tolist())
        top_s = set(np.argsort(-cos[row], kind="stable")[:k].tolist())
        hits.append(len(top_t & top_s) / k)
    return round(float(np.mean(hits)), 4)


def save_state(model: StructureBagModel, path: Path) -> None:
    """The weights, the term table in float16 (the bundle's precision), the rest in float32."""
    state = {k: (v.half() if k == "table.weight" else v) for k, v in model.state_dict().items()}
    torch.save({"config": model.config.to_dict(), "state": state}, path)


def load_state(path: Path) -> StructureBagModel:
    """A model saved by `save_state`."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    model = StructureBagModel(StructureBagConfig(**saved["config"]))
    model.load_state_dict({k: v.float() for k, v in saved["state"].items()})
    return model.eval()


def _variant(config: DistillConfig, name: str) -> DistillConfig:
    """A named variant of the run's config (`main`'s ``--variants``)."""
    if name == "full":
        return config
    if name == "bm25-teacher":
        return replace(config, span_weight=0.0)
    if name == "no-views":
        return replace(config, views=False)
    if name == "random-batches":
        return replace(config, seeds=config.seeds * config.per_seed, per_seed=1)
    raise SystemExit(f"unknown variant {name!r}")


def read_json(path: Path) -> Any:
    """A JSON file, gzip-compressed when its name ends in ``.gz``."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formulas", type=Path, required=True)
    parser.add_argument("--dev-mathml", type=Path, required=True)
    parser.add_argument("--qrels", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--max-seconds", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=0, help="batch-composing processes")
    parser.add_argument("--prep-workers", type=int, default=1, help="processes computing the terms")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--eval-every", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--limit", type=int, default=0, help="use the first N training formulas only")
    parser.add_argument("--no-views", action="store_true")
    parser.add_argument("--no-spans", action="store_true")
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--per-seed", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--tau-teacher", type=float, default=0.05)
    parser.add_argument("--tau-student", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--span-weight", type=float, default=0.5, help="the teacher's sub-expression match weight")
    parser.add_argument("--context-weight", type=float, default=0.0, help="the teacher's same-document weight")
    parser.add_argument("--bm25-weight", type=float, default=1.0, help="the teacher's structural BM25 weight")
    parser.add_argument(
        "--teacher-vectors",
        type=Path,
        help="another encoder's vectors of every formula of --formulas, in its order (structure_prepare "
        "--teacher-bundle: teacher-vectors.npz); their cosine joins the teacher with --vector-weight",
    )
    parser.add_argument("--vector-weight", type=float, default=0.0, help="the teacher vectors' cosine weight")
    parser.add_argument(
        "--align-weight", type=float, default=0.0, help="weight of 1 - cos(student, teacher vector) in the loss"
    )
    parser.add_argument(
        "--same-document", type=int, default=0, help="neighbours per group from the seed's own document"
    )
    parser.add_argument("--no-bundle", action="store_true")
    parser.add_argument(
        "--markup",
        action="store_true",
        help="the model also reads the MathML tree's terms (an experiment: no bundle, the runtime cannot serve it; "
        "the development vectors are in dev-vectors.npz)",
    )
    parser.add_argument(
        "--variants",
        default="full",
        help="comma-separated variants trained one after the other on the same data, each for --steps/--max-seconds: "
        "full, bm25-teacher (no sub-expression match in the teacher), no-views (no augmented views), random-batches "
        "(no mined groups); the first is exported "
        "(or the best on the development figures with --export-best)",
    )
    parser.add_argument("--export-best", action="store_true")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    features = StructureFeatures(spans=not args.no_spans)
    config = DistillConfig(
        steps=args.steps,
        max_seconds=args.max_seconds,
        seeds=args.seeds,
        per_seed=args.per_seed,
        views=not args.no_views,
        span_weight=args.span_weight,
        context_weight=args.context_weight,
        vector_weight=args.vector_weight,
        bm25_weight=args.bm25_weight,
        same_document=args.same_document,
        markup=args.markup,
        align_weight=args.align_weight,
        learning_rate=args.lr,
        tau_teacher=args.tau_teacher,
        tau_student=args.tau_student,
        workers=args.workers,
        threads=args.threads,
        device=args.device,
        log_every=args.log_every,
        model=replace(StructureBagConfig(), hidden=args.hidden),
        features=features,
    )
    result: dict[str, Any] = {"config": config.to_dict(), "argv": sys.argv[1:] if argv is None else argv}
    clock = time.perf_counter()
    records = read_formula_file(args.formulas)
    training = [r.mathml for r in records if not r.held_out]
    training_docs = [r.doc for r in records if not r.held_out]
    held = [r.mathml for r in records if r.held_out]
    vectors = None
    if args.teacher_vectors:
        with np.load(args.teacher_vectors) as saved:
            every = saved["vectors"].astype(np.float32)
        if len(every) != len(records):
            raise SystemExit(f"{args.teacher_vectors}: {len(every)} vectors for {len(records)} formulas")
        vectors = every[[not r.held_out for r in records]]
    elif args.vector_weight or args.align_weight:
        raise SystemExit("--vector-weight and --align-weight need --teacher-vectors")
    if args.limit:
        training, training_docs = training[: args.limit], training_docs[: args.limit]
        vectors = None if vectors is None else vectors[: args.limit]
    result["data"] = {
        "formulas": len(records),
        "training_formulas": len(training),
        "held_out_formulas": len(held),
        "training_documents": len({r.doc for r in records if not r.held_out}),
        "held_out_documents": len({r.doc for r in records if r.held_out}),
    }
    log(f"data {result['data']}")
    data: TrainingData = prepare(
        training,
        features,
        workers=args.prep_workers,
        documents=training_docs,
        vectors=vectors,
        views=not args.no_views,  # with --no-views no variant trains with views: their terms are not computed
        markup=args.markup,
    )
    held_terms = term_data(held[:5000], features, workers=args.prep_workers, markup=args.markup)
    result["prepare_seconds"] = round(time.perf_counter() - clock, 1)
    log(f"prepared in {result['prepare_seconds']} s")

    with tempfile.TemporaryDirectory() as tmp:
        dev_json = Path(tmp) / "dev.json"
        dev_json.write_text(json.dumps(read_json(args.dev_mathml)), encoding="utf-8")
        dev = DevSet.load(dev_json, args.qrels, features, workers=args.prep_workers, markup=args.markup)
    result["teacher_dev"] = teacher_dev_ranking(dev)
    result["teacher_dev_with_spans"] = teacher_dev_ranking(dev, config.span_weight)
    log(
        f"teacher (structural BM25, offline) dev {result['teacher_dev']}, with spans {result['teacher_dev_with_spans']}"
    )

    runs: dict[str, Any] = {}
    models: dict[str, StructureBagModel] = {}
    for name in args.variants.split(","):
        variant = _variant(config, name)
        log(f"variant {name}")
        model, history = train(
            variant, data, log=log, evaluate=lambda m: model_dev_ranking(m, dev, features), eval_every=args.eval_every
        )
        runs[name] = {
            "config": variant.to_dict(),
            "history": history,
            "dev": model_dev_ranking(model, dev, features),
            "held_out_agreement": held_out_agreement(model, held_terms, features),
        }
        models[name] = model
        log(
            f"{name}: dev {runs[name]['dev']} held-out {runs[name]['held_out_agreement']} "
            f"{history['steps']} steps in {history['train_seconds']:.0f} s"
        )
        (args.out / "result.json").write_text(json.dumps({**result, "variants": runs}, indent=1), encoding="utf-8")
    result["variants"] = runs
    names = list(runs)
    chosen = max(names, key=lambda n: runs[n]["dev"]["ndcg_prime"]) if args.export_best else names[0]
    result["exported"] = chosen
    if torch.cuda.is_available():
        result["gpu"] = torch.cuda.get_device_name(0)
    model = models[chosen]
    save_state(model, args.out / "state.pt")
    np.savez(
        args.out / "dev-vectors.npz",
        collection=encode_terms(model, dev.collection, features),
        topics=encode_terms(model, dev.topics, features),
        collection_ids=np.asarray(dev.collection_ids),
        topic_ids=np.asarray(dev.topic_ids),
    )
    if not args.no_bundle and not args.markup:
        from eqsearch.export.structure_bag import write_structure_bag_bundle

        history = runs[chosen]["history"]
        parity = [r.mathml for r in records if r.held_out][:256]
        write_structure_bag_bundle(
            model,
            args.out / "bundle",
            features=features,
            training={
                "variant": chosen,
                "config": runs[chosen]["config"],
                "steps": history["steps"],
                "train_seconds": round(history["train_seconds"], 1),
                "device": result.get("gpu", history["device"]),
            },
            data_summary=result["data"],
            evaluation={"dev_offline": runs[chosen]["dev"], "held_out_agreement": runs[chosen]["held_out_agreement"]},
            parity_mathml=parity,
            overwrite=True,
        )
    (args.out / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
