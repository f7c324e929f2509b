#!/usr/bin/env bash
# Builds ikllm and runs every test: the release suite, then the bad-input / API tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer. Reference data is read from ../shared
# when present (tests that need it skip with a message otherwise).
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
jobs="$(nproc)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIKLLM_BUILD_BENCH=OFF >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIKLLM_SANITIZE=ON -DIKLLM_BUILD_BENCH=OFF >/dev/null
asan_tests="api_badinput_test session_test session_state_test state_roundtrip c_api_example model_split_test moe_mla_session_test quantize_api_test api_chat_test session_embed_test embed_api api_score_test api_chat_parse_test chat_output_parser_test api_grammar_test grammar_gbnf_test grammar_schema_test grammar_tokens_test fuzz_regressions_test chat_limits_test"
cmake --build build-asan -j"$jobs" --target $asan_tests
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -R "^($(echo $asan_tests | tr ' ' '|'))\$")
