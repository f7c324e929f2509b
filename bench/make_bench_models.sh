#!/usr/bin/env bash
# Makes the benchmark models of the speed issue (random weights, real shapes; not committed):
#   llama-1b -> Q4_0, Q8_0, IQ4_XS, IQ4_K, Q4_K_M; qwen3moe-a3b-8l -> Q4_K_M; deepseek2-v3-4l -> Q8_0, IQ4_K
# usage: bench/make_bench_models.sh BUILD_DIR OUT_DIR [SHARED_DIR] [model ...]
# The f32 originals are deleted after quantizing (qwen3moe-a3b-8l is ~19 GB in f32).
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; shared=${3:-$(dirname "$0")/../../shared}
shift $(( $# >= 3 ? 3 : $# ))
models=("$@"); [ ${#models[@]} -eq 0 ] && models=(llama-1b deepseek2-v3-4l qwen3moe-a3b-8l)
vocab="$shared/refdata/vocab/ggml-vocab-llama-spm.gguf"
mkdir -p "$out"
for m in "${models[@]}"; do
  case $m in
    llama-1b) types="Q4_0 Q8_0 IQ4_XS IQ4_K Q4_K_M" ;;
    qwen3moe-a3b-8l) types="Q4_K_M" ;;
    deepseek2-v3-4l) types="Q8_0 IQ4_K" ;;
    *) echo "unknown model $m" >&2; exit 2 ;;
  esac
  /usr/bin/python3 "$shared/tools/make_models.py" "$vocab" "$out" --big "$m"
  for t in $types; do "$build/ikllm" quantize "$out/$m-f32.gguf" "$out/$m-$t.gguf" "$t" >/dev/null; done
  rm -f "$out/$m-f32.gguf"
done
ls -la "$out"
