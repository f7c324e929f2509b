#!/usr/bin/env bash
# Builds and runs the C# binding's tests with Mono; exit 77 when mcs or mono is not installed.
set -uo pipefail
command -v mono >/dev/null && command -v mcs >/dev/null || { echo "mono/mcs not installed: skipped"; exit 77; }
out="$("$(dirname "$0")/build.sh")" || exit $?
exec mono --debug "$out/Tests.exe"
