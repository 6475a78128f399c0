#!/usr/bin/env bash
# One prepared run of the graph network fine-tuned on the structure (issue 27, round 4; benchmarks/encoder.md) on a
# lent GPU machine: that machine has torch, onnx, onnxruntime and lxml but no eqsearch install and no network, so the
# package is put on the path from this checkout (the elasticsearch client, which `engine.search` imports, from wheels
# carried in .whl/ when given), the carried data (.encdata/: the corpus's distinct formulas, the development half's
# MathML and qrels, and the structural lists of the development topics, `structure-lists.json`) is read, the
# structural terms are computed once, the variants train side by side (one process each, the network on the GPU,
# batches composed on the CPU), and `benchmarks/gcn_screen.py` scores every saved step and every soup (the mean
# weights of a variant's seeds) alone and fused. $OUT gets the screen, the logs, and the weights of the best cells.
#   OUT=DIR [PY=python3] [DEVICE=cuda] [VARIANTS="C B L"] [STEPS=400] [EVAL_EVERY=25] [SEEDS="0 1 2 3"] \
#       [EXTRA=...] bash benchmarks/gcn_gpu.sh
# VARIANTS: at most three of C, B, X, Y (below) besides L, so that what comes back stays within 8 files.
set -euo pipefail
REPO=$(pwd)
PY=${PY:-python3}
OUT=${OUT:?set OUT}
DEVICE=${DEVICE:-cuda}
STEPS=${STEPS:-400}
EVAL_EVERY=${EVAL_EVERY:-25}
SEEDS=${SEEDS:-0 1 2 3}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$OUT" "$WORK"
source "$REPO/benchmarks/device_shim.sh"
DATA=(--formulas .encdata/formulas.jsonl.gz --dev-mathml .encdata/dev-mathml.json.gz --qrels .encdata/qrels.txt)
# EXTRA: more options for every run (a smoke test here: EXTRA="--limit 1500" DEVICE=cpu STEPS=4 EVAL_EVERY=2)
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"
COMMON=("${DATA[@]}" --device "$DEVICE" --threads 2 --terms-cache "$WORK/terms" --no-bundle --log-every 50)
COMMON+=("${EXTRA_ARGS[@]}")
SECONDS=0

# 1. the structural terms of the training and held-out formulas, once, on every core
"$PY" -m eqsearch.export.gcn_run "${COMMON[@]}" --out "$WORK/prep" --steps 0 --prep-workers "$(nproc)" \
  > "$WORK/prep.log" 2>&1
echo "terms ready after ${SECONDS}s"
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2

# 2. the variants, side by side, each in several seeds for the soups (L: one run):
#    C = round 3's teacher (structural BM25 + the network's own cosine, anchor 1); B = the structural BM25 alone
#    (anchor 1); X = C with the contextual signal (same document 0.5 in the teacher, 2 of each group's neighbours from
#    the seed's document); Y = the contextual signal and the network's own cosine without the structure;
#    L = C at a third of the learning rate, twice the batch, twice the steps.
#    A time budget bounds each run should the steps be slower than planned.
VARIANTS=${VARIANTS:-C B L}
options() {
  case $1 in
    C) echo "--anchor-weight 1 --vector-weight 1" ;;
    B) echo "--anchor-weight 1" ;;
    X) echo "--anchor-weight 1 --vector-weight 1 --context-weight 0.5 --same-document 2" ;;
    Y) echo "--anchor-weight 1 --vector-weight 1 --bm25-weight 0 --context-weight 1 --same-document 3" ;;
    *) echo "unknown variant $1 (C, B, X, Y, L)" >&2; return 1 ;;
  esac
}
variant() {
  local name=$1
  shift
  "$PY" -m eqsearch.export.gcn_run "${COMMON[@]}" --out "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1 \
    || echo "variant $name failed (exit $?): $(tail -3 "$WORK/$name.log")"
}
RUNS=()
SOUPS=()
for v in $VARIANTS; do
  if [ "$v" = L ]; then
    variant L --seed 0 --steps $((STEPS * 2)) --eval-every $((EVAL_EVERY * 2)) --lr 3e-5 --seeds 64 \
      --max-seconds 300 --anchor-weight 1 --vector-weight 1 &
    RUNS+=("$WORK/L")
    continue
  fi
  read -r -a opts <<< "$(options "$v")"
  soup=""
  for seed in $SEEDS; do
    variant "$v-s$seed" --seed "$seed" --steps "$STEPS" --eval-every "$EVAL_EVERY" --max-seconds 240 "${opts[@]}" &
    RUNS+=("$WORK/$v-s$seed")
    soup+="$WORK/$v-s$seed,"
  done
  SOUPS+=(--soup "$v=$soup")
done
wait
echo "variants trained after ${SECONDS}s"
grep -h "^after" "$WORK"/*.log | head -20 || true

# 3. the screen: each run in a process of its own, the soups in one (on the GPU)
screen() {
  "$PY" benchmarks/gcn_screen.py "${DATA[@]:2}" --structure .encdata/structure-lists.json --shares 0.1,0.15,0.2 \
    --device "$DEVICE" "$@" 2>&1 || echo "screen $* failed"
}
for run in "${RUNS[@]}"; do
  screen --run "$run" --out "$WORK/screen-$(basename "$run").json" > "$WORK/screen-$(basename "$run").log" &
done
screen "${SOUPS[@]}" --save-soups "$WORK/soups" --out "$WORK/screen-soups.json" \
  > "$WORK/screen-soups.log"
wait
echo "screened after ${SECONDS}s"

# 4. what comes back: the merged screen, the logs and results, the soups' weights at four steps, the weights of the
#    best other cells (at most 4)
"$PY" - "$WORK" "$OUT" "$VARIANTS" <<'EOF'
import json, sys, tarfile
from pathlib import Path
work, out = Path(sys.argv[1]), Path(sys.argv[2])
screen = {}
for f in sorted(work.glob("screen-*.json")):
    screen.update(json.loads(f.read_text()))
(out / "screen.json").write_text(json.dumps(screen, indent=1))
SOUP_STEPS = (100, 150, 200, 300)  # the soups' weights that always come back (4 a file: 16 MiB each at most)
base = {"ndcg_prime": 0.8417, "map_prime": 0.6011, "p_prime_10": 0.5545}  # the shipped network in the default
cells = []
for name, steps in screen.items():
    for step, cell in steps.items():
        for share, fig in cell.items():
            if share != "alone":
                gains = [fig[k] - v for k, v in base.items()]
                cells.append((min(gains) >= 0, sum(gains), name, int(step), share, fig))
cells.sort(key=lambda c: (c[0], c[1]), reverse=True)
best = cells[:12]
(out / "best.json").write_text(json.dumps([dict(zip(("all_three", "gain", "name", "step", "share", "figures"), c)) for c in best], indent=1))
def state(name, step):
    if name.startswith("soup-"):
        return work / "soups" / f"{name[5:]}-state-step{step}.pt"
    return work / name / f"state-step{step}.pt"
packs = {f"soup{v}": [state(f"soup-{v}", s) for s in SOUP_STEPS] for v in sys.argv[3].split() if v != "L"}
packed = {p for paths in packs.values() for p in paths}
packs["best"] = [p for p in dict.fromkeys(state(c[2], c[3]) for c in best) if p not in packed][:4]
for pack, paths in packs.items():
    with tarfile.open(out / f"states-{pack}.tar", "w") as tar:
        for src in (p for p in paths if p.exists()):
            tar.add(src, arcname=src.name if src.parent.name == "soups" else f"{src.parent.name}-{src.name}")
with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
    for f in sorted(work.glob("*.log")) + sorted(work.glob("*/result.json")) + sorted(work.glob("*/log.txt")):
        tar.add(f, arcname=str(f.relative_to(work)))
for c in best:
    print(("ALL " if c[0] else "    ") + f"{c[2]} step {c[3]} share {c[4]}: {c[5]['ndcg_prime']:.4f} / {c[5]['map_prime']:.4f} / {c[5]['p_prime_10']:.4f} (gain {c[1]:+.4f})")
EOF
echo "done after ${SECONDS}s"
