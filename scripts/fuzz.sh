#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ for a while (what `make fuzz` calls after building them):
#   scripts/fuzz.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]   (default: BUILD_DIR/fuzz/targets.txt,
#   which fuzz/CMakeLists.txt writes: every target)
# Each target starts from its stored seeds (fuzz/corpus/<target>/, plus tests/data/network/ for the
# corpus reader) and grows a working corpus in BUILD_DIR/fuzz-work/<target>/ that later runs resume
# from; the seeds in the source tree are never written. An input that breaks the contract of
# fuzz/harness.hpp (crash, sanitizer report, escaping exception, multi-line or anonymous message,
# >10 s on one input, >2 GiB) is saved as BUILD_DIR/fuzz-work/<target>-crash-<sha1> (-timeout-, -oom-,
# -leak- for those), the remaining targets still run, and the script exits 1 naming every such file.
# To keep one as a regression test, minimise it (fuzz_<target> -minimize_crash=1 -runs=10000 FILE)
# and copy it into fuzz/corpus/<target>/: the CTest test fuzz_replay_<target> then replays it in
# every `make test`.
set -uo pipefail
build=$1 seconds=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
  [ -f "$build/fuzz/targets.txt" ] || { echo "fuzz: $build/fuzz/targets.txt is missing (configure with -DLGRECO_FUZZ=ON)" >&2; exit 2; }
  mapfile -t targets < "$build/fuzz/targets.txt"
  set -- "${targets[@]}"
fi
work=$build/fuzz-work
mkdir -p "$work"
failed=()
for t in "$@"; do
  exe=$build/fuzz/fuzz_$t
  [ -x "$exe" ] || { echo "fuzz: $exe is not built" >&2; exit 2; }
  mkdir -p "$work/$t"
  seeds=("$root/fuzz/corpus/$t")
  [ "$t" = corpus ] && seeds+=("$root/tests/data/network")
  dict=()
  case $t in *_json) dict=(-dict="$root/fuzz/json.dict") ;; esac
  echo "fuzz: $t for ${seeds[*]/#$root\//} ${seconds}s"
  log=$work/$t.log
  if "$exe" "$work/$t" "${seeds[@]}" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/$t-" >"$log" 2>&1; then
    grep -E '^(stat::number_of_executed_units|stat::new_units_added)' "$log" | tr '\n' ' '
    echo "$(grep -c . <(ls "$work/$t")) inputs in $work/$t"
  else
    echo "fuzz: $t FAILED; the log is $log:" >&2
    grep -E 'ERROR|contract broken|SUMMARY|Test unit written' "$log" | head -5 >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: contract broken by ${failed[*]} (inputs: $(ls "$work"/*-crash-* "$work"/*-timeout-* "$work"/*-oom-* "$work"/*-leak-* 2>/dev/null | tr '\n' ' '))" >&2
  exit 1
fi
echo "fuzz: ${#@} targets, no contract broken in ${seconds}s each"
