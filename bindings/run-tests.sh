#!/usr/bin/env bash
# Runs the tests of the named bindings (all by default): bindings/run-tests.sh [LANG...]
# The library comes from $IKLLM_LIB (default: build/libikllm.so), the CLI from $IKLLM_CLI
# (default: build/ikllm). A binding whose toolchain is missing exits 77 and is reported skipped.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
export IKLLM_LIB="${IKLLM_LIB:-$root/build/libikllm.so}"
export IKLLM_CLI="${IKLLM_CLI:-$root/build/ikllm}"
langs=("$@")
if [ ${#langs[@]} -eq 0 ]; then
  for s in "$here"/*/run-tests.sh; do langs+=("$(basename "$(dirname "$s")")"); done
fi
failed=()
for lang in "${langs[@]}"; do
  script="$here/$lang/run-tests.sh"
  if [ ! -x "$script" ]; then echo "== $lang: no bindings/$lang/run-tests.sh"; failed+=("$lang"); continue; fi
  echo "== $lang"
  "$script"; rc=$?
  case $rc in
    0) echo "== $lang: passed" ;;
    77) echo "== $lang: skipped" ;;
    *) echo "== $lang: FAILED ($rc)"; failed+=("$lang") ;;
  esac
done
if [ ${#failed[@]} -ne 0 ]; then echo "failed: ${failed[*]}"; exit 1; fi
