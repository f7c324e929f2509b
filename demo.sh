#!/usr/bin/env bash
# Builds ikllm and streams text. With no argument it makes the small demo model first;
# `./demo.sh MODEL.gguf ["prompt"]` runs a model of yours instead.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIKLLM_BUILD_TESTS=OFF -DIKLLM_BUILD_BENCH=OFF >/dev/null
cmake --build build --target ikllm_cli ikllm-make-demo -j"$(nproc)"
model="${1:-}"
if [ -z "$model" ]; then
  model=build/ikllm-demo.gguf
  [ -f "$model" ] || build/ikllm-make-demo "$model"
fi
prompt="${2:-Once upon a time}"
exec build/ikllm run -m "$model" -p "$prompt" -n 64 --temp 0.7 --seed 42
