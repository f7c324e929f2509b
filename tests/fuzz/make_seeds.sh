#!/usr/bin/env bash
# Generates the fuzz seed corpora from ../shared/refdata: make_seeds.sh [OUT_DIR] [SHARED_DIR]
# (defaults: build-fuzz/seeds and ../shared next to the repository). See make_seeds.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build-fuzz/seeds}"
shared="${2:-${IKLLM_SHARED_DIR:-$root/../shared}}"
rm -rf "$out"
mkdir -p "$out"
python3 "$here/make_seeds.py" "$shared" "$out"
for d in "$out"/*/; do
  printf '%-20s %4d seeds, %6d KiB\n' "$(basename "$d")" "$(ls "$d" | wc -l)" "$(du -sk "$d" | cut -f1)"
done
