"""Training triplets/s and encoding equations/s of the KDD'20 encoder on a GPU (runs on CPU too, for a smoke test).

Usage (from the repository root, with the `train` extra):
    python benchmarks/gpu.py --corpus PAPERS.jsonl[.gz] --run-dir runs/gpu-bench [--out results.json]
        [--workers 0,4,8,12] [--steps 200] [--batch-sizes 256,1024,4096] [--checkpoint CKPT]

Training: the real training step (`training.loop.train_step`: histogram loss, masking, augmentation, 128-triplet
batches, Adam) fed by the real DataLoader (`training.batching`) with 0..N worker processes, bf16 autocast on and
off; timed over ``--steps`` steps after a warm-up, with the device synchronised before the clock is read. A
"compute only" row cycles through batches already on the device, so the gap between it and the loader rows is the
input pipeline's cost. The paper's figure: 1,300 triplets/s on a GTX 1080 (KDD'20 §6).

Encoding: equations of the held-out papers through the encoder in eval mode, per batch size; "device" times the
forward pass on batches already on the device, "end to end" adds collating the graph arrays on the CPU and the copy
(featurization, MathML -> arrays, is a CPU cost measured in benchmarks/convert_featurize.md). onnxruntime's CUDA
provider is measured too when the installed onnxruntime has it (`eqsearch[gpu]`).

Every figure is the median of ``--repeats`` timed passes. FLOP estimates use benchmarks/encoder.py's count.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.model.graph import concatenate_graphs
from eqsearch.training.batching import AugmentSettings, TripletBatches, graph_tensors, triplet_loader
from eqsearch.training.config import TrainConfig
from eqsearch.training.loop import model_config_for, prepare_data, resolve_device, seed_everything, train_step
from eqsearch.training.model import FormulaEncoder, MaskingHeads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoder import flops_per_equation  # the shared FLOP count of benchmarks/encoder.py


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_time(fn: Callable[[], None], device: torch.device, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _settings(config: TrainConfig, vocab: Any) -> AugmentSettings:
    return AugmentSettings(
        augmentation=config.augmentation,
        mi_tag=vocab.tag_index("mi") if config.augmentation else None,
        n_chars=vocab.n_chars,
        mean_swaps=config.mean_swaps,
        masking=config.masking,
        mask_rate=config.mask_rate,
    )


def training_throughput(
    data: Any, config: TrainConfig, device: torch.device, *, amp: bool, workers: int | None, steps: int, warmup: int
) -> dict[str, Any]:
    """Triplets/s of ``steps`` training steps after ``warmup`` steps; ``workers=None`` = compute only (batches
    pre-built and already on the device, cycled)."""
    seed_everything(config.seed)
    model_config = model_config_for(config, data.vocabulary)
    model = FormulaEncoder(model_config).to(device).train()
    heads = MaskingHeads(model_config).to(device) if config.masking else None
    params = list(model.parameters()) + (list(heads.parameters()) if heads is not None else [])
    optimizer = torch.optim.Adam(params, lr=config.learning_rate)
    use_amp = amp and device.type == "cuda"
    dataset = TripletBatches(
        data.train.graphs, data.train_triplets, config.batch_size, _settings(config, data.vocabulary), config.seed
    )
    if len(dataset) < warmup + steps:
        raise SystemExit(f"need {warmup + steps} batches, the triplets give {len(dataset)}: raise --train-triplets")
    if workers is None:
        cached = []
        for batch in dataset:
            cached.append({k: v.to(device) for k, v in batch.items()})
            if len(cached) == 16:
                break
        batches = (cached[i % len(cached)] for i in range(warmup + steps))
    else:
        batches = iter(triplet_loader(dataset, workers, pin_memory=device.type == "cuda"))
    for _ in range(warmup):
        train_step(model, heads, optimizer, next(batches), config, device, use_amp)
    nodes = 0
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        batch = next(batches)
        nodes += int(batch["tag"].shape[0])
        train_step(model, heads, optimizer, batch, config, device, use_amp)
    _sync(device)
    seconds = time.perf_counter() - start
    return {
        "amp": use_amp,
        "workers": "compute only" if workers is None else workers,
        "steps": steps,
        "seconds": seconds,
        "triplets_per_s": steps * config.batch_size / seconds,
        "steps_per_s": steps / seconds,
        "mean_nodes_per_step": nodes / steps,
    }


@torch.no_grad()
def torch_encoding_throughput(
    model: FormulaEncoder, graphs: list, device: torch.device, batch_size: int, amp: bool, repeats: int
) -> dict[str, Any]:
    """Equations/s of the torch encoder in eval mode on ``graphs``: device-resident batches, and end to end."""
    model.eval()
    use_amp = amp and device.type == "cuda"
    chunks = [concatenate_graphs(graphs[i : i + batch_size]) for i in range(0, len(graphs), batch_size)]
    resident = [{k: v.to(device) for k, v in graph_tensors(chunk).items()} for chunk in chunks]

    def device_only() -> None:
        for batch in resident:
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                model(**batch)

    def end_to_end() -> None:
        for i in range(0, len(graphs), batch_size):
            batch = graph_tensors(concatenate_graphs(graphs[i : i + batch_size]))
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                model(**{k: v.to(device, non_blocking=True) for k, v in batch.items()}).float().cpu()

    device_only()  # warm-up: kernels, allocator
    return {
        "engine": "torch",
        "amp": use_amp,
        "batch_size": batch_size,
        "device_eq_per_s": len(graphs) / _median_time(device_only, device, repeats),
        "end_to_end_eq_per_s": len(graphs) / _median_time(end_to_end, device, repeats),
    }


def onnxruntime_cuda_throughput(bundle: Path, graphs: list, batch_size: int, repeats: int) -> dict[str, Any] | None:
    """Equations/s of the engine's onnxruntime encoder with the CUDA provider, or None without onnxruntime-gpu."""
    import onnxruntime as ort
    from eqsearch.engine.model.bundle import read_manifest
    from eqsearch.engine.model.encoder import GraphEncoder

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return None
    encoder = GraphEncoder(read_manifest(bundle), batch_size=batch_size, prefer_gpu=True)
    if encoder.providers[0] != "CUDAExecutionProvider":
        return None
    encoder.encode_graphs(graphs)
    seconds = _median_time(lambda: encoder.encode_graphs(graphs), torch.device("cpu"), repeats)
    return {"engine": "onnxruntime-cuda", "batch_size": batch_size, "end_to_end_eq_per_s": len(graphs) / seconds}


def environment(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "device": str(device)}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(
            gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1), sms=props.multi_processor_count
        )
    try:
        import onnxruntime as ort

        info.update(onnxruntime=ort.__version__, onnxruntime_providers=ort.get_available_providers())
    except ImportError:
        info["onnxruntime"] = None
    return info


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column, "")
            if isinstance(value, float):
                cells.append(f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}")
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="papers JSONL (or .jsonl.gz) with MathML")
    parser.add_argument("--run-dir", default="runs/gpu-bench", help="featurized-corpus cache and vocabulary")
    parser.add_argument("--out", help="write every figure to this JSON file")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--workers", default="0,4,8,12", help="DataLoader worker counts to try")
    parser.add_argument("--steps", type=int, default=200, help="timed training steps per setting")
    parser.add_argument("--warmup", type=int, default=20, help="untimed training steps first")
    parser.add_argument("--train-triplets", type=int, default=64_000)
    parser.add_argument("--batch-sizes", default="256,1024,4096", help="encoding batch sizes")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--checkpoint", help="encode with this checkpoint's weights (default: fresh weights)")
    parser.add_argument("--bundle", help="model bundle for the onnxruntime CUDA figure (default: the shipped one)")
    args = parser.parse_args()

    device = resolve_device(args.device)
    config = TrainConfig(
        corpus=args.corpus, run_dir=args.run_dir, train_triplets=args.train_triplets, eval_triplets=1000, device="cpu"
    )
    data = prepare_data(config, log=lambda line: print(line, flush=True))
    results: dict[str, Any] = {"environment": environment(device), "data": data.corpus_summary}
    print(json.dumps(results["environment"]), flush=True)

    mean_nodes = float(np.mean([g.num_nodes for g in data.train.graphs]))
    eq_flops = flops_per_equation(config.hidden_dim, config.n_convs, config.embedding_dim, mean_nodes)
    results["flops"] = {"mean_nodes": mean_nodes, "forward_per_equation": eq_flops, "train_per_triplet": 9 * eq_flops}

    training = []
    settings: list[tuple[bool, int | None]] = [(True, None)] + [(True, int(w)) for w in args.workers.split(",")]
    if device.type == "cuda":
        settings.append((False, None))
    for amp, workers in settings:
        row = training_throughput(data, config, device, amp=amp, workers=workers, steps=args.steps, warmup=args.warmup)
        row["achieved_tflop_per_s"] = row["triplets_per_s"] * 9 * eq_flops / 1e12
        training.append(row)
        print(json.dumps(row), flush=True)
    if device.type == "cuda":
        best = max((r for r in training if r["workers"] != "compute only"), key=lambda r: r["triplets_per_s"])
        row = training_throughput(
            data, config, device, amp=False, workers=best["workers"], steps=args.steps, warmup=args.warmup
        )
        row["achieved_tflop_per_s"] = row["triplets_per_s"] * 9 * eq_flops / 1e12
        training.append(row)
        print(json.dumps(row), flush=True)
    results["training"] = training

    if args.checkpoint:
        from eqsearch.training.loop import load_encoder

        model, _ = load_encoder(Path(args.checkpoint))
    else:
        model = FormulaEncoder(model_config_for(config, data.vocabulary))
    model = model.to(device).eval()
    graphs = data.test.graphs + data.train.graphs
    encoding = []
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        for amp in (False, True) if device.type == "cuda" else (False,):
            row = torch_encoding_throughput(model, graphs, device, batch_size, amp, args.repeats)
            row["device_tflop_per_s"] = row["device_eq_per_s"] * eq_flops / 1e12
            encoding.append(row)
            print(json.dumps(row), flush=True)
        from eqsearch.engine.model.bundle import default_bundle_path

        ort_row = onnxruntime_cuda_throughput(
            Path(args.bundle) if args.bundle else default_bundle_path(), graphs, batch_size, args.repeats
        )
        if ort_row is not None:
            encoding.append(ort_row)
            print(json.dumps(ort_row), flush=True)
    results["encoding"] = encoding
    results["encoding_equations"] = len(graphs)

    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"\n{results['environment']}; {len(graphs)} equations, {mean_nodes:.1f} nodes on average")
    print(_table(training, ["amp", "workers", "triplets_per_s", "steps_per_s", "achieved_tflop_per_s"]))
    print()
    print(_table(encoding, ["engine", "amp", "batch_size", "device_eq_per_s", "end_to_end_eq_per_s"]))


if __name__ == "__main__":
    main()
