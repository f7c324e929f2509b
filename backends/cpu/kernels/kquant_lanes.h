// Q4_K / Q5_K / Q6_K prompt batches with eight tokens per register (kquant_lanes_avx2.h): compiled once
// with AVX2 (kquant_lanes_avx2.cpp) and once with AVX2 + AVX-VNNI (kquant_lanes_avxvnni.cpp), in
// files of their own so that no implicit fused multiply-add moves their bits off the scalar
// kernel's (CMakeLists.txt compiles them with -ffp-contract=off). Called by the AVX2 kernel
// tables for nt >= kQ45KLanesMinTokens.
#pragma once
#include "kernels/matmul.h"

namespace ikllm::cpu {
// Fewest tokens of a call for the lanes kernels (fewer: kquant_q82.h's tiles).
inline constexpr int64_t kQ45KLanesMinTokens = 16;  // kInvariantTokens + 1 (matmul_rows.h)
// Each has MatmulFn's signature (matmul.h): Q4_K, Q5_K, and Q6_K from kQ45KLanesMinTokens to
// kQ6ConvMinTokens - 1 tokens (its scalar kernel's direct mode), per ISA build.
using KquantLanesFn = void(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                           size_t arb, int64_t nt, float* y, int64_t ys);
KquantLanesFn q4k_lanes_matmul_avx2, q5k_lanes_matmul_avx2, q6k_lanes_matmul_avx2;
KquantLanesFn q4k_lanes_matmul_avxvnni, q5k_lanes_matmul_avxvnni, q6k_lanes_matmul_avxvnni;
}  // namespace ikllm::cpu
