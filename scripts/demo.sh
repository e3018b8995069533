#!/usr/bin/env bash
# The demo job: run by `make demo` with the path of the built lgreco binary.
# Synthesises a small ResNet-50 trace (2 bursts of 10 steps), plans layer-wise PowerSGD ranks for a
# 4-node A100 cluster at 25 Gb/s with the closed-loop replay, validates the schedule, and predicts the
# speedups over a grid of bandwidths and node counts (table + PNG). Outputs go to demo-out/.
set -euo pipefail
LGRECO=${1:?usage: demo.sh path/to/lgreco}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${LGRECO_DEMO_OUT:-$ROOT/demo-out}
TOPO=4x8xA100-1x25G
mkdir -p "$OUT"
"$LGRECO" info
echo
echo "== 1/4 synthesise a ResNet-50 gradient trace (2 bursts x 10 steps, statistics of recorded traces, compute times at 100 TFLOP/s)"
# The measured profile (docs/synthetic-traces.md); no deflate keeps the synthesis to a few seconds per step.
"$LGRECO" trace synth --model resnet50 --steps 20 --burst-length 10 --burst-spacing 1000 --seed 1 \
  --deflate 0 --compute-tflops 100 -o "$OUT/resnet50.h5" --force
echo
echo "== 2/4 closed-loop replay and plan: PowerSGD, default rank 4, on $TOPO"
"$LGRECO" plan --trace "$OUT/resnet50.h5" --family powersgd --default rank=4 --topology "$TOPO" \
  -o "$OUT/schedule.json" --tables-out "$OUT/tables.json" --force
echo
echo "== 3/4 validate the schedule"
"$LGRECO" schedule validate "$OUT/schedule.json"
echo
echo "== 4/4 what-if: bandwidth 1..400 Gb/s, 1..8 nodes (tables reused, no second replay)"
"$LGRECO" whatif --tables "$OUT/tables.json" --topology "$TOPO" --bandwidth 1Gbps:400Gbps:12 --nodes 1,2,4,8 \
  --plot "$OUT/whatif.png" --force
echo
echo "demo outputs in $OUT: resnet50.h5, schedule.json, tables.json, whatif.png"
