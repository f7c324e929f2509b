#!/usr/bin/env bash
# run-example.sh MODEL PROMPT N: builds (if needed) and runs examples/generate.go, which prints the
# greedy continuation exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0` does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
command -v go >/dev/null || { echo "skipped: go not found" >&2; exit 77; }
mkdir -p "$go_out"
(cd "$here" && go build -o "$go_out/generate" ./examples/generate.go)
exec "$go_out/generate" "$@"
