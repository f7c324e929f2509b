#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/, generates the seed corpora and
# runs every target for SECONDS (default 60), then prints target | executions | coverage | crashes.
# Exits non-zero when any target crashed, leaked, timed out or ran out of memory; the inputs are
# saved in build-fuzz/artifacts/<target>/ and the logs in build-fuzz/logs/.
# usage: tests/fuzz/run.sh [SECONDS] [TARGET...]
# IKLLM_FUZZ_FIXED=1 (test.sh): instead of SECONDS, a fixed number of executions per target
# (about 20-30 s each on a 2-core machine) with a fixed seed, so a CI smoke is reproducible and
# only fails on a change, not on the luck of a run; long campaigns use SECONDS, or IKLLM_FUZZ_RUNS=N
# for N executions per target (the 10^7 campaign: IKLLM_FUZZ_RUNS=10000000 tests/fuzz/run.sh 0 TARGET...).
# IKLLM_FUZZ_FORK=N runs each target in libFuzzer's fork mode with N worker processes (one campaign
# whose executions are counted across its workers: a 10^7 run on all cores of a small machine).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
secs="${1:-60}"
shift || true
build="${IKLLM_FUZZ_BUILD:-$root/build-fuzz}"
targets="${*:-gguf_fuzz model_load_fuzz tokenizer_fuzz detok_fuzz utf8_stream_fuzz chat_template_fuzz grammar_fuzz json_schema_fuzz state_load_fuzz}"
jobs="$(nproc)"

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# An existing fuzz-enabled build (test.sh's sanitizer build) is reused as configured.
if ! grep -q '^IKLLM_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DIKLLM_FUZZ=ON \
    -DIKLLM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
fi
cmake --build "$build" -j"$jobs" --target $targets
"$here/make_seeds.sh" "$build/seeds" >/dev/null

# Executions per target of a fixed (reproducible) smoke.
runs_for() {
  case "$1" in
    gguf_fuzz) echo 100000 ;;
    model_load_fuzz) echo 8000 ;;
    tokenizer_fuzz) echo 40000 ;;
    detok_fuzz) echo 25000 ;;
    utf8_stream_fuzz) echo 250000 ;;
    chat_template_fuzz) echo 15000 ;;
    grammar_fuzz) echo 15000 ;;
    json_schema_fuzz) echo 40000 ;;
    state_load_fuzz) echo 3000 ;;
    *) echo 10000 ;;
  esac
}

dict_for() {
  case "$1" in
    gguf_fuzz|model_load_fuzz) echo "-dict=$here/dicts/gguf.dict" ;;
    chat_template_fuzz) echo "-dict=$here/dicts/jinja.dict" ;;
    tokenizer_fuzz) echo "-dict=$here/dicts/tokenizer.dict" ;;
    grammar_fuzz|json_schema_fuzz) echo "-dict=$here/dicts/gbnf.dict" ;;
  esac
}

# One target: fuzz for $secs, then write its table row (and the crash count) to logs/<target>.row.
run_one() {
  local t="$1" corpus="$build/corpus/$1" artifacts="$build/artifacts/$1" log="$build/logs/$1.log"
  mkdir -p "$corpus" "$artifacts" "$build/seeds/$t"
  local extra=()
  [ -d "$here/regressions/$t" ] && extra+=("$here/regressions/$t")
  local before rc execs cov crashes
  before="$(ls "$artifacts" | grep -vc '^slow-unit-' || true)"
  # New inputs go to the first directory (kept between runs); seeds and regressions are only read.
  local budget=(-max_total_time="$secs")
  if [ "${IKLLM_FUZZ_FIXED:-0}" = 1 ]; then
    # Reproducible: a fresh corpus, a fixed seed and a fixed number of executions.
    rm -rf "$corpus" && mkdir -p "$corpus"
    budget=(-runs="$(runs_for "$t")" -seed=1)
  elif [ -n "${IKLLM_FUZZ_RUNS:-}" ]; then
    budget=(-runs="$IKLLM_FUZZ_RUNS")  # a campaign of that many executions (corpus kept)
  fi
  [ -n "${IKLLM_FUZZ_FORK:-}" ] && budget+=(-fork="$IKLLM_FUZZ_FORK")
  set +e
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    "$build/tests/fuzz/$t" "${budget[@]}" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" $(dict_for "$t") "$corpus" "$build/seeds/$t" "${extra[@]}" >"$log" 2>&1
  rc=$?
  set -e
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  # Fork mode prints no final stats: its last status line counts the executions of all workers.
  [ -n "$execs" ] || execs="$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')"
  cov="$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]*' | tail -1 | cut -d' ' -f2)"
  crashes=$(( $(ls "$artifacts" | grep -vc '^slow-unit-' || true) - before ))  # slow units are not failures
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi  # died without writing an input
  printf '| %-18s | %10s | %8s | %7s |\n' "$t" "${execs:-?}" "${cov:-?}" "$crashes" >"$build/logs/$t.row"
  if [ "$crashes" -ne 0 ]; then
    echo "== $t: crash (rc $rc); log $log; inputs in $artifacts" >&2
    grep -E 'ERROR|SUMMARY|fuzz check failed|runtime error' "$log" | head -5 >&2 || true
  fi
}

# Targets run IKLLM_FUZZ_JOBS at a time (default 1: each has a core to itself on a busy machine).
mkdir -p "$build/logs"
parallel="${IKLLM_FUZZ_JOBS:-1}"
running=0
for t in $targets; do
  rm -f "$build/logs/$t.row"
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true
printf '| %-18s | %10s | %8s | %7s |\n' target executions coverage crashes
printf '|%s|%s|%s|%s|\n' "--------------------" "------------" "----------" "---------"
failed=0
for t in $targets; do
  if [ -f "$build/logs/$t.row" ]; then cat "$build/logs/$t.row"; else printf '| %-18s | (no result) |\n' "$t"; failed=1; fi
  grep -qE '\|[[:space:]]+0 \|$' "$build/logs/$t.row" 2>/dev/null || failed=1
done
exit "$failed"
