#!/usr/bin/env bash
# Tests of the Go binding: generated raw layer up to date and compatible with include/ikllm.h,
# go vet, go test (API coverage, logits and greedy generation against the C CLI, error cases,
# context cancellation) and the example against `ikllm run`.
# Exit 77 = skipped (no go toolchain, or no ../shared/refdata models).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
command -v go >/dev/null || { echo "skipped: go not found (apt-get install golang-go)"; exit 77; }
[ -e "$IKLLM_LIB" ] || { echo "error: library $IKLLM_LIB not found (build the ikllm target or set IKLLM_LIB)"; exit 1; }
cd "$here"
if command -v python3 >/dev/null; then
  python3 gen/gen_go.py --check
fi
# The generated declarations must agree with the real header (a conflict is a compile error).
printf '#include "ikllm_gen.h"\n#include "ikllm.h"\n' | ${CC:-cc} -fsyntax-only -I"$here" -I"$root/include" -x c -
echo "$(go version)"
go vet .
go test -count=1 .

models="$root/../shared/refdata/models"
[ -f "$models/llama-tiny-f16.gguf" ] || { echo "skipped: $models not found (model tests skipped)"; exit 77; }
cli="${IKLLM_CLI:-$(dirname "$IKLLM_LIB")/ikllm}"
for case in "llama-tiny-f16|Hello world" "qwen3-tiny-f16|The meaning of life is"; do
  m="${case%%|*}" prompt="${case#*|}"
  want="$("$cli" run -m "$models/$m.gguf" -p "$prompt" -n 32 --temp 0 2>/dev/null | od -An -tx1)"
  got="$("$here/run-example.sh" "$models/$m.gguf" "$prompt" 32 | od -An -tx1)"
  if [ "$want" != "$got" ]; then echo "FAIL: examples/generate.go differs from ikllm run ($m, '$prompt')"; exit 1; fi
done
echo "examples/generate.go prints what ikllm run prints (2 models)"
