"""Serving a structure-bag bundle on onnxruntime's CPU and CUDA providers: parity and throughput (benchmarks/gpu.md).

    python benchmarks/student64_serve.py --bundle DIR --dev-mathml .encdata/dev-mathml.json.gz --out serve.json \
        [--state state.pt] [--formulas 4096] [--repeats 3]

The development half's formulas (their MathML, converted here beforehand) are featurized once; then each provider
(``cpu``; ``cuda`` where this onnxruntime has it, else the reason it has not) encodes them at batch 1 (the query
path: one formula per call, the first ``--single`` formulas) and at batch 256 (an ingest's batches), medians of
``--repeats`` passes. The ``cuda`` vectors are compared with the ``cpu`` ones (max abs difference). With ``--state``
(the run's ``state.pt``) the torch model is timed on the GPU beside it, the same batches, for when onnxruntime has no
CUDA provider on the machine. Writes one JSON; prints it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np


def _timed(encode: Any, batches: list[Any], repeats: int) -> tuple[np.ndarray, float]:
    """The vectors of every batch and the median wall time of a pass over them."""
    times, vectors = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = [encode(b) for b in batches]
        times.append(time.perf_counter() - start)
        vectors = np.concatenate(out)
    return vectors, statistics.median(times)


def provider_figures(bundle: Path, provider: str, batches: dict[int, list[Any]], repeats: int) -> dict[str, Any]:
    """One provider's vectors (batch 256) and formulas/s at each batch size, or why it could not run."""
    from eqsearch.engine.model import BundleError, load_encoder

    try:
        encoder = load_encoder(bundle, provider=provider)
    except BundleError as error:
        return {"error": error.message, "hint": error.hint}
    out: dict[str, Any] = {"providers": encoder.session.get_providers()}
    for size, chunk in batches.items():
        encoder.run_batch(chunk[0])  # warm-up (CUDA: kernels, allocations)
        vectors, seconds = _timed(encoder.run_batch, chunk, repeats)
        count = sum(b.num_graphs for b in chunk)
        out[f"batch_{size}"] = {"formulas": count, "seconds": round(seconds, 4), "per_second": round(count / seconds)}
        out[f"vectors_{size}"] = vectors
    return out


def torch_figures(state: Path, batches: dict[int, list[Any]], repeats: int) -> dict[str, Any]:
    """The torch model of ``state.pt`` on the GPU: formulas/s at each batch size (the device synchronised)."""
    import torch
    from eqsearch.export.structure_run import load_state

    if not torch.cuda.is_available():
        return {"error": "torch sees no CUDA device"}
    model = load_state(state).to("cuda")
    names = ("ids", "weights", "graph", "graph_sizes")

    @torch.no_grad()
    def encode(batch: Any) -> np.ndarray:
        inputs = [torch.from_numpy(getattr(batch, n)).to("cuda") for n in names]
        out = model(*inputs)
        torch.cuda.synchronize()
        return out.cpu().numpy()

    figures: dict[str, Any] = {"device": torch.cuda.get_device_name(0)}
    for size, chunk in batches.items():
        encode(chunk[0])
        _, seconds = _timed(encode, chunk, repeats)
        count = sum(b.num_graphs for b in chunk)
        figures[f"batch_{size}"] = {
            "formulas": count,
            "seconds": round(seconds, 4),
            "per_second": round(count / seconds),
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    from eqsearch.engine.model import read_manifest
    from eqsearch.engine.model.structure_bag import StructureFeatures, featurize_structure_bag

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--dev-mathml", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--state", type=Path, help="the run's state.pt: also time the torch model on the GPU")
    parser.add_argument("--formulas", type=int, default=4096, help="formulas encoded at batch 256")
    parser.add_argument("--single", type=int, default=512, help="formulas encoded one at a time")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    with gzip.open(args.dev_mathml, "rt", encoding="utf-8") as f:
        mathml = [m for _, _, m in json.load(f)["collection"] if m][: args.formulas]
    features = StructureFeatures.from_json(read_manifest(args.bundle).raw["features"])
    batches = {
        1: [featurize_structure_bag([m], features) for m in mathml[: args.single]],
        256: [featurize_structure_bag(mathml[i : i + 256], features) for i in range(0, len(mathml), 256)],
    }
    report: dict[str, Any] = {"bundle": str(args.bundle), "formulas": len(mathml)}
    import onnxruntime as ort

    report["onnxruntime"] = {"version": ort.__version__, "available": ort.get_available_providers()}
    cpu = provider_figures(args.bundle, "cpu", batches, args.repeats)
    cuda = provider_figures(args.bundle, "cuda", batches, args.repeats)
    if "error" not in cuda:
        for size in batches:
            diff = np.abs(cuda[f"vectors_{size}"] - cpu[f"vectors_{size}"]).max()
            cuda[f"parity_{size}_max_abs_diff"] = float(diff)
    report["cpu"] = {k: v for k, v in cpu.items() if not k.startswith("vectors")}
    report["cuda"] = {k: v for k, v in cuda.items() if not k.startswith("vectors")}
    if args.state:
        report["torch_cuda"] = torch_figures(args.state, batches, args.repeats)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
