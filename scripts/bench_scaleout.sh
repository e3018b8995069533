#!/usr/bin/env bash
# Scale-out on one machine (docs/scale-out.md, docs/performance.md): a synthetic GPT-2 small trace
# (8 steps, float16) planned by `plan --trace` in one process and under mpirun.
# 1. memory: 1, 2 and 3 ranks x 1 thread (3 oversubscribed on 2 cores): per-rank peak RSS and CPU
#    time (/usr/bin/time around each rank), the split's balance and each rank's measured replay time;
# 2. time with ranks x threads = 2: 1 rank x 2 threads against 2 ranks x 1 thread, twice each;
# 3. every schedule equals the one-process schedule apart from its provenance;
# 4. the cost rate (replay seconds per estimated byte-pass on one thread, from the 1 x 1 run) and
#    the Llama-2-7B projection on 8 and 64 ranks (lgreco scaleout: a projection, not a measurement).
# The trace (1.6 GB) is deleted at the end unless KEEP=1.
# Usage: bench_scaleout.sh path/to/lgreco [workdir]
set -euo pipefail
LGRECO=$(realpath "${1:?usage: bench_scaleout.sh path/to/lgreco [workdir]}")
WORK=${2:-$(mktemp -d)}
cd "$WORK"
TRACE=gpt2.h5
[[ -f $TRACE ]] || "$LGRECO" trace synth --model gpt2 --steps 8 --dtype float16 --seed 1 -o "$TRACE"
ARGS=(plan --trace "$TRACE" --family powersgd --period 4 --acc-steps 2 --force --format json)
MPIRUN=(mpirun --oversubscribe)
[[ $(id -u) -eq 0 ]] && MPIRUN+=(--allow-run-as-root)
PY=/usr/bin/python3
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# run NAME RANKS THREADS: one run, /usr/bin/time per rank into time.NAME.<rank> ("wall user sys maxrss_kB").
run() {
  local name=$1 ranks=$2 threads=$3
  rm -f time."$name".*
  local cmd=(sh -c '/usr/bin/time -f "%e %U %S %M" -o "time.$0.${OMPI_COMM_WORLD_RANK:-0}" "$@"' "$name"
             "$LGRECO" "${ARGS[@]}" --threads "$threads" -o "s.$name.json")
  if [[ $ranks -eq 1 ]]; then "${cmd[@]}" > "sum.$name.json"; else "${MPIRUN[@]}" -np "$ranks" "${cmd[@]}" > "sum.$name.json"; fi
  $PY - "$name" "$ranks" "$threads" <<'EOF'
import json, sys
name, ranks, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
summary = json.load(open(f"sum.{name}.json"))
layout = summary["provenance"].get("replay")
print(f"{ranks} rank(s) x {threads} thread(s): replay {summary['replay']['seconds']:.1f} s"
      + (f", estimated cost max/mean {layout['estimated_cost_max_over_mean']:.3f}, measured busy max/mean {layout['busy_max_over_mean']:.3f}" if layout else ""))
for r in range(ranks):
    wall, user, sys_, rss = open(f"time.{name}.{r}").read().split()
    per = layout["per_rank"][r] if layout else None
    extra = f", {len(per['layers'])} layers, {100 * per['estimated_cost_share']:.1f}% of the cost, busy {per['busy_s']:.1f} s" if per else ""
    print(f"  rank {r}: wall {float(wall):.1f} s, cpu {float(user) + float(sys_):.1f} s, peak RSS {int(rss) / 1024:.0f} MiB{extra}")
EOF
}

echo "== memory: 1 thread per rank"
run 1x1 1 1
run 2x1 2 1
run 3x1 3 1
echo "== time: ranks x threads = 2"
for rep in 1 2; do
  run "1x2-$rep" 1 2
  run "2x1-$rep" 2 1
done
echo "== identical schedules (provenance aside)"
$PY - <<'EOF'
import glob, json
def strip(p, how_it_ran=False):
    d = json.load(open(p)); d.pop("provenance")
    if how_it_ran:  # the thread count and the concurrency it allowed are recorded in the config
        for k in ("threads", "replay_peak_concurrent_layers", "replay_peak_concurrent_layer_bytes"):
            d["config"].pop(k)
    return d
for p in sorted(glob.glob("s.*.json")):
    same_threads = ".1x2" not in p
    assert strip(p, not same_threads) == strip("s.1x1.json", not same_threads), p
    print(f"  {p}: same as s.1x1.json" + ("" if same_threads else " apart from the thread count in its config"))
EOF
echo "== rate and projection"
COST=$("$LGRECO" scaleout --trace "$TRACE" --family powersgd --period 4 --acc-steps 2 --threads 1 --ranks 1 --format json |
       $PY -c 'import json,sys; print(json.load(sys.stdin)["estimated_cost_byte_passes"])')
# CPU seconds of the one-process, one-thread run: on a shared machine its wall time includes waiting.
CPU=$(awk '{print $2 + $3}' time.1x1.0)
RATE=$($PY -c "print($CPU / $COST)")
echo "  GPT-2 estimated cost $COST byte-passes, $CPU CPU s on one thread: rate $RATE s per byte-pass"
"$LGRECO" scaleout --model llama2-7b --steps 20 --period 10 --acc-steps 10 --family powersgd --threads 1 --ranks 1,8,64 --rate "$RATE"
[[ ${KEEP:-0} == 1 ]] || rm -f "$TRACE"
