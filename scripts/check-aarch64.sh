#!/usr/bin/env bash
# Portability check without an ARM machine: cross-compiles libikllm.so and the CLI for aarch64
# (Debian's g++-aarch64-linux-gnu; no CUDA or benchmarks) and runs the conformance checks through
# that CLI under qemu-user, so the kernels an ARM CPU runs (NEON with the dot-product instructions,
# which qemu's CPU has; the scalar ones for the rest) are judged against the reference data on a
# CPU with other defaults than x86 (fused multiply-adds, unsigned char).
#
#   scripts/check-aarch64.sh [BUILD_DIR] [CONFORMANCE AREA ...] [--quick] [--unit]
#
# BUILD_DIR defaults to build-aarch64; areas default to all (tokenize, logits, dequant, templates,
# badgguf). --unit also builds the kernel unit tests (GoogleTest compiled from Debian's sources)
# and runs them under qemu: every NEON kernel against the scalar one, and the ISA symbol check.
# Installs the cross compiler and qemu-user with apt when they are missing. Not part of test.sh's
# default run (about 10 minutes on 2 cores, 15 with --unit); IKLLM_CROSS_AARCH64=1 ./test.sh adds it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-aarch64
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ] && ! [[ "$1" =~ ^(tokenize|logits|dequant|templates|badgguf)$ ]]; then
  build=$1
  shift
fi
unit=0
args=()
for a in "$@"; do
  if [ "$a" = --unit ]; then unit=1; else args+=("$a"); fi
done
set -- ${args[@]+"${args[@]}"}
need=()
command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
if [ ${#need[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y -q "${need[@]}" >/dev/null
fi
sysroot=/usr/aarch64-linux-gnu
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIKLLM_UNITY_BUILD=ON \
  -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
  -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ \
  -DCMAKE_FIND_ROOT_PATH="$sysroot" -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY \
  -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER \
  -DCMAKE_CROSSCOMPILING_EMULATOR="$PWD/$build/qemu-run" \
  -DIKLLM_BUILD_TESTS=$([ $unit = 1 ] && echo ON || echo OFF) -DIKLLM_BUILD_BENCH=OFF -DIKLLM_BUILD_SAMPLES=OFF \
  -DIKLLM_CUDA=OFF >/dev/null
# ctest starts the cross-built test programs through this (CMAKE_CROSSCOMPILING_EMULATOR).
printf '#!/bin/sh\nQEMU_LD_PREFIX=%s exec qemu-aarch64 "$@"\n' "$sysroot" >"$build/qemu-run"
chmod +x "$build/qemu-run"
cmake --build "$build" -j"$(nproc)" --target ikllm ikllm_cli
if [ $unit = 1 ]; then
  kernel_tests=(quant_core_kernels_test quant_kiqk_kernels_test quant_gti_kernel_test cpu_vec_kernels_test
                quant_attn_kernels_test quant_codebook_test)
  cmake --build "$build" -j"$(nproc)" --target "${kernel_tests[@]}"
  (cd "$build" && ctest --output-on-failure -R "^($(IFS='|'; echo "${kernel_tests[*]}")|isa_symbol_isolation)\$")
fi
# conformance.py runs one executable: a wrapper that starts the CLI under qemu.
wrapper="$PWD/$build/ikllm-qemu"
cat >"$wrapper" <<EOF
#!/bin/sh
QEMU_LD_PREFIX=$sysroot LD_LIBRARY_PATH=$PWD/$build exec qemu-aarch64 $PWD/$build/ikllm "\$@"
EOF
chmod +x "$wrapper"
if [ ! -f ../shared/tools/conformance.py ]; then
  echo "check-aarch64: built $build/ikllm for aarch64; ../shared/tools/conformance.py absent, conformance skipped"
  exit 0
fi
/usr/bin/python3 ../shared/tools/conformance.py "$wrapper" "$@" | tee "$build/conformance.txt" || true
# Judged against the native build (IKLLM_NATIVE_CLI, default build/ikllm) where there is one: the
# same summary lines (what the reference data lacks, e.g. an absent vocabulary, fails on both);
# without it, any failure fails the check.
native=${IKLLM_NATIVE_CLI:-build/ikllm}
summary() { grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed' "$1"; }
if [ -x "$native" ]; then
  /usr/bin/python3 ../shared/tools/conformance.py "$native" "$@" >"$build/conformance-native.txt" || true
  if ! diff <(summary "$build/conformance-native.txt") <(summary "$build/conformance.txt"); then
    echo "check-aarch64: aarch64 conformance differs from the native build's ($native; < native, > aarch64)"
    exit 1
  fi
elif summary "$build/conformance.txt" | grep -qv ' 0 failed'; then
  echo "check-aarch64: conformance failures on aarch64 (above)"
  exit 1
fi
echo "check-aarch64: ok"
