// NEON kernel for the K / IQ-K types against Q8_K activations (Q2_K, Q3_K, IQ4_XS, IQ2_K..IQ6_K
// and the KS / KSS / KL types): the scalar kernel's float operations per output (scalar_matmul in
// kquant_unpack.h), four weight rows per register, so bit-identical to it. The blocks are unpacked
// by the scalar unpackers (K::unpack, once per row and call); the integer sums use `sdot`, or for
// the "sat" types the reference's int16 pair saturation (widening multiplies, saturating pair
// adds: the maddubs the reference's x86 kernels use). Batches of kConvMinTokens tokens or more of
// the conv types take the re-encoded 8-bit rows (conv_block) as the scalar kernel does.
// Anonymous namespace like the other kernel headers: included by NEON files only.
#pragma once
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/kquant_unpack.h"
#include "kernels/neon_common.h"

namespace ikllm::cpu {
namespace {

struct alignas(16) Q8kQuad {
    int8_t v[4][256];                // row r's values (conv: its re-encoded codes)
    int32_t sc[16][4], corr[16][4];  // per 16 weights, by row
    float dw[4], dc[4];
    float d8[4];  // conv: the re-encoded block scale
};

// Sum of u_i a_i over 16 weights as 4 partial lanes, each pair (2i, 2i+1) saturated to int16 first.
inline int32x4_t sat_dot16(int8x16_t v, int8x16_t a) {
    const uint8x16_t u = vreinterpretq_u8_s8(v);
    const int16x8_t pl = vmulq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(u))), vmovl_s8(vget_low_s8(a)));
    const int16x8_t ph = vmulq_s16(vreinterpretq_s16_u16(vmovl_high_u8(u)), vmovl_high_s8(a));
    return vpaddlq_s16(vqaddq_s16(vuzp1q_s16(pl, ph), vuzp2q_s16(pl, ph)));
}

// The four rows' dots with 16 activation codes (weights off..off+15).
template <class K>
inline int32x4_t q8k_dots16(const Q8kQuad& q, int off, int8x16_t a) {
    int32x4_t s[4];
    for (int r = 0; r < 4; ++r) {
        const int8x16_t v = vld1q_s8(q.v[r] + off);
        if constexpr (K::sat) s[r] = sat_dot16(v, a);
        else s[r] = vdotq_s32(vdupq_n_s32(0), v, a);  // values below 128 (uns types) or signed
    }
    return hsum4_lanes(s[0], s[1], s[2], s[3]);
}

template <class K>
void q8k_fill_quad(const uint8_t* row, int64_t nb, int r, bool conv, Q8kQuad* quad) {
    const float rowd = K::row_scale(row);
    KBlock kb;
    for (int64_t b = 0; b < nb; ++b) {
        Q8kQuad& q = quad[b];
        K::unpack(row + K::meta + (size_t)b * K::bytes, rowd, kb);
        if (conv) {
            q.d8[r] = conv_block<K>(kb, q.v[r]);
            continue;
        }
        std::memcpy(q.v[r], kb.v, 256);
        for (int s = 0; s < 16; ++s) {
            q.sc[s][r] = kb.sc[s];
            q.corr[s][r] = kb.corr[s];
        }
        q.dw[r] = kb.dw;
        q.dc[r] = kb.dc;
    }
}

// One token against four rows: acc (lane = row) in scalar_matmul's order.
template <class K>
float32x4_t q8k_quad_token(const Q8kQuad* quad, int64_t nb, const uint8_t* a_row, bool conv) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const Q8kQuad& q = quad[b];
        const uint8_t* a = a_row + (size_t)b * quant::kQ8KBlockBytes;
        const int8_t* qa = act_qs(a);
        const float d = act_d(a);
        if (conv) {  // acc += (d8 * d) * isum
            int32x4_t s[4];
            for (int r = 0; r < 4; ++r) {
                int32x4_t x = vdupq_n_s32(0);
                for (int k = 0; k < 16; ++k) x = vdotq_s32(x, vld1q_s8(q.v[r] + 16 * k), vld1q_s8(qa + 16 * k));
                s[r] = x;
            }
            const int32x4_t isum = hsum4_lanes(s[0], s[1], s[2], s[3]);
            acc = vaddq_f32(acc, vmulq_f32(vmulq_n_f32(vld1q_f32(q.d8), d), vcvtq_f32_s32(isum)));
            continue;
        }
        const int16_t* bs = act_bsums(a);
        int32x4_t isum = vdupq_n_s32(0), icorr = vdupq_n_s32(0);
        for (int s = 0; s < 16; ++s) {
            isum = vmlaq_s32(isum, q8k_dots16<K>(q, 16 * s, vld1q_s8(qa + 16 * s)), vld1q_s32(q.sc[s]));
            icorr = vmlaq_n_s32(icorr, vld1q_s32(q.corr[s]), bs[s]);
        }
        const float32x4_t dw = vld1q_f32(q.dw), dc = vld1q_f32(q.dc);
        // one scale (dw == dc): the sums combined exactly first; else each scaled on its own
        const float32x4_t one = vmulq_n_f32(vmulq_f32(dw, vcvtq_f32_s32(vaddq_s32(isum, icorr))), d);
        const float32x4_t two =
            vmulq_n_f32(vaddq_f32(vmulq_f32(dw, vcvtq_f32_s32(isum)), vmulq_f32(dc, vcvtq_f32_s32(icorr))), d);
        acc = vaddq_f32(acc, vbslq_f32(vceqq_f32(dw, dc), one, two));
    }
    return acc;
}

template <class K>
void q8k_quad_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                     int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const bool conv = K::conv && nt >= kConvMinTokens;
    std::vector<Q8kQuad> quad((size_t)std::max<int64_t>(1, nb));
    auto fill = [&](const uint8_t* row, int i) { q8k_fill_quad<K>(row, nb, i, conv, quad.data()); };
    auto token = [&](const uint8_t* a) { return q8k_quad_token<K>(quad.data(), nb, a, conv); };
    quad_rows_drive(w, wrb, r0, r1, act, arb, nt, y, ys, fill, token);
}

}  // namespace
}  // namespace ikllm::cpu
#endif
