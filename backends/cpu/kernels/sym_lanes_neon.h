// NEON batch products in the symmetric batch order (legacy_sym_accum.h, SymBatchAccum) for any
// weights that come as 32 signed 8-bit codes and one scale per block (legacy_neon.cpp). The NEON
// form of sym_lanes_avx2.h: four tokens share a register, one per 32-bit lane. Their activation
// blocks are transposed once per call so that step s holds every token's bytes 4s..4s+3, and
// `sdot` by lane multiplies a step with the weight dword s: after 8 steps every lane holds its
// token's exact block dot, with no horizontal adds. The float sums then run lane-wise with the
// reference's operations (bit-identical to the scalar kernel).
// Anonymous namespace like the other kernel headers: each ISA file compiles its own copy.
#pragma once
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "kernels/legacy_sym_accum.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

struct alignas(16) LaneBlock4 {
    int8_t q[8][16];  // step s: the 4 tokens' code dwords s
    int32_t off[4];   // 127 * the tokens' block code sums (the offset part of the dot)
    float da[4];      // the tokens' block scales
    float das[4];     // da * block code sum
};

// Tokens [0, nt) as ceil(nt/4) lane groups x nb blocks (missing tokens of the last group: zeros).
inline void build_lanes4(const uint8_t* act, size_t arb, int64_t ne0, int64_t nt, LaneBlock4* out) {
    const int64_t nb = ne0 / 32, ngr = (nt + 3) / 4;
    for (int64_t gr = 0; gr < ngr; ++gr)
        for (int64_t ib = 0; ib < nb; ++ib) {
            LaneBlock4& lb = out[gr * nb + ib];
            for (int l = 0; l < 4; ++l) {
                const int64_t t = gr * 4 + l;
                if (t >= nt) {
                    for (int s = 0; s < 8; ++s) std::memset(lb.q[s] + 4 * l, 0, 4);
                    lb.off[l] = 0;
                    lb.da[l] = lb.das[l] = 0.0f;
                    continue;
                }
                const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act + (size_t)t * arb, ne0, ib);
                for (int s = 0; s < 8; ++s) std::memcpy(lb.q[s] + 4 * l, ab.qs + 4 * s, 4);
                lb.off[l] = kSymBatchOffset * (int32_t)ab.sum;
                lb.da[l] = bf16_to_f32(ab.d_bf16);
                lb.das[l] = lb.da[l] * (float)ab.sum;
            }
        }
}

// One weight row (W: values(ib, lo, hi) = the 32 signed codes of block ib, scale(ib) = its batch
// scale) against G lane groups (4 tokens each) whose blocks start at lb (nb per group).
template <int G, class W>
void row_tile_lanes4(const W& wrow, int64_t nb, const LaneBlock4* lb, int ntok, float* y, int64_t ys) {
    float32x4_t a[G], b[G];
    for (int g = 0; g < G; ++g) a[g] = b[g] = vdupq_n_f32(0.0f);
    for (int64_t ib = 0; ib < nb; ++ib) {
        int8x16_t lo, hi;
        wrow.values(ib, lo, hi);
        const float dw = wrow.scale(ib);
        int32x4_t isum[G];
        for (int g = 0; g < G; ++g) {
            const LaneBlock4& B = lb[g * nb + ib];
            int32x4_t s = vld1q_s32(B.off);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[0]), lo, 0);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[1]), lo, 1);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[2]), lo, 2);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[3]), lo, 3);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[4]), hi, 0);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[5]), hi, 1);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[6]), hi, 2);
            s = vdotq_laneq_s32(s, vld1q_s8(B.q[7]), hi, 3);
            isum[g] = s;
        }
        const float32x4_t vdw = vdupq_n_f32(dw);
        for (int g = 0; g < G; ++g) {
            const LaneBlock4& B = lb[g * nb + ib];
            a[g] = vfmaq_f32(a[g], vmulq_f32(vdw, vld1q_f32(B.da)), vcvtq_f32_s32(isum[g]));
            b[g] = vfmaq_f32(b[g], vdw, vld1q_f32(B.das));
        }
    }
    const float32x4_t m127 = vdupq_n_f32(-(float)kSymBatchOffset);
    for (int g = 0; g < G; ++g) {
        float out[4];
        vst1q_f32(out, vfmaq_f32(a[g], m127, b[g]));
        for (int l = 0; l < 4 && 4 * g + l < ntok; ++l) y[(4 * g + l) * ys] = out[l];
    }
}

// Rows r0..r1 against nt tokens. Rows: prepare(ra, rb) readies rows [ra, rb), row(r) gives a W
// for row_tile_lanes4. Chunks of 16 rows stay in cache while every token group streams past.
template <class Rows>
void lanes4_matmul(Rows& rows, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
                   float* y, int64_t ys) {
    constexpr int G = 3;  // 12 tokens: 6 accumulators + 3 sums beside the weights and steps
    constexpr int64_t kRowChunk = 16;
    const int64_t nb = ne0 / 32, ngr = (nt + 3) / 4;
    std::vector<LaneBlock4> lanes((size_t)std::max<int64_t>(1, ngr * nb));
    build_lanes4(act, arb, ne0, nt, lanes.data());
    for (int64_t rc = r0; rc < r1; rc += kRowChunk) {
        const int64_t re = std::min(r1, rc + kRowChunk);
        rows.prepare(rc, re);
        for (int64_t gr = 0; gr < ngr; gr += G) {
            const int gg = (int)std::min<int64_t>(G, ngr - gr);
            const int ntok = (int)std::min<int64_t>(4 * gg, nt - 4 * gr);
            for (int64_t r = rc; r < re; ++r) {
                float* yo = y + 4 * gr * ys + r;
                const LaneBlock4* l = lanes.data() + gr * nb;
                if (gg == 3) row_tile_lanes4<3>(rows.row(r), nb, l, ntok, yo, ys);
                else if (gg == 2) row_tile_lanes4<2>(rows.row(r), nb, l, ntok, yo, ys);
                else row_tile_lanes4<1>(rows.row(r), nb, l, ntok, yo, ys);
            }
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
#endif
