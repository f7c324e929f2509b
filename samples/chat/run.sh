#!/usr/bin/env bash
# Builds and starts the chat GUI in one command: samples/chat/run.sh [MODEL.gguf]
# (installs the Debian build packages first, like ./demo.sh). Without MODEL it opens the demo
# model when samples/models/ikllm-demo.gguf exists, else the last model you used.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIKLLM_BUILD_TESTS=OFF -DIKLLM_BUILD_BENCH=OFF >/dev/null
cmake --build build --target ikllm-chat -j"$(nproc)"
model="${1:-}"
[ -z "$model" ] && [ -f samples/models/ikllm-demo.gguf ] && model=samples/models/ikllm-demo.gguf
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "run.sh: no display; start it under a virtual one with: xvfb-run -a build/samples/chat/ikllm-chat" >&2
  exit 1
fi
exec build/samples/chat/ikllm-chat ${model:+--model "$model"}
