#!/usr/bin/env bash
# Line coverage of the fuzz targets: builds them with clang source-based coverage in
# build-fuzz-cov/ (no sanitizers), replays each target's corpus (a fuzzing run's corpus
# directory, the generated seeds and the committed regression inputs) once, and prints per
# target the covered lines of the source files it is meant to exercise (llvm-cov report).
# usage: tests/fuzz/coverage.sh [CORPUS_ROOT] [TARGET...]
#   CORPUS_ROOT: directory holding <target>/ corpora of an earlier run.sh (default build-fuzz/corpus)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
corpus_root="${1:-$root/build-fuzz/corpus}"
shift || true
targets="${*:-gguf_fuzz model_load_fuzz tokenizer_fuzz detok_fuzz utf8_stream_fuzz chat_template_fuzz grammar_fuzz json_schema_fuzz state_load_fuzz}"
build="${IKLLM_FUZZ_COV_BUILD:-$root/build-fuzz-cov}"
profdata="$(command -v llvm-profdata || command -v llvm-profdata-14)"
llvmcov="$(command -v llvm-cov || command -v llvm-cov-14)"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DIKLLM_FUZZ=ON \
  -DIKLLM_FUZZ_COVERAGE=ON -DIKLLM_BUILD_BENCH=OFF -DIKLLM_BUILD_SAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target $targets >"$build/build.log" 2>&1 || { tail -20 "$build/build.log"; exit 1; }
"$here/make_seeds.sh" "$build/seeds" >/dev/null

# The sources each target is there to exercise (what its coverage figure is about).
sources_for() {
  case "$1" in
    gguf_fuzz) echo "src/gguf/gguf_file.cpp" ;;
    model_load_fuzz) echo "src/gguf/gguf_file.cpp src/model src/api/api_model.cpp" ;;
    tokenizer_fuzz) echo "src/tokenizer" ;;
    detok_fuzz) echo "src/tokenizer/tokenizer_decode.cpp src/tokenizer/utf8_stream.cpp src/api/api_tokenizer.cpp" ;;
    utf8_stream_fuzz) echo "src/tokenizer/utf8.cpp src/tokenizer/utf8_stream.cpp" ;;
    chat_template_fuzz) echo "src/chat/chat_template.cpp src/chat/jinja_*.cpp src/chat/py_*.cpp" ;;
    grammar_fuzz) echo "src/grammar/gbnf_parser.cpp src/grammar/automaton.cpp src/grammar/byte_grammar.cpp src/grammar/char_sets.cpp" ;;
    json_schema_fuzz) echo "src/grammar/json_schema.cpp src/grammar/schema_pieces.cpp src/grammar/json_value.cpp src/grammar/gbnf_parser.cpp" ;;
    state_load_fuzz) echo "src/session/state_io.cpp src/session/session_state.cpp src/api/api_session_state.cpp" ;;
  esac
}

mkdir -p "$build/cov"
printf '| %-18s | %7s | %-17s | %s |\n' target inputs "lines covered" "sources"
printf '|%s|%s|%s|%s|\n' "--------------------" "---------:" "-------------------" "---"
for t in $targets; do
  dirs=()
  [ -d "$corpus_root/$t" ] && dirs+=("$corpus_root/$t")
  [ -d "$build/seeds/$t" ] && dirs+=("$build/seeds/$t")
  [ -d "$here/regressions/$t" ] && dirs+=("$here/regressions/$t")
  n=0
  for d in "${dirs[@]}"; do n=$((n + $(find "$d" -type f | wc -l))); done
  rm -f "$build/cov/$t".*.profraw
  # -runs=0: execute every input of the directories once, no mutation.
  LLVM_PROFILE_FILE="$build/cov/$t.%p.profraw" "$build/tests/fuzz/$t" -runs=0 -timeout=30 -rss_limit_mb=2048 \
    "${dirs[@]}" >"$build/cov/$t.log" 2>&1 || true
  "$profdata" merge -sparse "$build/cov/$t".*.profraw -o "$build/cov/$t.profdata"
  srcs=()
  for s in $(cd "$root" && echo $(sources_for "$t")); do srcs+=("$root/$s"); done
  total="$("$llvmcov" report "$build/tests/fuzz/$t" -instr-profile="$build/cov/$t.profdata" "${srcs[@]}" 2>/dev/null |
           awk '$1 == "TOTAL" { print $10 " of " $8 }')"
  # TOTAL columns: regions, missed, cover, functions, missed, executed, lines, missed, cover, branches...
  printf '| %-18s | %7d | %-17s | %s |\n' "$t" "$n" "${total:-?}" "$(sources_for "$t")"
done
