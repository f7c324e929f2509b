#!/usr/bin/env bash
# Reproduces samples/models/ikllm-demo.gguf from Debian packages, end to end:
#   corpus -> tokenizer -> training (MINUTES of wall time) -> F32 GGUF -> engine-vs-PyTorch checks
#   -> Q8_0 via `ikllm quantize` -> perplexity check -> manifest, loss plot, word list, held-out text.
# Usage: tools/train-demo/make_demo_model.sh [MINUTES]
#   env SKIP_TRAIN=1 reuses build/train-demo/{data,run} (e.g. to export a checkpoint of a running training)
# Needs: fortunes fortunes-min python3-torch python3-sentencepiece python3-matplotlib libopenblas0-pthread,
# and build/ikllm (ninja -C build ikllm_cli).
set -euo pipefail
minutes="${1:-80}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$root/build/train-demo"
ikllm="$root/build/ikllm"
ship="$root/samples/models"
py=/usr/bin/python3                     # Debian's interpreter, where python3-torch lives
quant=Q8_0
prompt="The secret of life is"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-2}"
cd "$root/tools/train-demo"

if [ "${SKIP_TRAIN:-0}" != 1 ]; then
  $py prepare_data.py --out "$work/data"
  $py train_tokenizer.py --data "$work/data"
  $py train.py --data "$work/data" --out "$work/run" --minutes "$minutes"
fi
$py export_gguf.py --ckpt "$work/run/ckpt.pt" --tokenizer "$work/data/tokenizer.model" --out "$work/ikllm-demo-f32.gguf"
$py verify_logits.py --ckpt "$work/run/ckpt.pt" --gguf "$work/ikllm-demo-f32.gguf" \
  --tokenizer "$work/data/tokenizer.model" --text "$work/data/heldout.txt" --ikllm "$ikllm" --json-out "$work/verify.json"
mkdir -p "$ship"
"$ikllm" quantize "$work/ikllm-demo-f32.gguf" "$ship/ikllm-demo.gguf" "$quant" >/dev/null
cp "$work/data/heldout.txt" "$ship/ikllm-demo-heldout.txt"
$py eval_perplexity.py --gguf "$ship/ikllm-demo.gguf" --ckpt "$work/run/ckpt.pt" \
  --tokenizer "$work/data/tokenizer.model" --text "$ship/ikllm-demo-heldout.txt" --ikllm "$ikllm" \
  --json-out "$work/eval.json"
$py make_wordlist.py --text "$work/data/train.txt" --out "$ship/ikllm-demo-words.txt"
$py plot_loss.py --csv "$work/run/loss.csv" --out "$ship/ikllm-demo-loss.png"
"$ikllm" run -m "$ship/ikllm-demo.gguf" -p "$prompt" -n 48 --temp 0 -t 2 2>/dev/null >"$work/sample.txt"
$py write_manifest.py --work "$work" --model "$ship/ikllm-demo.gguf" --quant "$quant" \
  --out "$ship/ikllm-demo.json" --reproduce "tools/train-demo/make_demo_model.sh $minutes" \
  --sample-prompt "$prompt" --sample-output "$work/sample.txt"
echo "wrote $ship/ikllm-demo.gguf ($(stat -c %s "$ship/ikllm-demo.gguf") bytes) and its manifest"
