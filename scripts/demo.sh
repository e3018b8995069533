#!/usr/bin/env bash
# The demo job: run by `make demo` with the path of the built lgreco binary.
#   scripts/demo.sh path/to/lgreco
# 1. records a real gradient trace: the char-LM of examples/charlm.py (4 layers, d = 96, 467,222
#    parameters) trained with 2-process DDP (gloo, CPU) on the licence texts of /usr/share/common-licenses,
#    65 steps, two bursts of 15 recorded steps (20..34, 50..64);
# 2. measures this CPU's matrix-product throughput, to scale the recorded CPU compute times to the
#    cluster's GPU (X = CPU FLOP/s / (0.4 x GPU dense peak));
# 3. plans layer-wise PowerSGD ranks with the closed loop (`lgreco plan --trace`, default rank 4,
#    error budget = the uniform plan's error) for 4 nodes x 8 A100 at 25 Gb/s, and validates the schedule;
# 4. predicts step times over bandwidths and node counts (`lgreco whatif --tables`, table + PNG) and
#    prints what the adaptive schedule gains over uniform PowerSGD.
# Outputs go to demo-out/ (or $LGRECO_DEMO_OUT), about 0.5 MB; the trace (50 MB) is deleted at the
# end, also when a stage fails, unless LGRECO_DEMO_KEEP_TRACE=1. Every stage's failure stops the demo
# (exit non-zero). LGRECO_DEMO_SIZE=tiny runs the same stages on a toy model in seconds (the test).
set -euo pipefail
LGRECO=${1:?usage: demo.sh path/to/lgreco}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${LGRECO_DEMO_OUT:-$ROOT/demo-out}
PY=${PY:-/usr/bin/python3}
TOPO=4x8xA100-1x25G
RANK=4
MODEL=(--d-model 96 --layers 4)
STEPS=65
RECORD=(--record-start 20 --every 30 --burst 15)
BURST=15
case "${LGRECO_DEMO_SIZE:-full}" in
  full) ;;
  tiny)  # the same stages on a toy run, in seconds (tests/python/test_demo.py)
    MODEL=(--d-model 16 --layers 1 --batch 4 --ctx 16); STEPS=16; RECORD=(--record-start 2 --every 7 --burst 7); BURST=7 ;;
  *) echo "demo.sh: error: LGRECO_DEMO_SIZE=${LGRECO_DEMO_SIZE}: expected full or tiny" >&2; exit 1 ;;
esac
fail() { echo "demo.sh: error: $*" >&2; exit 1; }
[[ -f "$LGRECO" && -x "$LGRECO" ]] || fail "$LGRECO is not an executable (build it: make build)"
[[ -x "$PY" ]] || fail "$PY not found (the demo trains with Debian's python3: apt-get install python3-torch python3-h5py)"
"$PY" -c 'import torch, h5py, numpy, matplotlib' 2>/dev/null ||
  fail "$PY cannot import torch, h5py, numpy and matplotlib (Debian: apt-get install python3-torch python3-h5py python3-matplotlib)"
[[ -d /usr/share/common-licenses ]] || fail "/usr/share/common-licenses (the training text, Debian's base-files) is missing"
mkdir -p "$OUT" || fail "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
TRACE=$OUT/charlm-trace.h5
cleanup() { [[ "${LGRECO_DEMO_KEEP_TRACE:-0}" == 1 ]] || rm -f "$TRACE"; }
trap cleanup EXIT
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
# The recording job computes its wire plans with the native module: check it before any work.
"$PY" -c 'import lgreco._native' 2>/dev/null ||
  fail "lgreco's Python native module is not importable by $PY from $ROOT/python (make build-tool builds it with lgreco)"
T0=$SECONDS

"$LGRECO" info
echo
echo "== 1/5 record a real gradient trace: char-LM (${MODEL[*]}) on /usr/share/common-licenses,"
echo "       2-process DDP (gloo, CPU), $STEPS steps, recording ${RECORD[*]} (TraceRecorder)"
"$PY" "$ROOT/examples/charlm.py" "${MODEL[@]}" --steps "$STEPS" --record "$TRACE" "${RECORD[@]}" --force \
  --log-every 13 --metrics "$OUT/record-run.json"
TRACE_SIZE="$(( $(stat -c %s "$TRACE") / 1000000 )) MB"
"$LGRECO" trace validate "$TRACE"
echo
echo "== 2/5 compute scale: the trace's compute times are this CPU's; the plan and the what-if predict $TOPO"
"$LGRECO" net topology "$TOPO" --format json > "$OUT/topology.json"
"$PY" "$ROOT/scripts/demo_report.py" scale --topology-json "$OUT/topology.json" --fraction 0.4 -o "$OUT/compute-scale.json"
X=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["compute_scale"])' "$OUT/compute-scale.json")
echo "(0.4 = the fraction of the dense peak lgreco assumes wherever it estimates compute from FLOPs)"
echo
echo "== 3/5 closed-loop replay and plan: PowerSGD, default rank $RANK, error budget = uniform's (alpha 1), on $TOPO"
"$LGRECO" plan --trace "$TRACE" --family powersgd --default rank=$RANK --period $BURST --topology "$TOPO" \
  --compute-scale "$X" -o "$OUT/schedule.json" --tables-out "$OUT/tables.json" --force
echo
echo "== 4/5 validate the schedule"
"$LGRECO" schedule validate "$OUT/schedule.json"
echo
echo "== 5/5 what-if: bandwidth 1..400 Gb/s, 1..8 nodes (the tables are reused, no second replay)"
WHATIF=(whatif --tables "$OUT/tables.json" --topology "$TOPO" --bandwidth 1Gbps:400Gbps:12 --nodes 1,2,4,8
        --compute-scale "$X")
"$LGRECO" "${WHATIF[@]}" --plot "$OUT/whatif.png" --force | tee "$OUT/whatif.txt"
if ! "$LGRECO" "${WHATIF[@]}" --format json > "$OUT/whatif.json" 2> "$OUT/.whatif.err"; then
  cat "$OUT/.whatif.err" >&2
  fail "lgreco whatif --format json failed"
fi
rm -f "$OUT/.whatif.err"
echo
echo "== what adaptive compression gained on this trace"
"$PY" "$ROOT/scripts/demo_report.py" summary --schedule "$OUT/schedule.json" --whatif "$OUT/whatif.json" |
  tee "$OUT/summary.txt"
PARAMS=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["params"])' "$OUT/record-run.json")
echo "(a $PARAMS-parameter model computes in microseconds on an A100, so communication is exposed"
echo " everywhere: the gain follows the bytes, less the collectives' fixed latencies)"
echo
cleanup
if [[ -f "$TRACE" ]]; then
  echo "kept the trace $TRACE ($(du -h "$TRACE" | cut -f1), LGRECO_DEMO_KEEP_TRACE=1)"
else
  echo "the trace ($TRACE_SIZE) was deleted; LGRECO_DEMO_KEEP_TRACE=1 keeps it"
fi
echo "outputs in $OUT ($(du -sh "$OUT" | cut -f1)): schedule.json (the plan), tables.json (candidate tables),"
echo "  whatif.txt/.json/.png (step times, speedups), summary.txt, record-run.json (the recording run's losses),"
echo "  compute-scale.json, topology.json"
echo "demo finished in $((SECONDS - T0)) s"
cat <<EOF

== apply a schedule in your DDP job (three lines; plan your own model's trace as above: record with
   lgreco.TraceRecorder, then lgreco plan --trace; this schedule names the char-LM's parameters)

    from lgreco import Schedule, ScheduleHook
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook = ScheduleHook(ddp, Schedule.load("schedule.json")).register(ddp)

   install: pip install -e $ROOT/python   in your training environment (torch, numpy, h5py; on
   Debian 12 the README gives the venv recipe), or export PYTHONPATH=$ROOT/python; applying a
   schedule needs nothing else; re-planning inside the job (lgreco.OnlineHook) also needs the
   native module that \`make\` builds into python/lgreco/.
   More: docs/python.md.
EOF
