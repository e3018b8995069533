#!/usr/bin/env bash
# Replay speed: a synthetic ResNet-50 trace (2 bursts x 10 steps) against PowerSGD ranks 2..8,
# top-k at 5 densities and max-min at 2..8 bits (family "all": 19 candidates per conv/fc matrix),
# with 1 and 2 threads. Prints wall time, replay time, GB/s of fp32 gradient and peak RSS.
# Usage: bench_replay.sh path/to/lgreco [workdir]
set -euo pipefail
LGRECO=${1:?usage: bench_replay.sh path/to/lgreco [workdir]}
WORK=${2:-$(mktemp -d)}
TRACE=$WORK/resnet50-bench.h5
if [[ ! -f $TRACE ]]; then
  "$LGRECO" trace synth --model resnet50 --steps 20 --bursts 2 --seed 1 --compute-tflops 100 -o "$TRACE"
fi
for threads in 1 2; do
  rm -f "$WORK/s$threads.json"
  /usr/bin/time -f "threads=$threads wall=%e s peak_rss=%M KB" \
    "$LGRECO" plan --trace "$TRACE" --family all --topology 4x8xA100-1x25G --threads "$threads" -o "$WORK/s$threads.json" \
    --format json > "$WORK/summary$threads.json"
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['replay']; print(f\"  replay {r['seconds']:.1f} s, {r['grad_bytes']/1e9:.2f} GB fp32, {r['grad_bytes']/1e9/r['seconds']:.3f} GB/s\")" "$WORK/summary$threads.json"
done
