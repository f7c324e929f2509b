#!/usr/bin/env bash
# bindings/run-example.sh LANG MODEL PROMPT N: builds (if needed) and runs LANG's examples/generate.*,
# which prints the greedy continuation exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0` does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -ne 4 ]; then echo "usage: bindings/run-example.sh LANG MODEL PROMPT N" >&2; exit 2; fi
lang="$1"; shift
script="$here/$lang/run-example.sh"
[ -x "$script" ] || { echo "run-example.sh: no binding '$lang' (no $script)" >&2; exit 2; }
export IKLLM_LIB="${IKLLM_LIB:-$(dirname "$here")/build/libikllm.so}"
exec "$script" "$@"
