#!/usr/bin/env bash
# bindings/csharp/run-example.sh MODEL PROMPT N: builds with mcs, runs examples/Generate.cs with mono.
set -euo pipefail
out="$("$(dirname "$0")/build.sh")"
exec mono "$out/Generate.exe" "$@"
