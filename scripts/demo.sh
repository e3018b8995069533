#!/usr/bin/env bash
# The demo job: run by `make demo` with the path of the built lgreco binary.
set -euo pipefail
LGRECO=${1:?usage: demo.sh path/to/lgreco}
"$LGRECO" info
echo
"$LGRECO" models
echo
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lgreco-demo-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# A small synthetic ResNet-50 trace: 4 steps in 2 bursts of consecutive steps, stored as float16.
"$LGRECO" trace synth --model resnet50 --steps 4 --bursts 2 --dtype float16 --seed 1 -o "$WORK/resnet50.h5"
"$LGRECO" trace validate "$WORK/resnet50.h5"
"$LGRECO" trace info "$WORK/resnet50.h5"
