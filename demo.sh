#!/usr/bin/env bash
# Builds the ikllm CLI and streams text from the shipped demo model (samples/models/ikllm-demo.gguf, a
# 3.4M-parameter llama trained on Debian's fortune cookies; see README "Demo model").
# `./demo.sh MODEL.gguf ["prompt"]` runs a model of yours instead.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIKLLM_BUILD_TESTS=OFF -DIKLLM_BUILD_BENCH=OFF >/dev/null
cmake --build build --target ikllm_cli -j"$(nproc)"
model="${1:-samples/models/ikllm-demo.gguf}"
prompt="${2:-A wise man once said}"
exec build/ikllm run -m "$model" -p "$prompt" -n 64 --temp 0.7 --seed 42
