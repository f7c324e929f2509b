#!/usr/bin/env bash
# Runs the Python binding's tests (stdlib unittest) against $IKLLM_LIB; exit 77 without python3.
here="$(cd "$(dirname "$0")" && pwd)"
[ -x /usr/bin/python3 ] || { echo "python3 not installed: skipped"; exit 77; }
cd "$here" && PYTHONPATH="$here" PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 -m unittest discover -s tests -v
