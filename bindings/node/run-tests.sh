#!/usr/bin/env bash
# Builds the addon and runs the Node binding's tests (node:test); exit 77 without node or g++.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v node >/dev/null || { echo "node not installed: skipped"; exit 77; }
addon="$("$here/build.sh")" || exit $?
cd "$here" && IKLLM_NODE_ADDON="$addon" exec node --test test/
