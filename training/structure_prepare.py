"""The data a structure-bag run reads (`export.structure_run`), written once where KaTeX runs:

    python -m eqsearch.training.structure_prepare --papers CORPUS/real-latex/papers.jsonl \\
        --benchmark ARQMATH_DEV --out .encdata

writes ``formulas.jsonl.gz`` (the corpus's distinct display and inline formulas with their document split,
`training.structure_data.corpus_formulas`: ~1.5 MB for the seven sets), ``dev-mathml.json.gz`` (the benchmark's
collection and topics converted to MathML by the production KaTeX converter, for the offline development figures)
and ``qrels.txt`` (a copy); with ``--teacher-bundle`` (the shipped KDD'20 network, say) also
``teacher-vectors.npz``: that encoder's vectors of every formula of ``formulas.jsonl.gz`` in its order (float16; a
formula it cannot encode has a zero row), a soft teacher for ``export.structure_run --teacher-vectors``; a
``composite`` bundle's vectors are stored as it stores them, with its parts' names, widths and stored weights
(``part_names``, ``part_dims``, ``part_weights``), so that a run may weigh them as a ranker does
(``--teacher-weights``). A GPU
machine has no KaTeX: the folder travels with the run instead (``carry``). The
benchmark's formulas are only ever scored, never trained on.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import shutil
from pathlib import Path

import numpy as np


def convert_benchmark(benchmark: Path) -> dict[str, list[tuple[str, str, str | None]]]:
    """``{"collection": [(id, latex, mathml|None)], "topics": [...]}`` with the production converter."""
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.evaluation.formulas import read_formula_file

    out: dict[str, list[tuple[str, str, str | None]]] = {}
    with KatexConverter() as converter:
        for name, column in (("collection", "visual_id"), ("topics", "topic")):
            rows = read_formula_file(benchmark / f"{name}.tsv", column)
            converted: list[tuple[str, str, str | None]] = []
            for start in range(0, len(rows), 200):
                chunk = rows[start : start + 200]
                results = converter.convert_many([(latex, "equation") for _, latex in chunk])
                converted += [(i, latex, r.mathml) for (i, latex), r in zip(chunk, results, strict=True)]
            out[name] = converted
    return out


def teacher_vectors(bundle: str | Path | None, mathml: list[str], batch: int = 512) -> np.ndarray:
    """An encoder bundle's vectors (None: the installed default) of formulas, ``[N, dim]`` float32; a formula it
    cannot read (`MathMLError`) gets a zero row (a batch with one is encoded one formula at a time, so that only
    those are left out)."""
    from eqsearch.engine.model import MathMLError, load_encoder

    encoder = load_encoder(bundle)
    out = np.zeros((len(mathml), encoder.dim), dtype=np.float32)
    for start in range(0, len(mathml), batch):
        chunk = mathml[start : start + batch]
        try:
            out[start : start + len(chunk)] = encoder.encode(chunk)
        except MathMLError:
            for k, one in enumerate(chunk):
                with contextlib.suppress(MathMLError):  # no teacher vector: a zero row, counted by main
                    out[start + k] = encoder.encode([one])[0]
    return out


def teacher_parts(bundle: str | Path | None) -> dict[str, np.ndarray]:
    """A composite bundle's parts as ``teacher-vectors.npz`` records them (names, widths, stored weights); nothing for
    a bundle of another kind."""
    from eqsearch.engine.model.bundle import read_manifest, search_bundle_path
    from eqsearch.engine.model.composite import KIND, composite_parts

    manifest = read_manifest(Path(bundle) if bundle is not None else search_bundle_path())
    if manifest.encoder != KIND:
        return {}
    parts = composite_parts(manifest.raw["parts"], manifest.path)
    return {
        "part_names": np.asarray([p.name for p in parts]),
        "part_dims": np.asarray([p.dim for p in parts], dtype=np.int64),
        "part_weights": np.asarray([p.weight for p in parts], dtype=np.float64),
    }


def main(argv: list[str] | None = None) -> int:
    from eqsearch.training.structure_data import corpus_formulas, write_formula_file

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=Path, required=True, help="papers JSONL (ingest/FORMAT.md)")
    parser.add_argument("--benchmark", type=Path, required=True, help="folder with collection.tsv, topics.tsv, qrels")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--teacher-bundle", type=Path, help="also write teacher-vectors.npz with this encoder")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    records = corpus_formulas(args.papers, test_fraction=args.test_fraction, seed=args.seed)
    written = write_formula_file(records, args.out / "formulas.jsonl.gz")
    print(f"{written} distinct formulas, {sum(r.held_out for r in records)} of held-out documents")
    with gzip.open(args.out / "dev-mathml.json.gz", "wt", encoding="utf-8") as out:
        json.dump(convert_benchmark(args.benchmark), out)
    shutil.copyfile(args.benchmark / "qrels.txt", args.out / "qrels.txt")
    if args.teacher_bundle:
        vectors = teacher_vectors(args.teacher_bundle, [r.mathml for r in records])
        missing = int((~vectors.any(axis=1)).sum())
        parts = teacher_parts(args.teacher_bundle)
        np.savez_compressed(args.out / "teacher-vectors.npz", vectors=vectors.astype(np.float16), **parts)
        print(f"teacher vectors of {args.teacher_bundle}: {len(vectors) - missing} formulas, {missing} not encoded")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
