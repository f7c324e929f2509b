#!/usr/bin/env bash
# Builds ikllm with CUDA on a machine with an NVIDIA GPU, runs every CUDA test and the GPU
# benchmarks, and prints one summary table.
#
#   tests/cuda/run_on_gpu.sh [REFDATA_DIR] [--build DIR] [--no-build] [--no-bench] [--bench-dir DIR] [--quick]
#                            [--step-timeout S] [--time-limit S]
#
# --quick (a short lent GPU session, ~10 minutes after the build): the op tests, the reference
# logits in both placements, the kernel benchmark for q4_0 and q4_K, and llama-8b Q4_0 / qwen3moe
# Q4_K_M benchmarks with the defaults and the generation variants; the rest is skipped.
#
# REFDATA_DIR defaults to ../shared/refdata (its parent's tools/compare_logits.py judges the
# reference logits); parts whose inputs are absent are reported as skipped. --no-build uses the
# binaries already in the build directory. Logs go to $IKLLM_GPU_LOG_DIR (default BUILD/gpu-logs).
#
# Every step after the build runs under a time limit, --step-timeout S (default 900, or
# $IKLLM_GPU_STEP_TIMEOUT): a kernel that hangs on a GPU (a barrier some thread never reaches, a
# spin on a flag) fails its row as "timed out" and the rest still run. --time-limit S bounds the
# whole run after the build (steps get what is left; once it is spent they are skipped), so that a
# lent machine's per-command limit still gets the table. The table also prints when the script is
# interrupted (INT / TERM): the rows so far, then an "interrupted" row.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
refdata=../shared/refdata
build=build-gpu
do_build=1
do_bench=1
bench_dir=""
quick=0
step_timeout=${IKLLM_GPU_STEP_TIMEOUT:-900}
time_limit=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --no-bench) do_bench=0 ;;
    --bench-dir) bench_dir=$2; shift ;;
    --quick) quick=1 ;;
    --step-timeout) step_timeout=$2; shift ;;
    --time-limit) time_limit=$2; shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) refdata=$1 ;;
  esac
  shift
done
refdata=$(cd "$refdata" 2>/dev/null && pwd || echo "$refdata")
shared=$(dirname "$refdata")
logs=${IKLLM_GPU_LOG_DIR:-$build/gpu-logs}
mkdir -p "$logs"
bench_dir=${bench_dir:-$build/bench-models}
declare -a rows
row() { rows+=("$(printf '| %-44s | %-7s | %s |' "$1" "$2" "$3")"); echo "== $1: $2 $3"; }
full() { [ "$quick" = 0 ]; }  # parts --quick leaves out
summary_done=0
summary() {
  [ "$summary_done" = 1 ] && return; summary_done=1
  echo
  echo "| check                                        | result  | detail |"
  echo "|----------------------------------------------|---------|--------|"
  printf '%s\n' "${rows[@]}"
}
child=""
on_signal() {
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
  row "interrupted" FAIL "by a signal: the checks after the rows above did not run"
  summary; exit 130
}
trap on_signal INT TERM
limits_start=0  # SECONDS when the limits start counting (after the build)
# run_limited LOG COMMAND...: the command under this step's limit (--step-timeout, cut to what is
# left of --time-limit), output to LOG, in the background so that a signal interrupts the wait.
# Sets limit_note: "" (ran to its end; the command's status is returned), "timed out after N s"
# or "skipped" (no time left).
run_limited() {
  local log=$1; shift
  local lim=$step_timeout
  limit_note=""
  if [ "$time_limit" -gt 0 ]; then
    local left=$((time_limit - (SECONDS - limits_start)))
    [ "$left" -lt "$lim" ] && lim=$left
    if [ "$lim" -lt 1 ]; then limit_note=skipped; return 0; fi
  fi
  timeout -k 15 "$lim" "$@" >"$log" 2>&1 &
  child=$!
  wait "$child"; local rc=$?
  child=""
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then limit_note="timed out after $lim s"; fi
  return $rc
}
# Handles limit_note for a row: prints the row and returns 0 when the step did not run to its end.
limit_row() {  # name, log
  case $limit_note in
    "") return 1 ;;
    skipped) row "$1" skip "--time-limit $time_limit s reached" ;;
    *) row "$1" FAIL "$limit_note (see $2)"; fail=1 ;;
  esac
  return 0
}

nvidia-smi -L 2>&1 | tee "$logs/nvidia-smi.txt" || true

if [ "$do_build" = 1 ]; then
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cuda=(); [ -x /usr/local/cuda/bin/nvcc ] && cuda=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  # With GoogleTest installed the session-path test (gpu_backend_test) is built too; without it
  # only the CUDA tests that need no GoogleTest.
  # Code for this machine's GPUs only (nvidia-smi's compute capabilities, else 9.0): a quarter of
  # the default's compile time.
  archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | grep -E '^[0-9]+$' | sort -u | paste -sd';')
  archs=${archs:-90}
  common=("${gen[@]}" "${cuda[@]}" -DCMAKE_CUDA_ARCHITECTURES=$archs -DCMAKE_BUILD_TYPE=Release -DIKLLM_CUDA=ON -DIKLLM_CUDA_TESTS=ON
          -DIKLLM_BUILD_BENCH=OFF -DIKLLM_BUILD_SAMPLES=OFF)
  targets=(ikllm_cli ikllm_cuda cuda_ops_test cuda_decode_host_test cuda_int8_codes_host_test ikllm-make-bench cuda_kernel_bench)
  if cmake -S . -B "$build" "${common[@]}" -DIKLLM_BUILD_TESTS=ON >"$logs/configure.txt" 2>&1; then
    targets+=(gpu_backend_test)
  else
    rm -rf "$build/CMakeCache.txt"
    cmake -S . -B "$build" "${common[@]}" -DIKLLM_BUILD_TESTS=OFF >>"$logs/configure.txt" 2>&1
  fi
  if cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$logs/build.txt" 2>&1; then
    row build ok "$build"
  else
    row build FAIL "see $logs/build.txt"; tail -30 "$logs/build.txt"
    summary; exit 1
  fi
fi
cli=$build/ikllm
fail=0
limits_start=$SECONDS
py=""
for c in python3 /usr/bin/python3; do "$c" -c 'import numpy' 2>/dev/null && { py=$(command -v "$c"); break; }; done

run_test() {  # name, log file, command...
  local name=$1 log=$2; shift 2
  if [ ! -x "$1" ]; then row "$name" skip "$1 not built"; return; fi
  run_limited "$log" "$@"
  local rc=$?
  limit_row "$name" "$log" && return
  local last; last=$(grep -E '^\[  PASSED  \]' "$log" | tail -1); [ -n "$last" ] || last=$(tail -1 "$log")
  if [ $rc = 0 ]; then row "$name" ok "$last"
  elif [ $rc = 77 ]; then row "$name" skip "$(tail -1 "$log")"
  else row "$name" FAIL "$(tail -1 "$log")"; fail=1; tail -20 "$log"; fi
}

# 1. Device code against the CPU, op by op.
dec=$build/cuda_decode_host_test; [ -x "$dec" ] || dec=$build/backends/cuda/cuda_decode_host_test
run_test "block decoders (host + device)" "$logs/decode.txt" "$dec"
i8=$build/cuda_int8_codes_host_test; [ -x "$i8" ] || i8=$build/backends/cuda/cuda_int8_codes_host_test
run_test "int8 weight codes (host + device)" "$logs/int8_codes.txt" "$i8"
run_test "ops vs CPU backend" "$logs/ops.txt" "$build/cuda_ops_test"
# The int8 kernels (dp4a for generation, int8 mma for prompt batches; the reference's numerics)
# are the default for their 8 types; the same types again through the float kernels they replace
# (IKLLM_CUDA_INT8=0, IKLLM_CUDA_INT8_MMA=0: decode to f32 / fp16 tensor cores).
full && IKLLM_CUDA_INT8=0 IKLLM_CUDA_INT8_MMA=0 run_test "ops vs CPU backend, IKLLM_CUDA_INT8(_MMA)=0" "$logs/ops_float.txt" \
  "$build/cuda_ops_test"
# Programmatic dependent launch and the L2 prefetch of weights (launch.cuh; off by default until
# measured): every op's kernels on a stream of their own, each starting before the one ahead ends.
full && IKLLM_CUDA_PDL=1 IKLLM_CUDA_L2_PREFETCH=1 IKLLM_CUDA_MV_UNROLL=4 run_test \
  "ops vs CPU backend, IKLLM_CUDA_PDL=1 IKLLM_CUDA_L2_PREFETCH=1 IKLLM_CUDA_MV_UNROLL=4" "$logs/ops_pdl.txt" "$build/cuda_ops_test"
# Session paths (decode, state save/load, shifts, sequence copies) on the GPU vs the CPU, when
# the gtest suite was built (IKLLM_BUILD_TESTS=ON).
gbt=$build/tests/gpu_backend_test; [ -x "$gbt" ] || gbt=$build/gpu_backend_test
IKLLM_SHARED_DIR=$shared run_test "session paths on the GPU (gtest)" "$logs/gpu_backend_test.txt" "$gbt"

# Kernel-level speed against the GPU's peaks (bench/cuda_kernel_bench.cu): llama-8b's four product
# shapes, q4_0 / q8_0 / q4_K / iq4_k, T = 1 / 512 / 2048, each kernel variant (the float kernels,
# PDL + L2 prefetch, staged, K step 64), outputs compared with the defaults'. The row: q4_0 with the
# defaults, % of the HBM peak at T = 1 and % of the int8 tensor peak at T = 512 / 2048 per shape.
if [ "$do_bench" = 1 ] && [ -x "$build/cuda_kernel_bench" ]; then
  kb_types=(); full || kb_types=(q4_0 q4_K)
  run_limited "$logs/kernel_bench.txt" "$build/cuda_kernel_bench" "${kb_types[@]}"; kb_rc=$?
  if limit_row "kernel bench" "$logs/kernel_bench.txt"; then :
  elif [ "$kb_rc" = 0 ]; then
    row "kernel bench (q4_0, defaults)" ok "$(awk -F'|' '$2 ~ /q4_0/ && $6 ~ /default/ {gsub(/ /, "", $3); gsub(/ /, "", $5);
      v = ($5 == 1) ? $9 "% HBM" : $11 "% int8"; printf "%s T=%s %s; ", $3, $5, v}' "$logs/kernel_bench.txt")"
  else
    row "kernel bench" FAIL "$(tail -1 "$logs/kernel_bench.txt")"; fail=1
  fi
fi

# 2. Reference models through full offload and the experts-on-CPU hybrid.
models=$refdata/models
if [ -f "$shared/tools/compare_logits.py" ]; then
  stems=""
  for s in llama-tiny-f16 llama-tied-f16 qwen3-tiny-f16 qwen2-tiny-f16 llama-q-f32 llama-q-F16 llama-q-BF16 llama-q-Q8_0 \
           llama-q-Q4_0 qwen3-tiny-Q4_0 qwen3moe-tiny-f16 deepseek2-tiny-f16 deepseek2-lite-tiny-f16 deepseek2-split-tiny-f16 \
           deepseek2-tiny-IQ4_K deepseek2-tiny-Q8_0 qwen3moe-tiny-Q4_K_M qwen3moe-tiny-IQ4_K \
           llama-q-Q4_K_R4 llama-q-Q8_0_R8 llama-q-IQ2_K_R4 llama-q-IQ4_K_R4 llama-q-IQ4_XS_R8 llama-q-IQ4_KS_R4 llama-q-Q2_K; do  # (interleaved: converted)
    if [ -d "$refdata/refs/$s" ] && { [ -f "$refdata/models/$s.gguf" ] || [ -f "$refdata/quant/$s.gguf" ]; }; then stems="$stems $s"; fi
  done
  # --cpu-spread: a model that misses its class is run on the CPU with the CPU backend's AVX2 and
  # scalar kernels too, plain and -rtr; where one of those misses it by as much, the row says 'ok~'
  # and why (some of these tiny random models amplify summation-order differences past the class:
  # docs/cuda.md).
  placements=("full:-ngl 99" "exps_cpu:-ngl 99 -ot exps=CPU")
  # Two or more GPUs: layers split between the first two as well (activations cross through the host).
  if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -ge 2 ]; then placements+=("two_gpus:-ngl 99 -ts 1,1"); fi
  for p in "${placements[@]}"; do
    tag=${p%%:*}; args=${p#*:}
    run_test "refdata logits, $tag ($args)" "$logs/refdata_$tag.txt" "${py:-python3}" tests/refdata/check_logits.py \
      "$cli" "$shared" --cpu-spread --args "$args" $stems
  done
  if full; then
  # The float kernels do not follow the reference's small-batch integer numerics of IQ4_K (saturating
  # pair sums; docs/cuda.md): the IQ4_K MoE models are left out of their row.
  float_stems=$(for s in $stems; do case $s in deepseek2-tiny-IQ4_K|qwen3moe-tiny-IQ4_K) ;; *) echo "$s" ;; esac; done)
  IKLLM_CUDA_INT8=0 IKLLM_CUDA_INT8_MMA=0 run_test "refdata logits, full, IKLLM_CUDA_INT8(_MMA)=0 (no IQ4_K MoE)" \
    "$logs/refdata_full_float.txt" "${py:-python3}" \
    tests/refdata/check_logits.py "$cli" "$shared" --cpu-spread --args "-ngl 99" $float_stems
  IKLLM_CUDA_FUSE=0 IKLLM_CUDA_ACT_SHARE=0 run_test "refdata logits, full, IKLLM_CUDA_FUSE=0 IKLLM_CUDA_ACT_SHARE=0" \
    "$logs/refdata_full_unfused.txt" "${py:-python3}" \
    tests/refdata/check_logits.py "$cli" "$shared" --cpu-spread --args "-ngl 99" $stems
  fi
  # The generation variants (PDL, L2 prefetch, 4 chunks in flight) together: the same logits.
  pdl_places=("full:-ngl 99"); full && pdl_places+=("exps_cpu:-ngl 99 -ot exps=CPU")
  for p in "${pdl_places[@]}"; do
    tag=${p%%:*}; args=${p#*:}
    IKLLM_CUDA_PDL=1 IKLLM_CUDA_L2_PREFETCH=1 IKLLM_CUDA_MV_UNROLL=4 run_test \
      "refdata logits, $tag, IKLLM_CUDA_PDL=1 IKLLM_CUDA_L2_PREFETCH=1 IKLLM_CUDA_MV_UNROLL=4" "$logs/refdata_${tag}_pdl.txt" \
      "${py:-python3}" tests/refdata/check_logits.py "$cli" "$shared" --cpu-spread --args "$args" $stems
  done
else
  row "refdata logits" skip "no $shared/tools/compare_logits.py"
fi

# 3. Every CUDA weight type: a reference model quantized here, GPU against CPU.
base=""
for c in "$refdata/models/llama-tiny-f16.gguf" "$refdata/models/qwen3-tiny-f16.gguf"; do [ -f "$c" ] && { base=$c; break; }; done
if ! full; then
  row "GPU vs CPU per type" skip "--quick"
elif [ -n "$base" ] && [ -f "$refdata/refs/llama-tiny-f16/tokens.txt" ]; then
  qdir=$build/gpu-quant; mkdir -p "$qdir"
  for t in F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q6_0 Q4_K Q5_K Q6_K Q2_K Q3_K IQ4_NL IQ4_XS IQ2_K IQ3_K IQ4_K IQ5_K IQ6_K IQ4_KS \
           IQ5_KS IQ2_KS IQ3_KS IQ4_KSS IQ2_KL IQ2_KT IQ3_KT IQ4_KT IQ1_KT Q4_K_R4; do
    f=$qdir/$t.gguf
    if [ ! -f "$f" ]; then
      run_limited "$logs/quantize_$t.txt" "$cli" quantize "$base" "$f" "$t" --pure --ignore-imatrix-rules -t "$(nproc)"; q_rc=$?
      limit_row "GPU vs CPU $t (quantize)" "$logs/quantize_$t.txt" && { rm -f "$f"; continue; }
      [ "$q_rc" = 0 ] || { row "GPU vs CPU $t" FAIL "quantize failed"; fail=1; continue; }
    fi
    info=""; case $t in IQ4_XS|IQ*_K|IQ*_KS|IQ4_KSS|IQ*_KT|IQ2_KL) info=--steps-info ;; esac
    # Interleaved files: the GPU multiplies them as the reference multiplies the stored form, so
    # the CPU runs that form too (not its own faster layout).
    case $t in *_R4|*_R8) info="$info --cpu-args --no-repack" ;; esac
    run_test "GPU vs CPU $t" "$logs/cmp_$t.txt" "${py:-python3}" tests/cuda/compare_cpu_gpu.py $info "$cli" "$f" \
      "$refdata/refs/llama-tiny-f16/tokens.txt" "-ngl 99"
  done
else
  row "GPU vs CPU per type" skip "no llama-tiny-f16 in $refdata"
fi

# 4. Realistic shapes (ikllm-make-bench): GPU against CPU, then benchmarks, full offload and
#    experts on the CPU.
if [ "$do_bench" = 1 ] && [ -x "$build/ikllm-make-bench" ]; then
  full || export IKLLM_BENCH_MODELS="llama-8b:q4_0 qwen3moe-a3b-8l:q4_K_M"
  IKLLM_MAKE_BENCH=$build/ikllm-make-bench run_limited "$logs/make_bench_models.txt" bench/make_gpu_bench_models.sh "$bench_dir"
  mk_rc=$?
  limit_row "benchmark models" "$logs/make_bench_models.txt" || { [ "$mk_rc" = 0 ] || row "benchmark models" FAIL "see $logs/make_bench_models.txt"; }
  # Realistic shapes against the CPU before timing them: the tiny reference models never reach
  # a 128k-row output matrix, 4096-wide rows or 256 experts, where an index that overflows or a
  # grid dimension out of range would show. Loose tolerances (random weights over 32 layers; see
  # compare_cpu_gpu.py --loose); the IQ4_K steps are printed, not judged (the CPU follows the
  # reference's small-batch numerics there).
  toks=$refdata/refs/llama-tiny-f16/tokens.txt
  if [ -f "$toks" ] && full; then
    for spec in "llama-8b-q4_0:-ngl 99" "llama-8b-iq4_k:-ngl 99" "qwen3moe-a3b-8l-q4_K_M:-ngl 99:-ngl 99 -ot exps=CPU" \
                "deepseek2-v3-4l-iq4_k:-ngl 99:-ngl 99 -ot exps=CPU"; do
      m=${spec%%:*}; rest=${spec#*:}
      IFS=: read -r -a places <<<"$rest"
      info=--loose; case $m in *iq4_k) info="$info --steps-info" ;; esac
      if [ -f "$bench_dir/$m.gguf" ]; then
        run_test "GPU vs CPU $m (${places[*]})" "$logs/cmp_big_$m.txt" "${py:-python3}" tests/cuda/compare_cpu_gpu.py $info \
          "$cli" "$bench_dir/$m.gguf" "$toks" "${places[@]}"
      else
        row "GPU vs CPU $m" skip "no $bench_dir/$m.gguf"
      fi
    done
  fi
  bench() {  # label, model, args
    local label=$1 m=$2; shift 2
    [ -f "$m" ] || { row "bench $label" skip "no $m"; return; }
    local log="$logs/bench_$(echo "$label" | tr -c 'A-Za-z0-9_.=-' '_').txt"
    run_limited "$log" "$cli" bench -m "$m" -t "$(nproc)" -r 3 "$@"; local rc=$?
    limit_row "bench $label" "$log" && return
    if [ "$rc" = 0 ]; then
      row "bench $label" ok "$(grep -E '\| (pp|tg)[0-9]+ \|' "$log" | awk -F'|' '{printf "%s:%s;", $5, $6}') $(grep -o 'device-memory-bound tg.*' "$log")"
    else
      row "bench $label" FAIL "$(tail -1 "$log")"; fail=1
    fi
  }
  full || bench "llama-8b-q4_0 full PP512/TG128" "$bench_dir/llama-8b-q4_0.gguf" -ngl 99 -p 512 -n 128
  full && for m in llama-8b-q4_0 llama-8b-q8_0 llama-8b-iq4_k; do
    bench "$m full PP512/TG128" "$bench_dir/$m.gguf" -ngl 99 -p 512 -n 128
    IKLLM_CUDA_INT8=0 IKLLM_CUDA_INT8_MMA=0 bench "$m full PP512/TG128, IKLLM_CUDA_INT8(_MMA)=0" "$bench_dir/$m.gguf" \
      -ngl 99 -p 512 -n 128
    bench "$m full PP2048" "$bench_dir/$m.gguf" -ngl 99 -p 2048 -n 0
  done
  # The int8 tensor-core kernel with K steps of 64 instead of 32 (same results; more registers).
  full && for m in llama-8b-q4_0 llama-8b-iq4_k; do
    IKLLM_CUDA_MMA_KSUB=2 bench "$m full PP512, IKLLM_CUDA_MMA_KSUB=2" "$bench_dir/$m.gguf" -ngl 99 -p 512 -n 0
    IKLLM_CUDA_MMA_KSUB=2 bench "$m full PP2048, IKLLM_CUDA_MMA_KSUB=2" "$bench_dir/$m.gguf" -ngl 99 -p 2048 -n 0
  done
  # Prompt attention on the float kernel instead of the tensor cores (attention_mma.cu).
  full && IKLLM_CUDA_ATTN_MMA=0 bench "llama-8b-q4_0 full PP2048, IKLLM_CUDA_ATTN_MMA=0" "$bench_dir/llama-8b-q4_0.gguf" \
    -ngl 99 -p 2048 -n 0
  # Speed against context depth (to 8192 cells, ubatch 512): the tensor-core attention
  # (attention_mma.cu, attention_mma16.cu) against the float kernel, for GQA and for MLA. The row
  # gives S_PP / S_TG at depth 0 and at the last depth.
  sweep() {  # label, model, args
    local label=$1 m=$2; shift 2
    [ -f "$m" ] || { row "sweep $label" skip "no $m"; return; }
    local log="$logs/sweep_$(echo "$label" | tr -c 'A-Za-z0-9_.=-' '_').txt"
    run_limited "$log" "$cli" bench -m "$m" -t "$(nproc)" --sweep -c 8192 -ub 512 "$@"; local rc=$?
    limit_row "sweep $label" "$log" && return
    if [ "$rc" = 0 ]; then
      row "sweep $label" ok "$(grep -E '^\| +[0-9]+ \|' "$log" | awk -F'|' 'NR==1{f=$4"kv pp "$6" tg "$8} {l=$4"kv pp "$6" tg "$8} END{print f" ..."l}')"
    else
      row "sweep $label" FAIL "$(tail -1 "$log")"; fail=1
    fi
  }
  if full; then
  for m in llama-8b-q4_0 deepseek2-v3-4l-iq4_k; do
    sweep "$m full" "$bench_dir/$m.gguf" -ngl 99
    IKLLM_CUDA_ATTN_MMA=0 sweep "$m full, IKLLM_CUDA_ATTN_MMA=0" "$bench_dir/$m.gguf" -ngl 99
  done
  # A q8_0 cache (the tensor-core kernel reads its codes and scales, attention_mma16.cu) against
  # the float kernel, for MLA.
  sweep "deepseek2-v3-4l-iq4_k full -ctk q8_0" "$bench_dir/deepseek2-v3-4l-iq4_k.gguf" -ngl 99 -ctk q8_0
  IKLLM_CUDA_ATTN_MMA=0 sweep "deepseek2-v3-4l-iq4_k full -ctk q8_0, IKLLM_CUDA_ATTN_MMA=0" \
    "$bench_dir/deepseek2-v3-4l-iq4_k.gguf" -ngl 99 -ctk q8_0
  fi
  # Where the time goes: device time per op kind (events around every op, graphs off) for a
  # short prompt and token steps; the log keeps the whole table, the row its first lines.
  m=$bench_dir/llama-8b-q4_0.gguf
  if [ -f "$m" ] && full; then
    IKLLM_OP_PROFILE=1 run_limited "$logs/profile_llama-8b-q4_0.txt" "$cli" bench -m "$m" -t "$(nproc)" -r 1 -ngl 99 -p 512 -n 32
    pr_rc=$?
    if limit_row "op profile llama-8b-q4_0" "$logs/profile_llama-8b-q4_0.txt"; then :
    elif [ "$pr_rc" = 0 ]; then row "op profile llama-8b-q4_0 (pp512+tg32)" ok "$logs/profile_llama-8b-q4_0.txt"
    else row "op profile llama-8b-q4_0" FAIL "see $logs/profile_llama-8b-q4_0.txt"; fail=1; fi
  fi
  # Token steps with programmatic dependent launch, the L2 prefetch of weights, both, 4 chunks per
  # thread in flight in the int8 matrix-vector kernel, and all three.
  tg_models="llama-8b-q4_0 qwen3moe-a3b-8l-q4_K_M"; full && tg_models="$tg_models deepseek2-v3-4l-iq4_k"
  for e in "IKLLM_CUDA_PDL=1" "IKLLM_CUDA_L2_PREFETCH=1" "IKLLM_CUDA_PDL=1 IKLLM_CUDA_L2_PREFETCH=1" "IKLLM_CUDA_MV_UNROLL=4" \
           "IKLLM_CUDA_MV_UNROLL=4 IKLLM_CUDA_PDL=1 IKLLM_CUDA_L2_PREFETCH=1"; do
    for m in $tg_models; do
      eval "$e bench \"$m full TG128, $e\" \"$bench_dir/$m.gguf\" -ngl 99 -p 0 -n 128"
    done
  done
  # Token steps without fused launches and shared rounded activations (docs/cuda.md, item 8).
  full && IKLLM_CUDA_FUSE=0 IKLLM_CUDA_ACT_SHARE=0 bench "llama-8b-q4_0 full TG128, IKLLM_CUDA_FUSE=0 IKLLM_CUDA_ACT_SHARE=0" \
    "$bench_dir/llama-8b-q4_0.gguf" -ngl 99 -p 0 -n 128
  moe_models="qwen3moe-a3b-8l-q4_K_M"; full && moe_models="$moe_models deepseek2-v3-4l-iq4_k"
  for m in $moe_models; do
    bench "$m full" "$bench_dir/$m.gguf" -ngl 99 -p 512 -n 128
    full && IKLLM_CUDA_INT8=0 IKLLM_CUDA_INT8_MMA=0 bench "$m full, IKLLM_CUDA_INT8(_MMA)=0" "$bench_dir/$m.gguf" -ngl 99 \
      -p 512 -n 128
    bench "$m exps=CPU" "$bench_dir/$m.gguf" -ngl 99 -ot exps=CPU -p 512 -n 128
    # Prompt batches with the CPU's experts streamed to the GPU per op (offload_min_batch): where
    # the bus beats the CPU's own matmuls, these PP numbers are higher than the row above.
    bench "$m exps=CPU streamed PP512" "$bench_dir/$m.gguf" -ngl 99 -ot exps=CPU -p 512 -n 0 --offload-min-batch 32
    full && bench "$m exps=CPU PP2048" "$bench_dir/$m.gguf" -ngl 99 -ot exps=CPU -p 2048 -n 0 -b 2048
    full && bench "$m exps=CPU streamed PP2048" "$bench_dir/$m.gguf" -ngl 99 -ot exps=CPU -p 2048 -n 0 -b 2048 --offload-min-batch 32
  done
fi

summary
exit $fail
