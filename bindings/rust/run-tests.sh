#!/usr/bin/env bash
# Tests of the Rust binding: generated raw layer up to date, cargo test (API coverage, logits and
# greedy generation against the C CLI, error cases, Send/Sync), and the example against
# `ikllm run`. Exit 77 = skipped (no cargo, or no ../shared/refdata models).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
command -v cargo >/dev/null || { echo "skipped: cargo not found (apt-get install cargo)"; exit 77; }
[ -e "$IKLLM_LIB" ] || { echo "error: library $IKLLM_LIB not found (build the ikllm target or set IKLLM_LIB)"; exit 1; }
cd "$here"
if command -v python3 >/dev/null; then
  python3 gen/gen_sys.py --check
fi
echo "cargo: $(cargo --version), rustc: $(rustc --version)"
cargo test --offline -q -- --test-threads=2

models="$root/../shared/refdata/models"
[ -f "$models/llama-tiny-f16.gguf" ] || { echo "skipped: $models not found (model tests skipped)"; exit 77; }
cli="${IKLLM_CLI:-$(dirname "$IKLLM_LIB")/ikllm}"
for case in "llama-tiny-f16|Hello world" "qwen3-tiny-f16|The meaning of life is"; do
  m="${case%%|*}" prompt="${case#*|}"
  want="$("$cli" run -m "$models/$m.gguf" -p "$prompt" -n 32 --temp 0 2>/dev/null | od -An -tx1)"
  got="$("$here/run-example.sh" "$models/$m.gguf" "$prompt" 32 | od -An -tx1)"
  if [ "$want" != "$got" ]; then echo "FAIL: examples/generate.rs differs from ikllm run ($m, '$prompt')"; exit 1; fi
done
echo "examples/generate.rs prints what ikllm run prints (2 models)"
