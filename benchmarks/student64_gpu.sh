#!/usr/bin/env bash
# The 64-d student of the composite on a lent GPU machine, the first thing such a session runs (benchmarks/gpu.md,
# "The 64-d student"; docs/developing.md): train (export.structure_run with the composite's vectors weighed as the
# embedding ranker weighs them, the structural BM25 beside them, int8-aware, a query head for the network's cosine),
# export a structure-bag bundle, score it offline on the development half (float, int8, int4), then serve the bundle
# with onnxruntime: the CUDA provider against the CPU (max abs difference) and formulas/s at batch 1 and 256 (the torch
# model on the GPU beside it, for a device image without onnxruntime-gpu).
#
# The machine has torch, onnx, onnxruntime and lxml, no eqsearch install and no network: the package is put on the
# path from this checkout and the data carried in .encdata/ (made here: `python -m eqsearch.training.structure_prepare
# --papers CORPUS/real-latex/papers.jsonl --benchmark $D --out .encdata --teacher-bundle engine/model/search-bundle`:
# formulas.jsonl.gz, dev-mathml.json.gz, qrels.txt, teacher-vectors.npz, ~15 MB). onnxruntime-gpu's wheel (243 MiB)
# is over what a run may carry (64 MiB): a CUDA provider is measured only where the image has one.
#   OUT=DIR [PY=python3] [TRAIN_SECONDS=240] [WORKERS=12] [EXTRA=...] bash benchmarks/student64_gpu.sh
# About 4 minutes of training, 1 of preparation and evaluation, 1 of serving: ~7 of device time with the start.
# Try it here first at a toy size: DEVICE=cpu TRAIN_SECONDS=20 WORKERS=1 PREP_WORKERS=2 EXTRA="--limit 2000" OUT=/tmp/s64
set -euo pipefail
REPO=$(pwd)
PY=${PY:-python3}
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
source "$REPO/benchmarks/device_shim.sh"
"$PY" -c 'import onnxruntime as o, torch as t; print("onnxruntime", o.__version__, o.get_available_providers(), "torch", t.__version__)' || true
# shellcheck disable=SC2086
"$PY" -m eqsearch.export.structure_run \
  --formulas .encdata/formulas.jsonl.gz --dev-mathml .encdata/dev-mathml.json.gz --qrels .encdata/qrels.txt \
  --teacher-vectors .encdata/teacher-vectors.npz --teacher-weights graph=0.3,structure=0.7 --vector-weight 0.5 \
  --bm25-weight 1 --span-weight 0.5 --no-views --quantize-bits 8 --head-part graph --head-weight 1 \
  --out "$OUT/run" --steps 1000000 --max-seconds "${TRAIN_SECONDS:-240}" --device "${DEVICE:-auto}" \
  --workers "${WORKERS:-12}" --prep-workers "${PREP_WORKERS:-16}" --threads 4 --eval-every "${EVAL_EVERY:-2000}" \
  --log-every 500 ${EXTRA:-} 2>&1 | grep -v "torchvision is not installed" | tee "$OUT/train-log.txt"
"$PY" benchmarks/student64_serve.py --bundle "$OUT/run/bundle" --state "$OUT/run/state.pt" \
  --dev-mathml .encdata/dev-mathml.json.gz --out "$OUT/serve.json" 2>&1 | tee "$OUT/serve-log.txt"
