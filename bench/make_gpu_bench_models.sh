#!/usr/bin/env bash
# Makes the GPU benchmark models in seconds with ikllm-make-bench (tools/make_bench: real shapes,
# quantized directly, weights tiled from a few quantized rows, synthetic SPM vocabulary):
#   llama-8b -> q4_0, q8_0, iq4_k; qwen3moe-a3b-8l -> q4_K_M; deepseek2-v3-4l -> iq4_k
# usage: bench/make_gpu_bench_models.sh OUT_DIR [MAKE_BENCH_BINARY]
#   the binary defaults to $IKLLM_MAKE_BENCH, else build/ikllm-make-bench next to this script's repo.
#   VOCAB_GGUF=PATH copies that file's tokenizer (see ikllm-make-bench --help).
# Files that already exist are skipped (delete them to remake). About 16 GB in all.
# IKLLM_BENCH_MODELS="SHAPE:TYPE ..." makes only those (run_on_gpu.sh --quick).
set -euo pipefail
out=${1:?usage: make_gpu_bench_models.sh OUT_DIR [MAKE_BENCH_BINARY]}
gen=${2:-${IKLLM_MAKE_BENCH:-$(cd "$(dirname "$0")/.." && pwd)/build/ikllm-make-bench}}
[ -x "$gen" ] || { echo "make_gpu_bench_models.sh: no executable '$gen' (pass it or set IKLLM_MAKE_BENCH)" >&2; exit 2; }
extra=()
[ -n "${VOCAB_GGUF:-}" ] && extra=(--vocab-gguf "$VOCAB_GGUF")
mkdir -p "$out"
for spec in ${IKLLM_BENCH_MODELS:-llama-8b:q4_0 llama-8b:q8_0 llama-8b:iq4_k qwen3moe-a3b-8l:q4_K_M deepseek2-v3-4l:iq4_k}; do
  shape=${spec%%:*}; type=${spec#*:}
  f="$out/$shape-$type.gguf"
  if [ -s "$f" ]; then echo "exists: $f"; continue; fi
  "$gen" "$shape" "$type" "$f" "${extra[@]}"
done
ls -la "$out"
