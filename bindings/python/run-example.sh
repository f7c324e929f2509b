#!/usr/bin/env bash
# bindings/python/run-example.sh MODEL PROMPT N (nothing to build: ctypes loads $IKLLM_LIB).
here="$(cd "$(dirname "$0")" && pwd)"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 "$here/examples/generate.py" "$@"
