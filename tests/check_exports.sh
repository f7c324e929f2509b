#!/usr/bin/env bash
# The shared library must export only ikllm_* symbols and carry the ABI major in its SONAME.
set -euo pipefail
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^ikllm_' || true)
if [ -n "$bad" ]; then echo "unexpected exported symbols:"; echo "$bad" | head; exit 1; fi
readelf -d "$lib" | grep -q 'SONAME.*libikllm\.so\.0' || { echo "SONAME lacks the ABI major"; exit 1; }
echo "exports: ok"
