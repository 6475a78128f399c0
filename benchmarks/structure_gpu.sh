#!/usr/bin/env bash
# One prepared run of the structure-bag encoder on a lent GPU machine (benchmarks/gpu.md, "The structure-bag
# encoder"): that machine has torch, onnx, onnxruntime and lxml but no eqsearch install and no network, so the
# package is put on the path from this checkout, the carried data (.encdata/: the corpus's distinct formulas and the
# development half's MathML, made here by `python -m eqsearch.training.structure_prepare`) is read, and the variants
# are trained one after the other; results, the bundle and the weights go to $OUT.
#   OUT=DIR [PY=python3] [SECONDS_PER_VARIANT=90] [VARIANTS=full,bm25-teacher,no-views,random-batches] [WORKERS=12] \
#       bash benchmarks/structure_gpu.sh
# EXTRA passes more options to the run, e.g. the shipped KDD'20 network's vectors as the teacher (made here by
# `structure_prepare --teacher-bundle engine/model/default-bundle`, carried in .encdata/) and the contextual signal:
#   EXTRA="--no-views --span-weight 0 --teacher-vectors .encdata/teacher-vectors.npz --vector-weight 1 --bm25-weight 0
#          --context-weight 0.5 --same-document 2" VARIANTS=full bash benchmarks/structure_gpu.sh
set -euo pipefail
REPO=$(pwd)
PY=${PY:-python3}
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
source "$REPO/benchmarks/device_shim.sh"
"$PY" -m eqsearch.export.structure_run \
  --formulas .encdata/formulas.jsonl.gz --dev-mathml .encdata/dev-mathml.json.gz --qrels .encdata/qrels.txt \
  --out "$OUT" --steps "${STEPS:-1000000}" --max-seconds "${SECONDS_PER_VARIANT:-90}" \
  --variants "${VARIANTS:-full,bm25-teacher,no-views,random-batches}" --workers "${WORKERS:-12}" \
  --prep-workers "${PREP_WORKERS:-16}" --threads 4 --eval-every "${EVAL_EVERY:-2000}" --log-every 500 \
  ${EXTRA:-} 2>&1 | grep -v "torchvision is not installed" | tee "$OUT/log.txt"
