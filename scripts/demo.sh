#!/usr/bin/env bash
# The demo job: run by `make demo` with the path of the built lgreco binary.
set -euo pipefail
LGRECO=${1:?usage: demo.sh path/to/lgreco}
"$LGRECO" info
