#!/usr/bin/env bash
# Streaming benchmark of traces: writes a synthetic GPT-2 small trace of 8 steps in float16 (~1.7 GB)
# under /tmp, reads it fully back, prints throughput and peak resident memory of each phase, and
# deletes the file. Usage: bench/trace_stream.sh [BUILD_DIR] [MODEL] [STEPS] [DTYPE]
set -euo pipefail
BUILD=${1:-build-bench}
MODEL=${2:-gpt2}
STEPS=${3:-8}
DTYPE=${4:-float16}
BIN="$BUILD/bench/lgreco_bench_trace_stream"
FILE=$(mktemp -u /tmp/lgreco-bench-XXXXXX.h5)
trap 'rm -f "$FILE" "$FILE".tmp.*' EXIT
for mode in write read; do
  /usr/bin/time -v "$BIN" "$mode" "$FILE" "$MODEL" "$STEPS" "$DTYPE" 2> "$FILE.time.$mode" || { cat "$FILE.time.$mode"; exit 1; }
  grep -E "Maximum resident set size|Elapsed \(wall|User time|System time" "$FILE.time.$mode" | sed "s/^/  $mode: /"
  rm -f "$FILE.time.$mode"
done
