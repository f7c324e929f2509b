// NEON (AArch64 with the dot-product instructions) kernels for the 32-weight block types against
// Q8_2_X4 activations: the same float operations per output as the AVX2 kernels (legacy_avx2.cpp)
// and so as the scalar reference, with `sdot` for the exact integer parts.
//  - Symmetric types, fewer than kSymBatchTokens tokens: SymTileAccum order, one row against up
//    to 4 tokens; the unsigned-code sums of the reference (u = v + offset) are the signed sums
//    plus offset * the activation half-block sums, which are computed once per call.
//  - Symmetric types, batches: SymBatchAccum order, 4 tokens per register (sym_lanes_neon.h).
//  - Affine types (Q4_1, Q5_1): the AVX2 kernel's order (4 block lanes, then the leftover
//    blocks in a scalar tail), within rounding of the scalar kernel.
#include "kernels/matmul.h"
#include "quant/type_traits.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <algorithm>
#include <vector>

#include "kernels/act_q8_2_x4_neon.h"
#include "kernels/legacy_sym_accum.h"
#include "kernels/neon_common.h"
#include "kernels/sym_lanes_neon.h"
#include "kernels/token_tiles.h"
#include "quant/act_q8_0.h"
#include "quant/legacy_blocks.h"

namespace ikllm::cpu {
namespace {

namespace lq = quant::legacy;

// ---- block unpackers: values(b, lo, hi) = weights 0..15 / 16..31 as int8 (affine: codes) ------

inline void nibbles(const uint8_t* qs, uint8x16_t& lo, uint8x16_t& hi) {
    const uint8x16_t x = vld1q_u8(qs);
    lo = vandq_u8(x, vdupq_n_u8(15));
    hi = vshrq_n_u8(x, 4);
}

// Byte w = 0x10 when bit w of the little-endian 32-bit word at qh4 is set (5th bit of Q5 codes).
inline void bit5(const uint8_t* qh4, uint8x16_t& lo, uint8x16_t& hi) {
    static const uint8_t kIdxLo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static const uint8_t kIdxHi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    static const uint8_t kBits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t q = vreinterpretq_u8_u32(vdupq_n_u32(lq::rd32(qh4)));
    const uint8x16_t bits = vld1q_u8(kBits), b10 = vdupq_n_u8(0x10);
    lo = vandq_u8(vtstq_u8(vqtbl1q_u8(q, vld1q_u8(kIdxLo)), bits), b10);
    hi = vandq_u8(vtstq_u8(vqtbl1q_u8(q, vld1q_u8(kIdxHi)), bits), b10);
}

inline float32x4_t fp16_scales4(const uint8_t* b, int stride) {
    const uint16_t h[4] = {lq::rd16(b), lq::rd16(b + stride), lq::rd16(b + 2 * stride), lq::rd16(b + 3 * stride)};
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

inline int8x16_t s8(uint8x16_t x) { return vreinterpretq_s8_u8(x); }

struct Q4_0N {
    static constexpr int kOffset = 8;
    static constexpr bool kE8M0 = false, kAffine = false;
    static constexpr int kBytes = lq::kQ4_0Bytes;
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
        uint8x16_t l, h;
        nibbles(b + 2, l, h);
        lo = vsubq_s8(s8(l), vdupq_n_s8(8));
        hi = vsubq_s8(s8(h), vdupq_n_s8(8));
    }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct Q4_1N {
    static constexpr bool kAffine = true;
    static constexpr int kBytes = lq::kQ4_1Bytes;
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
        uint8x16_t l, h;
        nibbles(b + 4, l, h);
        lo = s8(l);
        hi = s8(h);
    }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
    static float min(const uint8_t* b) { return lq::rdf16(b + 2); }
};
struct Q5_0N {
    static constexpr int kOffset = 16;
    static constexpr bool kE8M0 = false, kAffine = false;
    static constexpr int kBytes = lq::kQ5_0Bytes;
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
        uint8x16_t l, h, bl, bh;
        nibbles(b + 6, l, h);
        bit5(b + 2, bl, bh);
        lo = vsubq_s8(s8(vorrq_u8(l, bl)), vdupq_n_s8(16));
        hi = vsubq_s8(s8(vorrq_u8(h, bh)), vdupq_n_s8(16));
    }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct Q5_1N {
    static constexpr bool kAffine = true;
    static constexpr int kBytes = lq::kQ5_1Bytes;
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
        uint8x16_t l, h, bl, bh;
        nibbles(b + 8, l, h);
        bit5(b + 4, bl, bh);
        lo = s8(vorrq_u8(l, bl));
        hi = s8(vorrq_u8(h, bh));
    }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
    static float min(const uint8_t* b) { return lq::rdf16(b + 2); }
};
struct Q8_0N {
    static constexpr int kOffset = 127;
    static constexpr bool kE8M0 = false, kAffine = false;
    static constexpr int kBytes = lq::kQ8_0Bytes;
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
        lo = vld1q_s8(reinterpret_cast<const int8_t*>(b + 2));
        hi = vld1q_s8(reinterpret_cast<const int8_t*>(b + 18));
    }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct Q6_0N {
    static constexpr int kOffset = 32;
    static constexpr bool kE8M0 = false, kAffine = false;
    static constexpr int kBytes = lq::kQ6_0Bytes;
    // Bits 4-5 (quant-formats.md §5.6): weights 0-7 from bits 0-1 of qh[0..7], 8-15 bits 4-5,
    // 16-23 bits 2-3, 24-31 bits 6-7.
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
        uint8x16_t l, h;
        nibbles(b + 10, l, h);
        const uint8x8_t qh = vld1_u8(b + 2), m3 = vdup_n_u8(3);
        const uint8x16_t hl = vcombine_u8(vand_u8(qh, m3), vand_u8(vshr_n_u8(qh, 4), m3));
        const uint8x16_t hh = vcombine_u8(vand_u8(vshr_n_u8(qh, 2), m3), vshr_n_u8(qh, 6));
        lo = vsubq_s8(s8(vorrq_u8(l, vshlq_n_u8(hl, 4))), vdupq_n_s8(32));
        hi = vsubq_s8(s8(vorrq_u8(h, vshlq_n_u8(hh, 4))), vdupq_n_s8(32));
    }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
template <const int8_t* Table, int kQsOffset>
inline void table_values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) {
    uint8x16_t l, h;
    nibbles(b + kQsOffset, l, h);
    const int8x16_t t = vld1q_s8(Table);
    lo = vqtbl1q_s8(t, l);
    hi = vqtbl1q_s8(t, h);
}
struct IQ4_NLN {
    static constexpr int kOffset = 128;
    static constexpr bool kE8M0 = false, kAffine = false;
    static constexpr int kBytes = lq::kIq4NlBytes;
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) { table_values<lq::kIq4nlValues, 2>(b, lo, hi); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct MXFP4N {
    static constexpr int kOffset = 12;
    static constexpr bool kE8M0 = true, kAffine = false;
    static constexpr int kBytes = lq::kMxfp4Bytes;
    static void values(const uint8_t* b, int8x16_t& lo, int8x16_t& hi) { table_values<lq::kMxfp4Values, 1>(b, lo, hi); }
    static float scale(const uint8_t* b) { return lq::e8m0_half(b[0]); }
};

template <class P>
inline float32x4_t scales4(const uint8_t* wb) {
    if constexpr (P::kAffine || !P::kE8M0) return fp16_scales4(wb, P::kBytes);
    else {
        const float s[4] = {P::scale(wb), P::scale(wb + P::kBytes), P::scale(wb + 2 * P::kBytes), P::scale(wb + 3 * P::kBytes)};
        return vld1q_f32(s);
    }
}

// ---- shared helpers -------------------------------------------------------------------------------

inline int32x4_t dot16(int8x16_t v, const int8_t* a) { return vdotq_s32(vdupq_n_s32(0), v, vld1q_s8(a)); }

// The 4 bf16 scales and 4 int16 sums at the head of a Q8_2_X4 group.
inline float32x4_t act_scales4(const uint8_t* head) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(head)), 16));
}
inline float32x4_t act_sums4(const uint8_t* head) {
    return vcvtq_f32_s32(vmovl_s16(vld1_s16(reinterpret_cast<const int16_t*>(head + 8))));
}

// (x0 + x2) + (x1 + x3), the AVX2 kernels' final reduction.
inline float hsum_pairs(float32x4_t x) {
    const float32x2_t p = vadd_f32(vget_low_f32(x), vget_high_f32(x));
    return vget_lane_f32(p, 0) + vget_lane_f32(p, 1);
}

// Per token and group of 4 blocks: offset * the half-block code sums (the unsigned-code part of
// the reference's dot), the block scales, and scale * code sum (the side term).
struct alignas(16) TileGroup {
    int32_t off_lo[4], off_hi[4];
    float da[4], das[4];
};

template <class P>
void build_tile_groups(const uint8_t* act, size_t arb, int64_t nt, int64_t ng, TileGroup* out) {
    const int8x16_t ones = vdupq_n_s8(1);
    const int32x4_t off = vdupq_n_s32(P::kOffset);
    for (int64_t t = 0; t < nt; ++t)
        for (int64_t g = 0; g < ng; ++g) {
            const uint8_t* ag = act + (size_t)t * arb + 144 * g;
            const int8_t* q = reinterpret_cast<const int8_t*>(ag + 16);
            TileGroup& tg = out[t * ng + g];
            const int32x4_t lo = hsum4_lanes(dot16(ones, q), dot16(ones, q + 32), dot16(ones, q + 64), dot16(ones, q + 96));
            const int32x4_t hi = hsum4_lanes(dot16(ones, q + 16), dot16(ones, q + 48), dot16(ones, q + 80), dot16(ones, q + 112));
            vst1q_s32(tg.off_lo, vmulq_s32(lo, off));
            vst1q_s32(tg.off_hi, vmulq_s32(hi, off));
            const float32x4_t da = act_scales4(ag);
            vst1q_f32(tg.da, da);
            vst1q_f32(tg.das, vmulq_f32(da, act_sums4(ag)));
        }
}

// ---- symmetric types, fewer than kSymBatchTokens tokens: SymTileAccum order -----------------------

// The blocks after the last full group (one row, one token): quads of u*a into the 8 lanes and a
// quarter of the offset term into each side lane; then ((lo + hi) + side) reduced in pairs.
template <class P>
float sym_finish(const uint8_t* wr, int64_t ne0, const uint8_t* act_t, float32x4_t lo, float32x4_t hi, float32x4_t side) {
    const int64_t nb = ne0 / 32;
    const int8x16_t ones = vdupq_n_s8(1);
    const int32x4_t off = vdupq_n_s32(P::kOffset);
    for (int64_t ib = nb / 4 * 4; ib < nb; ++ib) {  // 36-byte activation blocks
        const uint8_t* wb = wr + ib * P::kBytes;
        int8x16_t vl, vh;
        P::values(wb, vl, vh);
        const float dw = P::scale(wb);
        const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act_t, ne0, ib);
        const int32x4_t ql = vmlaq_s32(dot16(vl, ab.qs), dot16(ones, ab.qs), off);
        const int32x4_t qh = vmlaq_s32(dot16(vh, ab.qs + 16), dot16(ones, ab.qs + 16), off);
        const float da = bf16_to_f32(ab.d_bf16);
        const float quarter = ((-dw * (float)P::kOffset) * (da * (float)ab.sum)) * 0.25f;
        side = vaddq_f32(side, vdupq_n_f32(quarter));
        const float32x4_t dd = vdupq_n_f32(dw * da);
        lo = vfmaq_f32(lo, dd, vcvtq_f32_s32(ql));
        hi = vfmaq_f32(hi, dd, vcvtq_f32_s32(qh));
    }
    return hsum_pairs(vaddq_f32(vaddq_f32(lo, hi), side));
}

// One weight row against T tokens whose tile groups start at tg (ng per token).
template <class P, int T>
void row_tile_sym(const uint8_t* wr, int64_t ne0, const TileGroup* tg, const uint8_t* act, size_t arb, float* y,
                  int64_t ys) {
    const int64_t ng = ne0 / 128;
    float32x4_t lo[T], hi[T], side[T];
    for (int t = 0; t < T; ++t) lo[t] = hi[t] = side[t] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* wb = wr + 4 * g * P::kBytes;
        int8x16_t vl[4], vh[4];
        for (int k = 0; k < 4; ++k) P::values(wb + k * P::kBytes, vl[k], vh[k]);
        const float32x4_t dw = scales4<P>(wb);
        const float32x4_t mo = vmulq_f32(dw, vdupq_n_f32(-(float)P::kOffset));
        for (int t = 0; t < T; ++t) {
            const int8_t* q = reinterpret_cast<const int8_t*>(act + t * arb + 144 * g + 16);
            const TileGroup& G = tg[t * ng + g];
            const int32x4_t il = vaddq_s32(vld1q_s32(G.off_lo), hsum4_lanes(dot16(vl[0], q), dot16(vl[1], q + 32),
                                                                       dot16(vl[2], q + 64), dot16(vl[3], q + 96)));
            const int32x4_t ih = vaddq_s32(vld1q_s32(G.off_hi), hsum4_lanes(dot16(vh[0], q + 16), dot16(vh[1], q + 48),
                                                                       dot16(vh[2], q + 80), dot16(vh[3], q + 112)));
            const float32x4_t dd = vmulq_f32(dw, vld1q_f32(G.da));
            lo[t] = vfmaq_f32(lo[t], dd, vcvtq_f32_s32(il));
            hi[t] = vfmaq_f32(hi[t], dd, vcvtq_f32_s32(ih));
            side[t] = vaddq_f32(side[t], vmulq_f32(mo, vld1q_f32(G.das)));
        }
    }
    for (int t = 0; t < T; ++t) y[t * ys] = sym_finish<P>(wr, ne0, act + t * arb, lo[t], hi[t], side[t]);
}

template <class P>
void run_sym_tiles(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                   int64_t nt, float* y, int64_t ys) {
    const int64_t ng = ne0 / 128;
    std::vector<TileGroup> groups((size_t)std::max<int64_t>(1, nt * ng));
    build_tile_groups<P>(act, arb, nt, ng, groups.data());
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + (size_t)r * wrb;
        for_token_tiles4(nt, [&](int64_t t, auto tile) {
            row_tile_sym<P, decltype(tile)::value>(wr, ne0, groups.data() + t * ng, act + (size_t)t * arb, arb,
                                                   y + t * ys + r, ys);
        });
    }
}

// ---- affine types: the AVX2 row_tile order -----------------------------------------------------------

template <class P, int T>
void row_tile_affine(const uint8_t* wr, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    float32x4_t acc[T];
    for (int t = 0; t < T; ++t) acc[t] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* wb = wr + 4 * g * P::kBytes;
        int8x16_t vl[4], vh[4];
        for (int k = 0; k < 4; ++k) P::values(wb + k * P::kBytes, vl[k], vh[k]);
        const float32x4_t dw = fp16_scales4(wb, P::kBytes), mw = fp16_scales4(wb + 2, P::kBytes);
        for (int t = 0; t < T; ++t) {
            const uint8_t* ag = act + t * arb + 144 * g;
            const int8_t* q = reinterpret_cast<const int8_t*>(ag + 16);
            int32x4_t s[4];
            for (int k = 0; k < 4; ++k) s[k] = vdotq_s32(dot16(vl[k], q + 32 * k), vh[k], vld1q_s8(q + 32 * k + 16));
            const int32x4_t isum = hsum4_lanes(s[0], s[1], s[2], s[3]);
            const float32x4_t da = act_scales4(ag);
            acc[t] = vfmaq_f32(acc[t], vmulq_f32(dw, da), vcvtq_f32_s32(isum));
            acc[t] = vfmaq_f32(acc[t], vmulq_f32(mw, da), act_sums4(ag));
        }
    }
    float tail[T] = {};
    for (int64_t ib = 4 * ng; ib < nb; ++ib) {  // leftover blocks: 36-byte activation blocks
        const uint8_t* wb = wr + ib * P::kBytes;
        int8x16_t vl, vh;
        P::values(wb, vl, vh);
        const float dw = P::scale(wb), mw = P::min(wb);
        for (int t = 0; t < T; ++t) {
            const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act + t * arb, ne0, ib);
            const int isum = vaddvq_s32(vdotq_s32(dot16(vl, ab.qs), vh, vld1q_s8(ab.qs + 16)));
            const float da = bf16_to_f32(ab.d_bf16);
            tail[t] += (dw * da) * (float)isum;
            tail[t] += (mw * da) * (float)ab.sum;
        }
    }
    for (int t = 0; t < T; ++t) y[t * ys] = hsum_pairs(acc[t]) + tail[t];
}

template <class P>
void run_affine(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                int64_t nt, float* y, int64_t ys) {
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + (size_t)r * wrb;
        for_token_tiles4(nt, [&](int64_t t, auto tile) {
            row_tile_affine<P, decltype(tile)::value>(wr, ne0, act + (size_t)t * arb, arb, y + t * ys + r, ys);
        });
    }
}

// ---- dispatch ------------------------------------------------------------------------------------------

// Batches: the weight rows as sym_lanes_neon.h wants them.
template <class P>
struct LegacyLaneRows4 {
    const uint8_t* w;
    size_t wrb;
    struct Row {
        const uint8_t* wr;
        void values(int64_t ib, int8x16_t& lo, int8x16_t& hi) const { P::values(wr + ib * P::kBytes, lo, hi); }
        float scale(int64_t ib) const { return sym_batch_scale(P::scale(wr + ib * P::kBytes), P::kE8M0); }
    };
    void prepare(int64_t, int64_t) {}
    Row row(int64_t r) const { return {w + (size_t)r * wrb}; }
};

template <class P>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    if constexpr (P::kAffine) {
        run_affine<P>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    } else if (nt >= kSymBatchTokens) {
        LegacyLaneRows4<P> rows{w, wrb};
        lanes4_matmul(rows, ne0, r0, r1, act, arb, nt, y, ys);
    } else {
        run_sym_tiles<P>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    }
}

}  // namespace

KernelTable legacy_kernels_neon() {
    static const MatmulKernel kKernels[] = {
        {quant::T_Q4_0, Isa::neon, neon_act_q8_2_x4(), run<Q4_0N>},
        {quant::T_Q4_1, Isa::neon, neon_act_q8_2_x4(), run<Q4_1N>},
        {quant::T_Q5_0, Isa::neon, neon_act_q8_2_x4(), run<Q5_0N>},
        {quant::T_Q5_1, Isa::neon, neon_act_q8_2_x4(), run<Q5_1N>},
        {quant::T_Q8_0, Isa::neon, neon_act_q8_2_x4(), run<Q8_0N>},
        {quant::T_Q6_0, Isa::neon, neon_act_q8_2_x4(), run<Q6_0N>},
        {quant::T_IQ4_NL, Isa::neon, neon_act_q8_2_x4(), run<IQ4_NLN>},
        {quant::T_MXFP4, Isa::neon, neon_act_q8_2_x4(), run<MXFP4N>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable legacy_kernels_neon() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
