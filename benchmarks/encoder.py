"""Encoder throughput (equations/s) with onnxruntime on this CPU, beside a FLOP-bound ceiling.

Usage (from the repository root):
    python benchmarks/encoder.py --corpus PAPERS.jsonl [--bundle DIR] [--equations 512] [--repeats 5]
        [--peak-gflops 156.8]

Two figures per batch size: the ONNX model alone on featurized graphs, and end to end (MathML -> featurize ->
ONNX). Each is the median over ``--repeats`` passes over the same equations. The ceiling divides the CPU's peak
FP32 rate by the model's FLOPs per equation (see ``flops_per_node``); the peak is an estimate you pass in (the
default is 2 cores x 2.45 GHz x 32 FP32 FLOP/cycle for an AVX2 + 2 FMA unit core such as AMD Zen 3).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from eqsearch.engine.model.bundle import default_bundle_path
from eqsearch.engine.model.encoder import GraphEncoder, load_encoder
from eqsearch.engine.model.featurize import featurize_mathml


def flops_per_node(hidden: int, n_convs: int) -> float:
    """Multiply-adds x 2 per node: each graph convolution is a [hidden x hidden] matmul (2·h² FLOPs); the first
    layer's lookups, position sines, neighbourhood sums (~2 extra rows per node in a tree, both directions),
    batch norms and ReLUs add O(h) each, counted as 16·h per layer."""
    return n_convs * 2.0 * hidden * hidden + (n_convs + 1) * 16.0 * hidden


def flops_per_equation(hidden: int, n_convs: int, embedding: int, mean_nodes: float) -> float:
    """Per equation: the node work times the mean node count, plus pooling and the projection to ``embedding``."""
    return mean_nodes * flops_per_node(hidden, n_convs) + 2.0 * hidden * embedding + mean_nodes * hidden


def _timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="papers JSONL with MathML")
    parser.add_argument("--bundle", default=str(default_bundle_path()))
    parser.add_argument("--equations", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-sizes", default="1,32,256")
    parser.add_argument("--peak-gflops", type=float, default=2 * 2.45 * 32)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()

    mathml = []
    with open(args.corpus, encoding="utf-8") as handle:
        for line in handle:
            for section in json.loads(line).get("sections") or []:
                for eq in section.get("equations") or []:
                    if eq.get("mathml") and eq.get("display") is not False:
                        mathml.append(eq["mathml"])
    mathml = mathml[: args.equations]
    probe = load_encoder(args.bundle)
    assert isinstance(probe, GraphEncoder)
    graphs = [featurize_mathml(m, probe.vocabulary) for m in mathml]
    mean_nodes = float(np.mean([g.num_nodes for g in graphs]))
    config = probe.manifest.raw["model_config"]
    flops = flops_per_equation(config["hidden_dim"], config["n_convs"], config["embedding_dim"], mean_nodes)
    ceiling = args.peak_gflops * 1e9 / flops
    featurize_s = _timed(lambda: [featurize_mathml(m, probe.vocabulary) for m in mathml], args.repeats)
    rows = []
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        encoder = load_encoder(args.bundle, batch_size=batch_size, prefer_gpu=False)
        encoder.encode_graphs(graphs[: batch_size * 2])  # warm-up
        onnx_s = _timed(lambda enc=encoder: enc.encode_graphs(graphs), args.repeats)
        e2e_s = _timed(lambda enc=encoder: enc.encode(mathml), args.repeats)
        rows.append(
            {
                "batch_size": batch_size,
                "onnx_eq_per_s": len(graphs) / onnx_s,
                "end_to_end_eq_per_s": len(mathml) / e2e_s,
                "achieved_gflops": len(graphs) * flops / onnx_s / 1e9,
            }
        )
    result = {
        "equations": len(mathml),
        "mean_nodes": mean_nodes,
        "mflops_per_equation": flops / 1e6,
        "peak_gflops": args.peak_gflops,
        "ceiling_eq_per_s": ceiling,
        "featurize_eq_per_s": len(mathml) / featurize_s,
        "threads": 1,  # the encoder runs one intra-op thread (scatter-add races; see engine/model/encoder.py)
        "repeats": args.repeats,
        "rows": rows,
    }
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
