"""What rounding the stored and query vectors costs the 64-d student (issue 43): its development figures, offline,
with the vectors as float32, int8, int4 and bbq (one bit per dimension) indices compare them (benchmarks/encoder.md).

    python benchmarks/student64_quantized.py --vectors RUN/dev-vectors.npz --bundle engine/model/student64-bundle \
        --dev-mathml .encdata/dev-mathml.json.gz --qrels .encdata/qrels.txt --out quantized.json \
        [--weights structure=0.7,graph=0.3] [--state RUN/checkpoints/full-step-N.pt]

``RUN/dev-vectors.npz`` is `export.structure_run`'s (the development collection's and topics' stored vectors); the
query is the bundle's heads weighed as a ranker weighs them (`--weights`, the ``embedding`` ranker's by default;
``graph=1``: the default ranker's). With ``--state`` the vectors are encoded here by that model (a checkpoint) and
its own head is used. Every score is a cosine, as the index's: both sides normalised after rounding.

- ``int8``: `engine.index.vectors.byte_vector` (one scale per vector, what the engine stores and queries with).
- ``int4``: the same with 7 levels a side (`training.quantization.quantize_vectors`, ``bits=4``, one scale per vector).
- ``bbq``: RaBitQ's estimator (Gao and Long, SIGMOD 2024) as Elasticsearch's ``bbq_hnsw`` applies it, without its
  random rotation: the collection's unit vectors centred on their mean ``c``; each stored as the signs of ``x - c``
  (64 bits) and three floats, ``|x - c|``, ``<x, c>`` and ``<b, o>`` (``o = (x - c) / |x - c|``, ``b`` the signs over
  ``sqrt(D)``); the query's unit vector centred alike, ``p = (q - c) / |q - c|``, kept float (``bbq/float``) or
  rounded to 4 bits between its own smallest and largest coordinate (``bbq/int4``, as Elasticsearch rounds queries);
  the score ``|x - c| |q - c| <b, p> / <b, o> + <x, c> + <q, c> - |c|^2`` estimates ``<x, q>``.
- ``+ rescore R by V``: each topic's top ``R`` by the rounded score ranked again by the cosine of the ``V`` vectors
  (``float``, or ``int8`` both sides), the rest below them in their order (Elasticsearch's ``rescore_vector``).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np
from eqsearch.engine.index.vectors import byte_vector
from eqsearch.training.quantization import quantize_vectors
from eqsearch.training.structure_dev import ranking_figures


def unit(v: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(n > 0, n, 1.0)).astype(np.float32)


def int8_rows(v: np.ndarray) -> np.ndarray:
    """Each row as the engine stores and queries it (`byte_vector`), as floats."""
    return np.asarray([byte_vector(row) for row in v], dtype=np.float32)


def cosine(queries: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """``[topics, collection]`` cosines."""
    return unit(queries) @ unit(stored).T


def bbq_scores(queries: np.ndarray, stored: np.ndarray, query_bits: int = 0) -> np.ndarray:
    """RaBitQ's estimate of ``<x, q>`` over unit vectors from 1-bit stored codes (module docstring); ``query_bits``
    rounds the centred query to that many bits between its smallest and largest coordinate (0: float)."""
    x, q = unit(stored), unit(queries)
    c = x.mean(axis=0)
    rx, rq = x - c, q - c
    nx, nq = np.linalg.norm(rx, axis=1), np.linalg.norm(rq, axis=1)
    o, p = rx / nx[:, None], rq / nq[:, None]
    b = np.where(o >= 0, 1.0, -1.0) / np.sqrt(x.shape[1])
    b_o = np.sum(b * o, axis=1)  # <b, o>, stored per vector
    if query_bits:
        lo, hi = p.min(axis=1, keepdims=True), p.max(axis=1, keepdims=True)
        step = (hi - lo) / ((1 << query_bits) - 1)
        p = lo + np.rint((p - lo) / step) * step
    estimate = (p @ b.T) / b_o[None, :]  # <o, p>
    return nq[:, None] * nx[None, :] * estimate + (x @ c)[None, :] + (q @ c)[:, None] - float(c @ c)


def rescored(first: np.ndarray, exact: np.ndarray, window: int) -> np.ndarray:
    """Scores whose order is ``first``'s with each row's top ``window`` ranked again by ``exact``, above the rest."""
    out = np.full_like(first, -np.inf)
    for k in range(len(first)):
        top = np.argsort(-first[k], kind="stable")[:window]
        rest = np.argsort(-first[k], kind="stable")[window:]
        out[k, top] = 2.0 + exact[k, top]  # cosines lie in [-1, 1]: the window stays above the rest
        out[k, rest] = -2.0 - np.arange(len(rest)) / len(rest)
    return out


def read_heads(bundle: Path) -> tuple[list[str], np.ndarray]:
    """A structure-bag bundle's query heads: their names and ``[parts, D, D]`` matrices."""
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["query_heads"]
    return list(entry["parts"]), np.load(bundle / entry["path"])


def encode_state(state: Path, dev_mathml: Path, qrels: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A checkpoint's development vectors and its heads (``structure`` the identity, ``graph`` its matrix)."""
    import tempfile

    from eqsearch.engine.model.structure_bag import StructureFeatures
    from eqsearch.export.structure_run import load_state, read_json
    from eqsearch.training.structure_dev import DevSet
    from eqsearch.training.structure_distill import encode_terms

    model = load_state(state)
    features = StructureFeatures(spans=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dev.json"
        path.write_text(json.dumps(read_json(dev_mathml)), encoding="utf-8")
        dev = DevSet.load(path, qrels, features)
    matrix = model.query_head.matrix.detach().float().numpy()
    heads = np.stack([np.eye(len(matrix), dtype=np.float32), matrix])
    return encode_terms(model, dev.collection, features), encode_terms(model, dev.topics, features), heads


def main() -> int:
    from eqsearch.evaluation.trec import read_qrels

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=Path, help="export.structure_run's dev-vectors.npz")
    parser.add_argument("--bundle", type=Path, default=Path("engine/model/student64-bundle"))
    parser.add_argument("--state", type=Path, help="a run's state.pt or checkpoint, encoded here instead")
    parser.add_argument("--dev-mathml", type=Path, required=True)
    parser.add_argument("--qrels", type=Path, required=True)
    parser.add_argument("--weights", default="structure=0.7,graph=0.3")
    parser.add_argument("--windows", default="300,3000", help="rescoring windows (3 x 100, 3 x 1000 hits)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    with gzip.open(args.dev_mathml, "rt", encoding="utf-8") as f:
        mathml = json.load(f)
    collection_ids = [row[0] for row in mathml["collection"]]
    topic_ids = [row[0] for row in mathml["topics"]]
    has_mathml = np.asarray([bool(row[2]) for row in mathml["collection"]])  # no MathML, no vector (the engine's)
    names, heads = read_heads(args.bundle)
    if args.state:
        stored, topics, heads = encode_state(args.state, args.dev_mathml, args.qrels)
    else:
        saved = np.load(args.vectors)
        stored, topics = saved["collection"], saved["topics"]
        if list(saved["collection_ids"]) != collection_ids or list(saved["topic_ids"]) != topic_ids:
            raise SystemExit(f"{args.vectors}: not the development half of {args.dev_mathml}")
    weights = {k: float(v) for k, _, v in (item.partition("=") for item in args.weights.split(","))}
    queries = sum(weights.get(n, 0.0) * topics @ heads[i].T for i, n in enumerate(names))
    qrels = {t: dict(d) for t, d in read_qrels(args.qrels).items()}

    def figures(scores: np.ndarray) -> dict[str, float]:
        scores = np.where(has_mathml[None, :], scores, -np.inf)
        return ranking_figures(scores, collection_ids, topic_ids, qrels)

    int8_stored, int8_queries = int8_rows(stored), int8_rows(queries)
    exact = {"float": cosine(queries, stored), "int8": cosine(int8_queries, int8_stored)}
    int4_stored = quantize_vectors(stored, 4, "vector")
    first = {
        "int4 stored, float query": cosine(queries, int4_stored),
        "int4 both": cosine(quantize_vectors(queries, 4, "vector"), int4_stored),
        "bbq, float query": bbq_scores(queries, stored),
        "bbq, int4 query": bbq_scores(queries, stored, query_bits=4),
    }
    rows: dict[str, dict[str, float]] = {
        "float32": figures(exact["float"]),
        "int8 stored, float query": figures(cosine(queries, int8_stored)),
        "int8 both (the engine)": figures(exact["int8"]),
    }
    for name, scores in first.items():
        rows[name] = figures(scores)
        for window in (int(w) for w in args.windows.split(",")):
            for by in ("float", "int8"):
                rows[f"{name} + rescore {window} by {by}"] = figures(rescored(scores, exact[by], window))
    report = {"weights": weights, "vectors": str(args.state or args.vectors), "rows": rows}
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
