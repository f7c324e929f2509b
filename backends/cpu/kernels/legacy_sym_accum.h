// Float accumulation of the symmetric 32-weight types (Q4_0, Q5_0, Q6_0, Q8_0, IQ4_NL, MXFP4)
// in the reference engine's order, so that our logits round like its logits.
//
// Why: the reference (x86, AVX-512 VNNI build) multiplies these types as unsigned codes
// u = v + offset against the Q8_2_X4 activation codes and subtracts offset * d_w * d_a * sum(a)
// in float. The two terms nearly cancel, so its float rounding is much coarser than an exact
// integer dot and flips activation codes downstream (1e-2 logit spikes, MoE routing changes).
// Matching it needs the same float operations in the same order; the integer parts are exact.
//
// Two forms, chosen by the number of tokens in the call (reference: small batches use the
// plain block kernel, batches of kSymBatchTokens or more are converted to 8-row-interleaved
// Q8_0 blocks first):
//  - SymTileAccum (fewer tokens): 8 float lanes. For groups of 4 blocks (the Q8_2_X4 groups)
//    lane j takes block j's first 16 products, lane 4+j its last 16, each as
//    fma(d_w*d_a, isum, lane); a 4-lane side sum adds (d_w*-offset)*(d_a*sum_a). Leftover blocks
//    add their 8 quad sums to the 8 lanes and a quarter of their offset term to each side lane.
//    Result: ((l[0..3] + l[4..7]) + side) reduced as (x0 + x2) + (x1 + x3).
//  - SymBatchAccum (batches): offset 127 for every type (the blocks are re-encoded as signed
//    int8), a = fma(d_w*d_a, sum((v+127)*a), a), b = fma(d_w, d_a*sum_a, b); result fma(-127, b, a).
// The SIMD kernels compute the same per-lane operations with vector instructions (bit-identical).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/fp16.h"

namespace ikllm::cpu {
// Anonymous: every kernel file compiles its own copy with its own ISA flags (a shared inline
// function's out-of-line copy could otherwise come from an AVX-512 file).
namespace {

constexpr int64_t kSymBatchTokens = 32;
constexpr int kSymBatchOffset = 127;

// The batch form's block scale: fp16 (E8M0 scales are rounded to fp16 on re-encoding).
inline float sym_batch_scale(float d, bool e8m0) { return e8m0 ? f16_to_f32(f32_to_f16(d)) : d; }

struct SymTileAccum {
    float lane[8] = {};
    float side[4] = {};

    // Block j (0..3) of a full group of four: isum_lo/hi = sum of u*a over its first/last 16 weights.
    void add_group_block(int j, float dw, float offset, float da, int16_t sum_a, int32_t isum_lo, int32_t isum_hi) {
        const float dd = dw * da;
        side[j] = side[j] + (dw * -offset) * (da * (float)sum_a);
        lane[j] = std::fma(dd, (float)isum_lo, lane[j]);
        lane[4 + j] = std::fma(dd, (float)isum_hi, lane[4 + j]);
    }
    // A block after the last full group: quad[k] = sum of u*a over weights 4k..4k+3.
    void add_single_block(float dw, float offset, float da, int16_t sum_a, const int32_t quad[8]) {
        const float dd = dw * da;
        const float q = ((-dw * offset) * (da * (float)sum_a)) * 0.25f;
        for (float& s : side) s = s + q;
        for (int k = 0; k < 8; ++k) lane[k] = std::fma(dd, (float)quad[k], lane[k]);
    }
    float result() const {
        float x[4];
        for (int j = 0; j < 4; ++j) x[j] = (lane[j] + lane[4 + j]) + side[j];
        return (x[0] + x[2]) + (x[1] + x[3]);
    }
};

struct SymBatchAccum {
    float a = 0.0f, b = 0.0f;
    // isum = sum of (v + 127) * a over the block.
    void add(float dw, float da, int16_t sum_a, int32_t isum) {
        a = std::fma(dw * da, (float)isum, a);
        b = std::fma(dw, da * (float)sum_a, b);
    }
    float result() const { return std::fma(-(float)kSymBatchOffset, b, a); }
};

}  // namespace
}  // namespace ikllm::cpu
