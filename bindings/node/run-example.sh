#!/usr/bin/env bash
# bindings/node/run-example.sh MODEL PROMPT N: builds the addon if needed, runs examples/generate.js.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
addon="$("$here/build.sh")"
IKLLM_NODE_ADDON="$addon" exec node "$here/examples/generate.js" "$@"
