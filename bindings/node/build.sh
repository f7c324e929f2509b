#!/usr/bin/env bash
# Builds the N-API addon with g++ against the system's node headers (no node-gyp, nothing
# downloaded). Output: $IKLLM_BUILD_DIR/bindings/node/ikllm.node inside a checkout (default
# build/), else build/ikllm.node in this folder. Exit 77 when g++ or the node headers are missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
inc="${NODE_INCLUDE_DIR:-$(dirname "$(command -v node 2>/dev/null || echo /usr/bin/node)")/../include/node}"
[ -f "$inc/node_api.h" ] || inc=/usr/include/node
[ -f "$inc/node_api.h" ] || { echo "node headers (node_api.h) not found" >&2; exit 77; }
command -v g++ >/dev/null || { echo "g++ not found" >&2; exit 77; }
if [ -f "$root/include/ikllm.h" ]; then out="${IKLLM_BUILD_DIR:-$root/build}/bindings/node"; else out="$here/build"; fi
mkdir -p "$out"
addon="$out/ikllm.node"
if [ ! -f "$addon" ] || [ -n "$(find "$here/src" -newer "$addon" -type f)" ]; then
  g++ -std=c++17 -O2 -shared -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter \
      -I"$inc" "$here/src/abi.g.cc" -o "$addon.tmp" -ldl
  mv "$addon.tmp" "$addon"
fi
echo "$addon"
