#!/usr/bin/env bash
# Builds ikllm and runs every test: the release suite, then the bad-input / API tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, then (with clang) a 20 s-per-target fuzz
# smoke (tests/fuzz/run.sh). Reference data is read from ../shared when present (tests that
# need it skip with a message otherwise).
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
jobs="$(nproc)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIKLLM_BUILD_BENCH=OFF >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIKLLM_SANITIZE=ON -DIKLLM_BUILD_BENCH=OFF >/dev/null
asan_tests="api_badinput_test session_test c_api_example model_split_test moe_mla_session_test quantize_api_test api_chat_test session_embed_test embed_api fuzz_regressions_test chat_limits_test"
cmake --build build-asan -j"$jobs" --target $asan_tests
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -R "^($(echo $asan_tests | tr ' ' '|'))\$")
# Fuzz smoke: every libFuzzer target of tests/fuzz for 20 s (clang + ASan/UBSan; targets run in parallel).
if command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; then
  IKLLM_FUZZ_JOBS="$jobs" tests/fuzz/run.sh 20
else
  echo "test.sh: clang not found, fuzz smoke skipped"
fi
