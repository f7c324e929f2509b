#!/usr/bin/env bash
# run-example.sh MODEL PROMPT N: builds (if needed) and runs examples/generate.rs, which prints the
# greedy continuation exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0` does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
command -v cargo >/dev/null || { echo "skipped: cargo not found" >&2; exit 77; }
(cd "$here" && cargo build --offline -q --example generate)
exec "$CARGO_TARGET_DIR/debug/examples/generate" "$@"
