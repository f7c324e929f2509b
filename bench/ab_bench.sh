#!/usr/bin/env bash
# Interleaved A/B of two ikllm builds on the same models: on a shared, noisy machine (the project's
# 2-core VMs move ±15 % between runs, 30 % between days) only runs taken minutes apart, alternating
# A and B, compare. Prints every run and the median of each side.
# usage: bench/ab_bench.sh BUILD_A BUILD_B ROUNDS MODEL.gguf [ikllm bench options...]
#   e.g. bench/ab_bench.sh /tmp/old/build build 3 m/llama-1b-Q4_0.gguf -p 0 -n 64 -t 2 -r 2
# BUILD_* are build directories holding ikllm and libikllm.so.0.
set -euo pipefail
a=${1:?build A}; b=${2:?build B}; rounds=${3:?rounds}; model=${4:?model}
shift 4
run() {  # run BUILD -> "test t/s" lines
  LD_LIBRARY_PATH="$1" "$1/ikllm" bench -m "$model" "$@" 2>/dev/null | awk -F'|' '/^\| .* \| (pp|tg)[0-9]+ /{print $5, $6}' \
    | awk '{print $1, $2}'
}
ra=(); rb=()
for ((i = 0; i < rounds; ++i)); do
  while read -r t v; do echo "A $t $v"; ra+=("$t $v"); done < <(run "$a" "$@")
  while read -r t v; do echo "B $t $v"; rb+=("$t $v"); done < <(run "$b" "$@")
done
median() { sort -n | awk '{x[NR]=$1} END {if (NR % 2) print x[(NR+1)/2]; else print (x[NR/2]+x[NR/2+1])/2}'; }
for t in $(printf '%s\n' "${ra[@]}" | awk '{print $1}' | sort -u); do
  ma=$(printf '%s\n' "${ra[@]}" | awk -v t="$t" '$1==t{print $2}' | median)
  mb=$(printf '%s\n' "${rb[@]}" | awk -v t="$t" '$1==t{print $2}' | median)
  awk -v t="$t" -v a="$ma" -v b="$mb" 'BEGIN {printf "%s: A %.2f  B %.2f  B/A %.2f\n", t, a, b, b / a}'
done
