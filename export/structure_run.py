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

The 64-d student of the composite (issue 43) is this run with the composite's vectors as a teacher beside the
structural BM25, weighed as the ``embedding`` ranker weighs them, and trained for a quantized index:

    python -m eqsearch.export.structure_run ... --teacher-vectors .encdata/teacher-vectors.npz \
        --teacher-weights graph=0.3,structure=0.7 --vector-weight 1 --quantize-bits 8 --no-views --span-weight 0

With ``--head-part graph --head-weight W`` the student also learns a query head (`training.structure_distill`): a
query-side matrix whose similarity over the same stored vectors is fitted to that part's cosine alone (the default
ranker's), while the first loss fits the ``embedding`` ranker's mix of the two (``--alone-head-share``, its weight
of the head's part). The figures then say ``dev`` (the stored cosine), ``dev_alone`` (the mix) and ``dev_head``.

Every run also scores the exported variant's development vectors rounded as int8 and int4 indices store them, by
cosine (``quantized_dev``: one scale per vector and per dimension, `training.quantization.rounded_cosines`; and
``int8-both``, the queries rounded too, as the engine's int8 index rounds them).
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
from eqsearch.training.structure_dev import DevSet, dev_ranking, head_queries, model_dev_ranking, teacher_dev_ranking
from eqsearch.training.structure_distill import (
    DistillConfig,
    TrainingData,
    encode_terms,
    prepare,
    train,
    weigh_vector_parts,
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


def read_teacher_vectors(path: Path, weights: str | None) -> np.ndarray:
    """``teacher-vectors.npz`` (`training.structure_prepare`), float32; with ``weights`` (``name=w,...``) a
    composite's parts weighed so that the vectors' inner product is ``sum_i w_i cos_i`` (`weigh_vector_parts`).

    Raises:
        SystemExit: weights for vectors without parts, or a name that is no part.
    """
    with np.load(path) as saved:
        vectors = saved["vectors"].astype(np.float32)
        names = [str(n) for n in saved["part_names"]] if "part_names" in saved else []
        dims = [int(d) for d in saved["part_dims"]] if "part_dims" in saved else []
    if not weights:
        return vectors
    if not names:
        raise SystemExit(f"{path}: --teacher-weights needs a composite's vectors (no parts recorded)")
    asked = {}
    for item in weights.split(","):
        name, _, value = item.partition("=")
        if name.strip() not in names:
            raise SystemExit(f"--teacher-weights: {name.strip()!r} is no part of the teacher ({', '.join(names)})")
        asked[name.strip()] = float(value)
    return weigh_vector_parts(vectors, dims, [asked.get(n, 0.0) for n in names])


def teacher_part(path: Path, name: str) -> np.ndarray:
    """One part of a composite's vectors in ``teacher-vectors.npz`` (`training.structure_prepare`), float32.

    Raises:
        SystemExit: the vectors have no such part.
    """
    with np.load(path) as saved:
        names = [str(n) for n in saved["part_names"]] if "part_names" in saved else []
        if name not in names:
            raise SystemExit(f"{path}: no part {name!r} (parts: {', '.join(names) or 'none recorded'})")
        dims = [int(d) for d in saved["part_dims"]]
        start = sum(dims[: names.index(name)])
        return saved["vectors"][:, start : start + dims[names.index(name)]].astype(np.float32)


def quantized_figures(collection: np.ndarray, topics: np.ndarray, dev: DevSet) -> dict[str, dict[str, float]]:
    """The development figures with the collection's vectors rounded as a quantized index stores them, scored by
    cosine: int8 and int4, one scale per vector and per dimension, the queries float; and ``int8-both``, the queries
    rounded too (the engine's int8 index, `engine.index.vectors`)."""
    figures = {
        f"int{bits}-{scale}": dev_ranking(collection, topics, dev, quantize_bits=bits, scale=scale)
        for bits in (8, 4)
        for scale in ("vector", "dimension")
    }
    return {**figures, "int8-both": dev_ranking(collection, topics, dev, quantize_bits=8, round_queries=True)}


def head_figures(
    model: StructureBagModel, dev: DevSet, features: StructureFeatures, share: float
) -> dict[str, dict[str, float]]:
    """The development figures of the stored cosine (``dev``), and with a query head the ranker's mix (``dev_alone``)
    and the head alone (``dev_head``)."""
    out = {"dev": model_dev_ranking(model, dev, features)}
    if model.query_head is not None:
        out["dev_alone"] = model_dev_ranking(model, dev, features, share)
        out["dev_head"] = model_dev_ranking(model, dev, features, 1.0)
    return out


def evaluator(dev: DevSet, features: StructureFeatures, args: argparse.Namespace, name: str) -> Any:
    """`train`'s ``evaluate``: `head_figures`, and with ``--save-evals`` the model saved beside them
    (``checkpoints/NAME-step-N.pt``, `save_state`; the n-th call is step n x ``--eval-every``)."""
    calls = [0]

    def evaluate(model: StructureBagModel) -> dict[str, dict[str, float]]:
        calls[0] += 1
        if args.save_evals:
            folder = args.out / "checkpoints"
            folder.mkdir(exist_ok=True)
            save_state(model, folder / f"{name}-step-{calls[0] * args.eval_every}.pt")
        return head_figures(model, dev, features, args.alone_head_share)

    return evaluate


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
        "--teacher-weights",
        help="a composite teacher's parts weighed as a ranker weighs them, e.g. graph=0.3,structure=0.7 (the "
        "embedding ranker's): the teacher cosine is sum_i w_i cos_i",
    )
    parser.add_argument("--head-part", help="the composite teacher's part a query head learns (e.g. graph)")
    parser.add_argument("--head-weight", type=float, default=0.0, help="weight of the query head's loss")
    parser.add_argument(
        "--alone-head-share", type=float, default=0.3, help="the head's share of the embedding ranker's query"
    )
    parser.add_argument(
        "--quantize-bits", type=int, default=0, help="train for an index that rounds the vectors to this many bits"
    )
    parser.add_argument(
        "--align-weight", type=float, default=0.0, help="weight of 1 - cos(student, teacher vector) in the loss"
    )
    parser.add_argument(
        "--same-document", type=int, default=0, help="neighbours per group from the seed's own document"
    )
    parser.add_argument("--init-state", type=Path, help="continue the model of a run's state.pt (same shape)")
    parser.add_argument("--seed", type=int, default=0, help="initialisation and batches (a continued run: another)")
    parser.add_argument(
        "--save-evals", action="store_true", help="also save the model at every --eval-every (checkpoints/step-N.pt)"
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
        quantize_bits=args.quantize_bits,
        head_weight=args.head_weight,
        alone_head_share=args.alone_head_share,
        learning_rate=args.lr,
        tau_teacher=args.tau_teacher,
        tau_student=args.tau_student,
        workers=args.workers,
        threads=args.threads,
        device=args.device,
        log_every=args.log_every,
        seed=args.seed,
        model=replace(StructureBagConfig(), hidden=args.hidden, query_head=bool(args.head_weight)),
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
        every = read_teacher_vectors(args.teacher_vectors, args.teacher_weights)
        if len(every) != len(records):
            raise SystemExit(f"{args.teacher_vectors}: {len(every)} vectors for {len(records)} formulas")
        vectors = every[[not r.held_out for r in records]]
    elif args.vector_weight or args.align_weight or args.teacher_weights or args.head_weight:
        raise SystemExit("--vector-weight, --align-weight, --teacher-weights and --head-weight need --teacher-vectors")
    head_vectors = None
    if args.head_weight:
        if not args.head_part:
            raise SystemExit("--head-weight needs --head-part")
        head_vectors = teacher_part(args.teacher_vectors, args.head_part)[[not r.held_out for r in records]]
    if args.limit:
        training, training_docs = training[: args.limit], training_docs[: args.limit]
        vectors = None if vectors is None else vectors[: args.limit]
        head_vectors = None if head_vectors is None else head_vectors[: args.limit]
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
        head_vectors=head_vectors,
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
            variant,
            data,
            log=log,
            evaluate=evaluator(dev, features, args, name),
            eval_every=args.eval_every,
            init=load_state(args.init_state) if args.init_state else None,
        )
        runs[name] = {
            "config": variant.to_dict(),
            "history": history,
            **head_figures(model, dev, features, args.alone_head_share),
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
    dev_collection = encode_terms(model, dev.collection, features)
    dev_topics = encode_terms(model, dev.topics, features)
    alone_topics = head_queries(model, dev_topics, args.alone_head_share)
    result["quantized_dev"] = quantized_figures(dev_collection, alone_topics, dev)
    log(f"{chosen} quantized: {result['quantized_dev']}")
    np.savez(
        args.out / "dev-vectors.npz",
        collection=dev_collection,
        topics=dev_topics,
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
            evaluation={
                "dev_offline": runs[chosen]["dev"],
                "dev_offline_quantized": result["quantized_dev"],
                "held_out_agreement": runs[chosen]["held_out_agreement"],
            },
            parity_mathml=parity,
            overwrite=True,
        )
    (args.out / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
