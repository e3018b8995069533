#!/usr/bin/env bash
# Training comparison on the char-LM example (2-process gloo DDP, CPU): uncompressed, uniform PowerSGD
# rank RANK, and online L-GreCo (OnlineHook, reference DP at α = ALPHA) over the same steps and seed.
#   examples/compare_online.sh [OUT_DIR]
# Environment: STEPS (300), WARMUP (30), PERIOD (50), ACC (10), RANK (4), ALPHA (1), SEED (0),
# CHARLM_ARGS (extra model/data flags for examples/charlm.py), PY (/usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-compare-online-out}
STEPS=${STEPS:-300}
WARMUP=${WARMUP:-30}
PERIOD=${PERIOD:-50}
ACC=${ACC:-10}
RANK=${RANK:-4}
ALPHA=${ALPHA:-1}
SEED=${SEED:-0}
read -r -a XARGS <<< "${CHARLM_ARGS:-}"
PY=${PY:-/usr/bin/python3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
COMMON=("${XARGS[@]}" --steps "$STEPS" --seed "$SEED" --force)
echo "== 1/3 uncompressed"
"$PY" examples/charlm.py "${COMMON[@]}" --metrics "$OUT/uncompressed.json"
echo "== 2/3 uniform PowerSGD rank $RANK after $WARMUP warm-up steps"
"$PY" examples/charlm.py "${COMMON[@]}" --uniform-rank "$RANK" --warmup "$WARMUP" --metrics "$OUT/uniform.json"
echo "== 3/3 online L-GreCo (alpha $ALPHA, period $PERIOD, acc $ACC)"
"$PY" examples/charlm.py "${COMMON[@]}" --online "$OUT/online" --warmup "$WARMUP" --period "$PERIOD" --acc-steps "$ACC" \
  --rank "$RANK" --alpha "$ALPHA" --metrics "$OUT/online.json"
"$PY" - "$OUT" <<'PYEOF'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
print(f"{'run':<14}{'train loss':>11}{'eval loss':>10}{'total MB':>10}{'bytes/step (last)':>19}{'wall s':>8}")
for name in ("uncompressed", "uniform", "online"):
    m = json.loads((out / f"{name}.json").read_text())
    print(f"{name:<14}{m['train_loss_last20']:>11.4f}{m['eval_loss']:>10.4f}{m['bytes_total'] / 1e6:>10.2f}"
          f"{m['bytes_last_step']:>19}{m['wall_s']:>8.1f}")
PYEOF
