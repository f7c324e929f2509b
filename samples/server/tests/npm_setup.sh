#!/usr/bin/env bash
# Installs the pinned `openai` npm package (package.json + package-lock.json here) into $1.
# Exit 77 (skip) when npm is missing; reuses an install made from the same lock file.
set -eu
src="$(cd "$(dirname "$0")" && pwd)"
dst="$1"
command -v npm >/dev/null || { echo "SKIP: npm is not installed"; exit 77; }
mkdir -p "$dst"
if [ -d "$dst/node_modules/openai" ] && cmp -s "$src/package-lock.json" "$dst/package-lock.json"; then
  echo "openai package already installed in $dst"; exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dst/"
cd "$dst"
npm ci --no-audit --no-fund --loglevel=error
