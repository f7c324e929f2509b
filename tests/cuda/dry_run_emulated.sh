#!/usr/bin/env bash
# Runs tests/cuda/run_on_gpu.sh end to end without a GPU: a stand-in `nvidia-smi` on the PATH (one
# "GPU" of compute capability 9.0), a build directory of links to BUILD's binaries with the emulated
# ones in place of those that need a device (cuda_ops_test -> cuda_ops_emu_test, cuda_kernel_bench ->
# cuda_kernel_bench_emu) and IKLLM_CUDA_PLUGIN at BUILD/libikllm-cuda-emu.so. Checks the script
# itself -- its options, paths, tools and table -- before a lent GPU's minutes are spent on it.
#
#   tests/cuda/dry_run_emulated.sh BUILD [REFDATA_DIR] [--quick]     (~5 min quick, ~10 min full)
#
# BUILD is a CUDA-enabled build with tests (build/ here). Benchmarks are never run (--no-bench:
# realistic models through the emulation would take hours). Logs: $TMPDIR/ikllm-dry-run/logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:?usage: dry_run_emulated.sh BUILD [REFDATA_DIR] [--quick]}" && pwd)
shift
[ -f "$build/libikllm-cuda-emu.so" ] || { echo "no $build/libikllm-cuda-emu.so (a CUDA build with tests)" >&2; exit 2; }
work=${TMPDIR:-/tmp}/ikllm-dry-run
rm -rf "$work"
mkdir -p "$work/bin" "$work/build/tests"
cat >"$work/bin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
  *compute_cap*) echo "9.0" ;;
  *) echo "GPU 0: emulated (tests/cuda/emu_runtime.cpp) (UUID: GPU-emulated)" ;;
esac
EOF
chmod +x "$work/bin/nvidia-smi"
link() { [ -e "$1" ] && ln -s "$1" "$work/build/$2"; true; }
link "$build/ikllm" ikllm
link "$build/ikllm-make-bench" ikllm-make-bench
link "$build/backends/cuda/cuda_decode_host_test" cuda_decode_host_test
link "$build/backends/cuda/cuda_int8_codes_host_test" cuda_int8_codes_host_test
link "$build/cuda_ops_emu_test" cuda_ops_test
link "$build/cuda_kernel_bench_emu" cuda_kernel_bench
link "$build/tests/gpu_backend_test" tests/gpu_backend_test
PATH="$work/bin:$PATH" IKLLM_CUDA_PLUGIN="$build/libikllm-cuda-emu.so" IKLLM_GPU_LOG_DIR="$work/logs" \
  tests/cuda/run_on_gpu.sh --build "$work/build" --no-build --no-bench "$@"
