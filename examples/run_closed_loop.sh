#!/usr/bin/env bash
# Closed loop on a real job: record a trace from an uncompressed run, plan a per-layer PowerSGD
# schedule from it, train again with the schedule (and with uniform PowerSGD for comparison).
#   examples/run_closed_loop.sh [OUT_DIR]
# Environment: STEPS (default 300), WARMUP (30), RANK (4), EVERY (100), BURST (10),
# CHARLM_ARGS (extra model/data flags for examples/charlm.py), LGRECO (build/tools/lgreco),
# PLANNER=lgreco|python (default: lgreco when it supports `plan --trace`, else python: examples/plan_from_trace.py,
# the C++ candidates, measurement and reference DP through the native module lgreco._native).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-closed-loop-out}
STEPS=${STEPS:-300}
WARMUP=${WARMUP:-30}
RANK=${RANK:-4}
EVERY=${EVERY:-100}
BURST=${BURST:-10}
read -r -a XARGS <<< "${CHARLM_ARGS:-}"
PY=${PY:-/usr/bin/python3}
LGRECO=${LGRECO:-build/tools/lgreco}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"

if [[ -z "${PLANNER:-}" ]]; then
  PLAN_HELP=$("$LGRECO" plan --help 2>/dev/null || true)
  if [[ "$PLAN_HELP" == *"--trace"* && "$PLAN_HELP" != *"not available in this build"* ]]; then
    PLANNER=lgreco
  else
    PLANNER=python
  fi
fi
echo "== 1/4 uncompressed run, recording a trace (steps $STEPS)"
"$PY" examples/charlm.py "${XARGS[@]}" --steps "$STEPS" --record "$OUT/trace.h5" --every "$EVERY" --burst "$BURST" \
  --record-start "$WARMUP" --force --metrics "$OUT/uncompressed.json"
echo "== 2/4 plan ($PLANNER)"
rm -f "$OUT/schedule.json" "$OUT/uniform.json"
if [[ "$PLANNER" == lgreco ]]; then
  "$LGRECO" plan --trace "$OUT/trace.h5" --family powersgd -o "$OUT/schedule.json"
else
  "$PY" examples/plan_from_trace.py --trace "$OUT/trace.h5" --rank "$RANK" --warmup "$WARMUP" -o "$OUT/schedule.json"
fi
"$PY" examples/plan_from_trace.py --trace "$OUT/trace.h5" --rank "$RANK" --warmup "$WARMUP" --uniform -o "$OUT/uniform.json"
echo "== 3/4 adaptive run"
"$PY" examples/charlm.py "${XARGS[@]}" --steps "$STEPS" --schedule "$OUT/schedule.json" --metrics "$OUT/adaptive.json"
echo "== 4/4 uniform run"
"$PY" examples/charlm.py "${XARGS[@]}" --steps "$STEPS" --schedule "$OUT/uniform.json" --metrics "$OUT/uniform-run.json"
"$PY" - "$OUT" <<'PYEOF'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
print(f"{'run':<14}{'eval loss':>10}{'train loss':>11}{'bytes/step (last)':>19}{'total MB':>10}{'wall s':>8}")
for name in ("uncompressed", "uniform-run", "adaptive"):
    m = json.loads((out / f"{name}.json").read_text())
    print(f"{name:<14}{m['eval_loss']:>10.4f}{m['train_loss_last20']:>11.4f}{m['bytes_last_step']:>19}"
          f"{m['bytes_total'] / 1e6:>10.2f}{m['wall_s']:>8.1f}")
PYEOF
