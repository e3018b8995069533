#!/usr/bin/env bash
# One command for the GPU machine: configure the kernels-only tree with CUDA, build, run the GPU
# tests (ctest -L gpu, LGRECO_REQUIRE_GPU=1), the GPU benchmark with its measured device profile and
# the torch.topk comparison; write everything and a summary into RESULTS_DIR.
# Needs only what this repository carries plus nvcc, CMake, ninja and (for the comparison) PyTorch.
# Every step is bounded with `timeout`; the whole run stays under 8 minutes when the tests pass
# (failed GPU tests rerun under compute-sanitizer until 330 s have passed, 40 s each at most).
#   usage: scripts/gpu-check.sh RESULTS_DIR
set -uo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: scripts/gpu-check.sh RESULTS_DIR" >&2
  exit 2
fi
mkdir -p "$1"
RESULTS=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${LGRECO_GPU_BUILD:-$ROOT/build-gpu}
ARCH=${LGRECO_CUDA_ARCH:-90}          # explicit, never "native"; 90 = H100/H200
PY=${PYTHON:-python3}
JOBS=$(nproc 2>/dev/null || echo 4)
MAX_LOG2=${LGRECO_BENCH_MAX_LOG2:-25}
t0=$(date +%s)
declare -A rc

step() {  # step NAME TIMEOUT_S LOGFILE COMMAND...
  local name=$1 limit=$2 logf=$3
  shift 3
  echo "[$(($(date +%s) - t0))s] $name: $*" | tee -a "$RESULTS/gpu-check.log"
  timeout --kill-after=10 "$limit" "$@" >"$RESULTS/$logf" 2>&1
  rc[$name]=$?
  echo "[$(($(date +%s) - t0))s] $name: exit ${rc[$name]} (log $logf)" | tee -a "$RESULTS/gpu-check.log"
}

: >"$RESULTS/gpu-check.log"
nvidia-smi >"$RESULTS/nvidia-smi.txt" 2>&1 || true
step configure 60 configure.log cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLGRECO_KERNELS_ONLY=ON -DLGRECO_CUDA=ON -DLGRECO_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH"
if [[ ${rc[configure]} -eq 0 ]]; then
  step build 150 build.log cmake --build "$BUILD" -j "$JOBS"
else
  rc[build]=1
fi
if [[ ${rc[build]} -eq 0 ]]; then
  step tests 130 ctest-gpu.log env LGRECO_REQUIRE_GPU=1 ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 120
  # A GPU test that failed runs once more under compute-sanitizer (memcheck), so that one session
  # on the GPU machine brings back the faulting kernel and address along with the failure.
  CS=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/usr/local/cuda}"/{bin,compute-sanitizer}/compute-sanitizer 2>/dev/null | head -1)
  if [[ ${rc[tests]} -ne 0 && -n $CS ]]; then
    for t in $(sed -n 's/^[[:space:]]*[0-9]* - \(lgreco_gpu_[a-z_]*\) (.*/\1/p' "$RESULTS/ctest-gpu.log"); do
      (( $(date +%s) - t0 < 330 )) || break   # leave the benchmarks their time
      exe=$(find "$BUILD/tests" -type f -name "$t" | head -1)
      [[ -n $exe ]] && step "memcheck-$t" 40 "memcheck-$t.log" env LGRECO_REQUIRE_GPU=1 \
        "$CS" --tool memcheck --error-exitcode 99 "$exe"
    done
  fi
  step bench 90 bench.log "$BUILD/bench/gpu/lgreco_bench_gpu" --out "$RESULTS/bench.json" \
    --profile "$RESULTS/device-profile.json" --max-log2 "$MAX_LOG2"
else
  rc[tests]=1
  rc[bench]=1
fi
step torch 45 torch_topk.log "$PY" "$ROOT/bench/gpu/torch_topk.py" --out "$RESULTS/torch_topk.json" --max-log2 "$MAX_LOG2"
steps=""
for k in configure build tests bench torch; do steps+="$k=${rc[$k]:-1} "; done
"$PY" "$ROOT/bench/gpu/summarize.py" --results "$RESULTS" --steps "$steps"
status=$?
echo "[$(($(date +%s) - t0))s] done; summary in $RESULTS/summary.txt" | tee -a "$RESULTS/gpu-check.log"
exit $status
