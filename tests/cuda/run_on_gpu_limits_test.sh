#!/usr/bin/env bash
# run_on_gpu.sh's time limits, without a GPU: stand-in test binaries (one that hangs) in a build
# directory of their own. A hung step must fail its row as timed out and the rest still run
# (--step-timeout); --time-limit must skip what no longer fits; a TERM to the script must still
# print the table, and take the hung step's processes with it.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'pkill -f "sleep 61[.]25" 2>/dev/null; rm -rf "$tmp"' EXIT
b=$tmp/build
mkdir -p "$b"
printf '#!/bin/sh\nsleep 61.25\n' >"$b/cuda_decode_host_test"
printf '#!/bin/sh\necho "[  PASSED  ] 1 test."\n' >"$b/cuda_int8_codes_host_test"
printf '#!/bin/sh\necho "[  PASSED  ] 2 tests."\n' >"$b/cuda_ops_test"
chmod +x "$b"/*
bad=0
check() {  # description, condition...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; bad=1; fi
}
args=("$tmp/no-refdata" --build "$b" --no-build --no-bench --quick)
script() { "$root/tests/cuda/run_on_gpu.sh" "${args[@]}" "$@"; }

# 1. A step that hangs fails as timed out; the next steps run.
t0=$SECONDS
out=$(script --step-timeout 2 2>&1); rc=$?
check "exit status 1 after a hung step (got $rc)" [ "$rc" = 1 ]
check "the hung step's row says timed out" grep -qE '^\| block decoders .*\| FAIL +\| timed out after 2 s' <<<"$out"
check "the steps after it ran" grep -qE '^\| int8 weight codes .*\| ok +\| \[  PASSED  \] 1 test' <<<"$out"
check "the table printed" grep -q '^| check ' <<<"$out"
check "within 30 s (took $((SECONDS - t0)) s)" [ $((SECONDS - t0)) -lt 30 ]
check "no process of the hung step left" bash -c '! pgrep -f "sleep 61[.]25" >/dev/null'

# 2. --time-limit: the hung step gets what is left, the others are skipped once it is spent.
out=$(script --time-limit 2 2>&1); rc=$?
check "exit status 1 under --time-limit (got $rc)" [ "$rc" = 1 ]
check "the hung step timed out at the limit" grep -qE '^\| block decoders .*\| FAIL +\| timed out after [12] s' <<<"$out"
check "later steps skipped at the limit" grep -qE '^\| int8 weight codes .*\| skip +\| --time-limit 2 s reached' <<<"$out"

# 3. TERM while a step hangs: the rows so far, an interrupted row, exit 130, no leftovers.
"$root/tests/cuda/run_on_gpu.sh" "${args[@]}" --step-timeout 100 >"$tmp/out3" 2>&1 &
pid=$!
sleep 2
kill -TERM "$pid"
wait "$pid"; rc=$?
sleep 1
check "exit status 130 after TERM (got $rc)" [ "$rc" = 130 ]
check "an interrupted row and the table" grep -qE '^\| interrupted .*\| FAIL' "$tmp/out3"
check "the table printed after TERM" grep -q '^| check ' "$tmp/out3"
check "no process of the hung step left after TERM" bash -c '! pgrep -f "sleep 61[.]25" >/dev/null'
exit $bad
