#!/usr/bin/env bash
# Runs the five language bindings' tests (bindings/run-tests.sh) against the AddressSanitizer +
# UBSan build of libikllm.so, with the clang ASan runtime preloaded into every process of each
# language's run-tests.sh except its compilers and linkers (the interpreters and test programs are
# not instrumented: the runtime must be there before the instrumented library can load at all),
# and prints a per-language summary. Issue 9 (hardening): the bindings under ASan.
#   bindings/run-tests-asan.sh [ASAN_BUILD_DIR] [LANG...]
# ASAN_BUILD_DIR: $IKLLM_ASAN_BUILD, else build-asan-all (configured with -DIKLLM_SANITIZE=ON and
# clang; build its `ikllm` target first, nothing is built here). The CLI the tests compare against
# is $IKLLM_CLI, else the release build/ikllm: the ASan build's CLI links the static ASan runtime,
# which refuses to start beside the preloaded shared one. Logs: ASAN_BUILD_DIR/bindings-asan/LANG.log.
#
# ASAN_OPTIONS (the same for all five hosts; UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1):
#   halt_on_error=1 abort_on_error=0: the first report ends the process with a non-zero exit code,
#     which fails the test that ran it;
#   detect_leaks=1: LeakSanitizer on everywhere - a libikllm allocation left at a host's exit fails;
#   malloc_context_size=2: keeps only the allocating frame, so that the LSan suppressions below
#     (memory that bash, python3, node, mono, go, cargo never free at exit: matched by the host's
#     module path) match only allocations made by the host itself, never a libikllm allocation
#     reached from the host. To diagnose a report, rerun with a larger malloc_context_size (30).
# Not needed (checked 2026-11-27): handle_segv=0 / allow_user_segv_handler=1 (Go and Mono install
# their SIGSEGV handlers after ASan's, which lets them), detect_odr_violation=0,
# verify_asan_link_order=0 (the runtime is preloaded, hence first).
# The set actually used is printed per language in the summary.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="${IKLLM_ASAN_BUILD:-$root/build-asan-all}"
if [ $# -gt 0 ] && [ -d "$1" ]; then build="$1"; shift; fi
build="$(cd "$build" 2>/dev/null && pwd || echo "$build")"
lib="$build/libikllm.so"
[ -e "$lib" ] || { echo "error: $lib not found (ninja -C $build ikllm)"; exit 1; }
nm -D "$lib" 2>/dev/null | grep " U __asan_init" >/dev/null || { echo "error: $lib is not ASan-instrumented"; exit 1; }
rt="${IKLLM_ASAN_RUNTIME:-$(clang -print-file-name=libclang_rt.asan-x86_64.so 2>/dev/null)}"
[ -f "$rt" ] || { echo "error: clang ASan runtime not found (set IKLLM_ASAN_RUNTIME)"; exit 1; }
cli="${IKLLM_CLI:-$root/build/ikllm}"
[ -x "$cli" ] || { echo "error: CLI $cli not found (build the release ikllm_cli or set IKLLM_CLI)"; exit 1; }

langs=("$@")
[ ${#langs[@]} -eq 0 ] && langs=(python node go csharp rust)
opts_for() { echo "abort_on_error=0:halt_on_error=1:malloc_context_size=2:detect_leaks=1"; }
logs="$build/bindings-asan"
mkdir -p "$logs"
# Allocations made directly by a host program's own code (module path), left at its exit.
supp="$logs/lsan-hosts.supp"
printf '%s\n' 'leak:^/usr/bin/' 'leak:^/usr/lib/gcc/' 'leak:^/usr/libexec/' 'leak:^/usr/lib/go-' 'leak:/libbfd-' \
  'leak:/.rustup/toolchains/' 'leak:/.cargo/bin/' 'leak:/.pyenv/versions/' > "$supp"
# The compilers and linkers the tests call (cgo, rustc and its linker, the fake-library tests) run
# without the runtime: ld's plugins leak from modules unloaded before exit, which no suppression
# can name; rustc exits silently under it (its jemalloc); and nothing they run is libikllm.
wrap="$logs/no-preload-bin"
mkdir -p "$wrap"
for t in cc gcc c++ g++ rustc rustdoc; do
  real="$(command -v "$t")" || continue
  printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "$real" > "$wrap/$t"
  chmod +x "$wrap/$t"
done
summary=() failed=()
for lang in "${langs[@]}"; do
  opts="$(opts_for "$lang")"
  log="$logs/$lang.log"
  # Tool-built parts that need no preload are built first, outside it (the node addon via g++).
  if [ "$lang" = node ] && command -v node >/dev/null; then
    IKLLM_BUILD_DIR="$build" "$here/node/build.sh" >/dev/null
  fi
  echo "== $lang (ASAN_OPTIONS=$opts)"
  t0=$SECONDS
  # Go and Rust link test binaries against libikllm.so, whose __asan_*/__ubsan_* references the
  # preloaded runtime resolves at run time: the linker must not insist on resolving them.
  env PATH="$wrap:$PATH" CGO_LDFLAGS="-Wl,--allow-shlib-undefined" \
      RUSTFLAGS="-C link-arg=-Wl,--allow-shlib-undefined" IKLLM_LIB="$lib" IKLLM_CLI="$cli" IKLLM_BUILD_DIR="$build" \
      LD_PRELOAD="$rt" ASAN_OPTIONS="$opts" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
      LSAN_OPTIONS="suppressions=$supp:print_suppressions=0" \
      "$here/run-tests.sh" "$lang" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  secs=$((SECONDS - t0))
  reports=$(grep -cE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log")
  if grep -q "== $lang: passed" "$log" && [ "$rc" = 0 ]; then r=passed
  elif grep -q "== $lang: skipped" "$log"; then r=skipped
  else r=FAILED; failed+=("$lang"); fi
  summary+=("$(printf '%-7s %-8s %4ds  sanitizer reports: %s  ASAN_OPTIONS=%s' "$lang" "$r" "$secs" "$reports" "$opts")")
done
echo "== summary (library $lib, CLI $cli, runtime $rt)"
printf '%s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]} (logs in $logs)"; exit 1; }
