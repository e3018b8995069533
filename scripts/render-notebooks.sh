#!/usr/bin/env bash
# Renders every notebook with its outputs to HTML (run by `make notebooks`).
#
#   scripts/render-notebooks.sh path/to/lgreco [OUTDIR]      (OUTDIR defaults to build/notebooks)
#
# Generates the notebooks' inputs with the given lgreco into OUTDIR/inputs/ (regenerated on every
# run), then executes each notebook headless and writes OUTDIR/<name>.html, with its figures and
# summary JSON in OUTDIR/<name>-out/. A notebook whose subcommands this lgreco lacks is skipped with
# a message naming them; the script fails if a notebook that could run fails.
set -euo pipefail

LGRECO=${1:?usage: render-notebooks.sh path/to/lgreco [OUTDIR]}
LGRECO=$(cd "$(dirname "$LGRECO")" && pwd)/$(basename "$LGRECO")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${2:-$REPO/build/notebooks}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
IN=$OUT/inputs
PY=${PY:-/usr/bin/python3}
MODEL=${LGRECO_NB_MODEL:-resnet18}
STEPS=${LGRECO_NB_STEPS:-12}
TOPOLOGY=${LGRECO_NB_TOPOLOGY:-4x8xA100-1x25G}

find_shared() {
  local d
  for d in "${LGRECO_SHARED_DIR:-}" "$REPO/../shared" "$REPO/../../shared"; do
    if [[ -n "$d" && -f "$d/data/nccl-tests/a100x8-nvswitch-allreduce.tsv" ]]; then (cd "$d" && pwd); return; fi
  done
}
SHARED=$(find_shared)

COMMANDS=$("$LGRECO" --list-commands)
missing() {  # prints the subcommands among "$@" this lgreco lacks
  local c out=()
  for c in "$@"; do grep -qxF "$c" <<<"$COMMANDS" || out+=("'lgreco $c'"); done
  echo "${out[*]:-}"
}

rm -rf "$IN"
mkdir -p "$IN"
rendered=() skipped=()

render() {  # render NAME VAR=VALUE...
  local name=$1
  shift
  echo "rendering $name"
  env "$@" LGRECO_NB_OUT="$OUT/$name-out" MPLBACKEND=Agg PYDEVD_DISABLE_FILE_VALIDATION=1 \
    "$PY" -m jupyter nbconvert --to html --execute --ExecutePreprocessor.timeout=600 \
    --ExecutePreprocessor.kernel_name=python3 --output-dir "$OUT" "$REPO/notebooks/$name.ipynb" 2>&1 |
    grep -v -e 'frozen modules' -e 'Debugging will proceed' -e 'make the debugger miss' -e 'to python to disable' -e 'PYDEVD' || true
  [[ -f "$OUT/$name.html" ]] || { echo "render-notebooks: $name failed" >&2; exit 1; }
  rendered+=("$name")
}

skip() {  # skip NAME WHY
  echo "skipping $1: $2"
  skipped+=("$1 ($2)")
}

trace() {  # the synthetic trace, made once
  [[ -f "$IN/trace.h5" ]] || "$LGRECO" trace synth --model "$MODEL" --steps "$STEPS" --compute-tflops 50 --output "$IN/trace.h5"
}

# What-if study.
m=$(missing "trace synth" whatif)
if [[ -z "$m" ]]; then
  trace
  "$LGRECO" whatif --trace "$IN/trace.h5" --family powersgd --topology "$TOPOLOGY" --bandwidth 1Gbps:400Gbps:12 --nodes 1,2,4,8 \
    --format json >"$IN/whatif.json"
  rm -f "$OUT/whatif-bandwidth.html"
  render whatif-bandwidth LGRECO_NB_WHATIF="$IN/whatif.json"
else
  skip whatif-bandwidth "needs $m"
fi

# Plan (tables + phased schedule) for the layer trade-offs and the schedule inspection.
m=$(missing "trace synth" plan)
if [[ -z "$m" ]]; then
  trace
  "$LGRECO" plan --trace "$IN/trace.h5" --family powersgd --topology "$TOPOLOGY" --warmup-steps $((STEPS / 3)) --period $((STEPS / 3)) \
    --tables-out "$IN/tables.json" --output "$IN/schedule.json"
  rm -f "$OUT/layer-tradeoffs.html"
  render layer-tradeoffs LGRECO_NB_TABLES="$IN/tables.json" LGRECO_NB_SCHEDULE="$IN/schedule.json"
  m=$(missing simulate)
  if [[ -z "$m" ]]; then
    # One simulated step per phase of the schedule, on the trace's recorded compute times.
    phases=$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["phases"]))' "$IN/schedule.json")
    sims=()
    for ((k = 0; k < phases; k++)); do
      "$LGRECO" simulate --trace "$IN/trace.h5" --schedule "$IN/schedule.json" --phase "$k" --topology "$TOPOLOGY" \
        --format json >"$IN/simulate-$k.json"
      sims+=("$IN/simulate-$k.json")
    done
    rm -f "$OUT/schedule-inspection.html"
    render schedule-inspection LGRECO_NB_SCHEDULE="$IN/schedule.json" LGRECO_NB_SIMULATE="$(IFS=,; echo "${sims[*]}")"
  else
    skip schedule-inspection "needs $m"
  fi
else
  skip layer-tradeoffs "needs $m"
  skip schedule-inspection "needs $m"
fi

# Network model against nccl-tests.
m=$(missing "net predict" "net calibrate")
if [[ -z "$m" && -n "$SHARED" ]]; then
  M=$SHARED/data/nccl-tests/a100x8-nvswitch-allreduce.tsv
  "$LGRECO" net predict --topology dgx-a100 --collective allreduce --sizes 32K:16G --format json \
    >"$IN/predict-preset.json"
  "$LGRECO" net calibrate "$M" --topology dgx-a100 --output "$IN/fit.json"
  "$LGRECO" net predict --topology dgx-a100 --network-fit "$IN/fit.json" --collective allreduce --sizes 32K:16G \
    --format json >"$IN/predict-fit.json"
  rm -f "$OUT/network-validation.html"
  render network-validation LGRECO_NB_MEASURED="$M" LGRECO_NB_PRED_PRESET="$IN/predict-preset.json" \
    LGRECO_NB_PRED_FIT="$IN/predict-fit.json" LGRECO_NB_FIT="$IN/fit.json"
elif [[ -n "$m" ]]; then
  skip network-validation "needs $m"
else
  skip network-validation "shared/data/nccl-tests not found (set LGRECO_SHARED_DIR)"
fi

echo
echo "rendered ${#rendered[@]} notebook(s) into $OUT: ${rendered[*]:-none}"
for s in "${skipped[@]}"; do echo "skipped: $s"; done
