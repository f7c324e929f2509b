#!/usr/bin/env bash
# CTest check of the shipped demo model (samples/models/ikllm-demo.gguf):
#  1. it loads and is under 4 MiB;
#  2. `ikllm perplexity` on the committed held-out text equals the PyTorch-evaluated perplexity recorded in
#     ikllm-demo.json within 1%;
#  3. greedy `ikllm run` writes word-like English: >= 80% of its words are in the training corpus's word list.
# Usage: check_demo_model.sh IKLLM_BINARY MODELS_DIR
set -euo pipefail
ikllm="$1"
dir="$2"
model="$dir/ikllm-demo.gguf"
fail() { echo "FAIL: $*" >&2; exit 1; }

size=$(stat -c %s "$model")
[ "$size" -lt $((4 * 1024 * 1024)) ] || fail "model is $size bytes, not under 4 MiB"
"$ikllm" info -m "$model" >/dev/null || fail "model does not load"
echo "size $size bytes, loads"

ctx=$(sed -n 's/.*"ctx": \([0-9]*\).*/\1/p' "$dir/ikllm-demo.json" | head -1)
want=$(sed -n 's/.*"ppl_torch_dequantized": \([0-9.eE+-]*\).*/\1/p' "$dir/ikllm-demo.json" | head -1)
[ -n "$ctx" ] && [ -n "$want" ] || fail "manifest lacks ctx / ppl_torch_dequantized"
got=$("$ikllm" perplexity -m "$model" -f "$dir/ikllm-demo-heldout.txt" -c "$ctx" -t 2 2>/dev/null |
      sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
[ -n "$got" ] || fail "no perplexity printed"
awk -v g="$got" -v w="$want" 'BEGIN { d = (g - w) / w; if (d < 0) d = -d;
  printf "perplexity: ikllm %.4f, PyTorch %.4f, relative difference %.5f\n", g, w, d; exit d <= 0.01 ? 0 : 1 }' ||
  fail "perplexity differs by more than 1%"

prompt="The secret of life is"
out=$("$ikllm" run -m "$model" -p "$prompt" -n 48 --temp 0 -t 2 2>/dev/null)
gen="${out#"$prompt"}"
echo "greedy: $out"
printf '%s\n' "$gen" | awk -v words="$dir/ikllm-demo-words.txt" '
  BEGIN { while ((getline w < words) > 0) known[w] = 1 }
  { for (i = 1; i <= NF; ++i) {
      w = tolower($i); gsub(/^[^a-z]+|[^a-z]+$/, "", w)
      if (w == "") continue
      n++; if (w in known) k++ } }
  END { printf "words: %d of %d in the training vocabulary\n", k, n
        exit (n >= 5 && k >= 0.8 * n) ? 0 : 1 }' || fail "greedy output is not word-like"
echo "OK"
