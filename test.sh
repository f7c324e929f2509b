#!/usr/bin/env bash
# Builds ikllm and runs every test: the release suite, then the bad-input / API tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer. Reference data is read from ../shared
# when present (tests that need it skip with a message otherwise).
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
jobs="$(nproc)"
# Unity builds (IKLLM_UNITY_BUILD): a third less compile time for the three builds below.
# CUDA (where nvcc is installed): sm_90 only, a quarter of the default's compile time.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIKLLM_BUILD_BENCH=OFF -DIKLLM_UNITY_BUILD=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
# Sanitizer pass: the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer
# (+ LeakSanitizer) in a separate build, except the language-binding tests (label foreign_host: their
# interpreters and toolchains are not instrumented) and, unless IKLLM_SANITIZE_ALL=1, the eight tests
# labelled sanitizer_heavy (17 more minutes on 2 cores). With clang the same build also makes the libFuzzer targets, and each gets a short,
# reproducible smoke run (a fixed seed and number of executions per target, tests/fuzz/run.sh;
# IKLLM_FUZZ_SMOKE_SECONDS=N fuzzes N seconds each instead, 0 skips it).
san_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DIKLLM_BUILD_BENCH=OFF -DIKLLM_UNITY_BUILD=ON)
fuzz_targets=""
if command -v clang++ >/dev/null; then
  san_flags+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DIKLLM_FUZZ=ON)
  fuzz_targets="ikllm_fuzz_all"
fi
# lld links the ~100 sanitized test executables 2-3x faster than ld.bfd (a minute of CI time).
lld_flags=()
if command -v ld.lld >/dev/null; then
  lld_flags=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
fi
san_flags+=("${lld_flags[@]}")
cmake -S . -B build-asan -G Ninja -DIKLLM_SANITIZE=ON "${san_flags[@]}" >/dev/null
cmake --build build-asan -j"$jobs" --target all $fuzz_targets
# The fault-injection sweep is complete in the release run; under ASan every 7th allocation.
asan_exclude="foreign_host|sanitizer_heavy"
[ "${IKLLM_SANITIZE_ALL:-0}" = 1 ] && asan_exclude="foreign_host"
(cd build-asan && IKLLM_FAULT_STRIDE=7 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j"$jobs" -LE "$asan_exclude")
# The five language bindings' tests against that ASan library, the clang runtime preloaded into
# their interpreters (leak checks on; bindings/run-tests-asan.sh).
[ -n "$fuzz_targets" ] && bindings/run-tests-asan.sh build-asan
if [ -n "$fuzz_targets" ] && [ "${IKLLM_FUZZ_SMOKE_SECONDS:-fixed}" != 0 ]; then
  if [ "${IKLLM_FUZZ_SMOKE_SECONDS:-fixed}" = fixed ]; then
    IKLLM_FUZZ_FIXED=1 IKLLM_FUZZ_BUILD="$PWD/build-asan" IKLLM_FUZZ_JOBS="$jobs" tests/fuzz/run.sh
  else
    IKLLM_FUZZ_BUILD="$PWD/build-asan" IKLLM_FUZZ_JOBS="$jobs" tests/fuzz/run.sh "$IKLLM_FUZZ_SMOKE_SECONDS"
  fi
fi
# ThreadSanitizer pass: the concurrency tests (shared model, parallel loads, cross-thread cancel,
# the CPU thread pool).
tsan_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DIKLLM_BUILD_BENCH=OFF -DIKLLM_BUILD_SAMPLES=OFF -DIKLLM_UNITY_BUILD=ON)
tsan_flags+=("${lld_flags[@]}")
cmake -S . -B build-tsan -G Ninja -DIKLLM_TSAN=ON "${tsan_flags[@]}" >/dev/null
cmake --build build-tsan -j"$jobs" --target api_concurrency_test thread_pool_test
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -R '^(api_concurrency_test|thread_pool_test)$')
# Optional (IKLLM_CROSS_AARCH64=1, ~15 minutes): libikllm.so, the CLI and the kernel unit tests
# cross-compiled for aarch64, run under qemu-user (the NEON kernels against the scalar ones, then
# the conformance checks through the CLI; scripts/check-aarch64.sh).
if [ "${IKLLM_CROSS_AARCH64:-0}" = 1 ]; then scripts/check-aarch64.sh build-aarch64 --unit; fi
