// NEON (AArch64 + dot product) kernels for Q4_K, Q5_K and Q6_K against Q8_2_X4 activations, with
// the scalar kernel's float operations per output (scalar_matmul_q82 in kquant_unpack.h; this file
// is compiled without contraction of a*b+c like every non-x86 file): bit-identical to it. Four
// weight rows share a register, one per lane; the rows' codes are unpacked once per call into a
// buffer and every token streams past them. Per 32 weights and token the exact integer sums of
// the four rows come from `sdot` and one pairwise-add tree. Q6_K prompt batches take the
// re-encoded 8-bit form in the symmetric batch order (kquant_q6k_conv.h, sym_lanes_neon.h).
// Q2_K and Q3_K (Q8_K activations): kquant_q8k_neon.h.
#include "kernels/matmul.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <algorithm>
#include <vector>

#include "kernels/act_q8_2_x4_neon.h"
#include "kernels/kquant_q6k_conv.h"
#include "kernels/kquant_q8k_neon.h"
#include "kernels/kquant_unpack.h"
#include "kernels/sym_lanes_neon.h"

namespace ikllm::cpu {
namespace {

// Four rows' 256-weight blocks: codes by row, scales and corrections by (sub-block, row).
struct alignas(16) QuadBlock {
    int8_t v[4][256];
    int32_t sc[16][4], corr[16][4];  // per 16 weights (quad_finish: from the rows' raw bytes)
    float dw[4], dc[4];
    float D[8][4], M[8][4];  // conv mode (Q4_K / Q5_K batches): fp16-rounded per-32 scales
    int8_t raw_sc[4][16], raw_m[4][16];  // by row, as unpacked (raw_m: Q4_K / Q5_K mins)
};

// [r][16] bytes of the four rows -> [16][4] int32 (one vector per 16 weights).
inline void quad_transpose16(const int8_t (&raw)[4][16], int32_t (&out)[16][4]) {
    const int8x16x4_t rows = {{vld1q_s8(raw[0]), vld1q_s8(raw[1]), vld1q_s8(raw[2]), vld1q_s8(raw[3])}};
    int8_t t[64];
    vst4q_s8(t, rows);  // t[4 s + r] = raw[r][s]
    for (int s = 0; s < 16; s += 4) {
        const int8x16_t x = vld1q_s8(t + 4 * s);
        const int16x8_t lo = vmovl_s8(vget_low_s8(x)), hi = vmovl_high_s8(x);
        vst1q_s32(out[s], vmovl_s16(vget_low_s16(lo)));
        vst1q_s32(out[s + 1], vmovl_high_s16(lo));
        vst1q_s32(out[s + 2], vmovl_s16(vget_low_s16(hi)));
        vst1q_s32(out[s + 3], vmovl_high_s16(hi));
    }
}

// ---- code unpackers (values as kval<K> gives them: unsigned, below 64, so int8 is exact) -------

inline void unpack_q4k_codes(const uint8_t* qs, int8_t* v) {  // p4k_codes
    const uint8x16_t m15 = vdupq_n_u8(15);
    for (int g = 0; g < 4; ++g)
        for (int h = 0; h < 2; ++h) {
            const uint8x16_t q = vld1q_u8(qs + 32 * g + 16 * h);
            vst1q_s8(v + 64 * g + 16 * h, vreinterpretq_s8_u8(vandq_u8(q, m15)));
            vst1q_s8(v + 64 * g + 32 + 16 * h, vreinterpretq_s8_u8(vshrq_n_u8(q, 4)));
        }
}

inline void or_high_bit(const uint8_t* hb, int8_t* v) {  // hb_or(hb, 4, v)
    const uint8x16_t h[2] = {vld1q_u8(hb), vld1q_u8(hb + 16)};
    const uint8x16_t b10 = vdupq_n_u8(0x10);
    for (int k = 0; k < 8; ++k)
        for (int i = 0; i < 2; ++i) {
            const uint8x16_t bit = vandq_u8(vshlq_u8(h[i], vdupq_n_s8((int8_t)(4 - k))), b10);
            uint8_t* dst = reinterpret_cast<uint8_t*>(v + 32 * k + 16 * i);
            vst1q_u8(dst, vorrq_u8(vld1q_u8(dst), bit));
        }
}

inline void unpack_q6k_codes(const uint8_t* b, int8_t* v) {  // KQ6K::unpack
    const uint8x16_t m15 = vdupq_n_u8(15), m3 = vdupq_n_u8(3);
    for (int c = 0; c < 2; ++c)
        for (int i = 0; i < 2; ++i) {
            const uint8x16_t q0 = vld1q_u8(b + 64 * c + 16 * i), q1 = vld1q_u8(b + 64 * c + 32 + 16 * i);
            const uint8x16_t h = vld1q_u8(b + 128 + 32 * c + 16 * i);
            int8_t* o = v + 128 * c + 16 * i;
            vst1q_s8(o, vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q0, m15), vshlq_n_u8(vandq_u8(h, m3), 4))));
            vst1q_s8(o + 32, vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q1, m15), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4))));
            vst1q_s8(o + 64, vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4))));
            vst1q_s8(o + 96, vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4))));
        }
}

// ---- per-type descriptors -----------------------------------------------------------------------------

// The 8 six-bit scales and mins of a Q4_K / Q5_K block header (quant-formats.md §6.1, kscale_get):
// j < 4: sc = S[j] & 63, m = S[j+4] & 63; j >= 4: sc = (S[j+4] & 15) | (S[j-4] >> 6) << 4,
// m = (S[j+4] >> 4) | (S[j] >> 6) << 4.
inline void q45k_scales8(const uint8_t* S, uint8x8_t& sc, uint8x8_t& m) {
    static const int8_t kShift[8] = {0, 0, 0, 0, -4, -4, -4, -4};
    const uint8x8_t s0 = vld1_u8(S);                                       // S[0..7]
    const uint8x8_t s8 = vreinterpret_u8_u32(vdup_n_u32(rd_u32(S + 8)));  // S[8..11] twice
    const uint8x8_t a = vand_u8(s0, vdup_n_u8(63));                        // sc 0-3 | m 0-3
    const uint8x8_t b = vorr_u8(vand_u8(vshl_u8(s8, vld1_s8(kShift)), vdup_n_u8(15)),
                                vshl_n_u8(vshr_n_u8(s0, 6), 4));           // sc 4-7 | m 4-7
    sc = vreinterpret_u8_u32(vtrn1_u32(vreinterpret_u32_u8(a), vreinterpret_u32_u8(b)));
    m = vreinterpret_u8_u32(vtrn2_u32(vreinterpret_u32_u8(a), vreinterpret_u32_u8(b)));
}

template <bool Five>
struct Q45N {
    static constexpr int kBytes = Five ? 176 : 144;
    static constexpr bool kPer32 = true;  // one scale and one correction per 32 weights
    static void unpack(const uint8_t* b, QuadBlock& q, int r, bool conv) {
        unpack_q4k_codes(b + (Five ? 48 : 16), q.v[r]);
        if (Five) or_high_bit(b + 16, q.v[r]);
        const float dw = h2f(b), dc = -h2f(b + 2);
        q.dw[r] = dw;
        q.dc[r] = dc;
        uint8x8_t sc, m;
        q45k_scales8(b + 4, sc, m);
        vst1q_s8(q.raw_sc[r], vreinterpretq_s8_u8(vcombine_u8(vzip1_u8(sc, sc), vzip2_u8(sc, sc))));  // per 16
        vst1q_s8(q.raw_m[r], vreinterpretq_s8_u8(vcombine_u8(vzip1_u8(m, m), vzip2_u8(m, m))));
        if (conv)
            for (int j = 0; j < 8; ++j) {
                q.D[j][r] = round_to_half(dw * (float)q.raw_sc[r][2 * j]);
                q.M[j][r] = round_to_half(dc * (float)q.raw_m[r][2 * j]);
            }
    }
    static void finish(QuadBlock& q) {  // after the four rows
        quad_transpose16(q.raw_sc, q.sc);
        quad_transpose16(q.raw_m, q.corr);
    }
};
struct Q6N {
    static constexpr int kBytes = 210;
    static constexpr bool kPer32 = false;
    static void unpack(const uint8_t* b, QuadBlock& q, int r, bool) {
        unpack_q6k_codes(b, q.v[r]);
        vst1q_s8(q.raw_sc[r], vld1q_s8(reinterpret_cast<const int8_t*>(b + 192)));
        q.dw[r] = q.dc[r] = h2f(b + 208);
    }
    static void finish(QuadBlock& q) {  // corr = -32 sc
        quad_transpose16(q.raw_sc, q.sc);
        for (int s = 0; s < 16; ++s) vst1q_s32(q.corr[s], vmulq_n_s32(vld1q_s32(q.sc[s]), -32));
    }
};

// The four rows' exact dots with 16 activation codes at a (row r's codes at v[r] + off).
inline int32x4_t dots16(const QuadBlock& q, int off, int8x16_t a) {
    const int32x4_t z = vdupq_n_s32(0);
    return hsum4_lanes(vdotq_s32(z, vld1q_s8(q.v[0] + off), a), vdotq_s32(z, vld1q_s8(q.v[1] + off), a),
                 vdotq_s32(z, vld1q_s8(q.v[2] + off), a), vdotq_s32(z, vld1q_s8(q.v[3] + off), a));
}
inline int32x4_t dots32(const QuadBlock& q, int off, int8x16_t a0, int8x16_t a1) {
    const int32x4_t z = vdupq_n_s32(0);
    int32x4_t s[4];
    for (int r = 0; r < 4; ++r) s[r] = vdotq_s32(vdotq_s32(z, vld1q_s8(q.v[r] + off), a0), vld1q_s8(q.v[r] + off + 16), a1);
    return hsum4_lanes(s[0], s[1], s[2], s[3]);
}

// One token against four rows' blocks: acc (lane = row) in scalar_matmul_q82's order.
template <class K>
float32x4_t quad_token(const QuadBlock* qb, int64_t nb, const uint8_t* a_row, bool conv) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const QuadBlock& q = qb[b];
        const uint8_t* a = a_row + (size_t)b * kQ82BlockBytes;
        const float32x4_t dw = vld1q_f32(q.dw), dc = vld1q_f32(q.dc);
        for (int j = 0; j < 8; ++j) {
            const int8_t* qa = q82_qs(a, j);
            const int8x16_t a0 = vld1q_s8(qa), a1 = vld1q_s8(qa + 16);
            const float d = q82_d(a, j);
            float32x4_t s;
            if (K::kPer32 && conv) {  // acc += d * (D * dot + M * bs)
                const float bs = (float)q82_sum(a, j);
                const float32x4_t p = vmulq_f32(vld1q_f32(q.D[j]), vcvtq_f32_s32(dots32(q, 32 * j, a0, a1)));
                s = vaddq_f32(p, vmulq_n_f32(vld1q_f32(q.M[j]), bs));
            } else {  // acc += d * (dw * isum + dc * icorr)
                int32x4_t isum, icorr;
                if constexpr (K::kPer32) {
                    isum = vmulq_s32(dots32(q, 32 * j, a0, a1), vld1q_s32(q.sc[2 * j]));
                    icorr = vmulq_n_s32(vld1q_s32(q.corr[2 * j]), q82_sum(a, j));
                } else {
                    isum = vmlaq_s32(vmulq_s32(dots16(q, 32 * j, a0), vld1q_s32(q.sc[2 * j])), dots16(q, 32 * j + 16, a1),
                                     vld1q_s32(q.sc[2 * j + 1]));
                    icorr = vmlaq_n_s32(vmulq_n_s32(vld1q_s32(q.corr[2 * j]), vaddlvq_s8(a0)), vld1q_s32(q.corr[2 * j + 1]),
                                        vaddlvq_s8(a1));
                }
                s = vaddq_f32(vmulq_f32(dw, vcvtq_f32_s32(isum)), vmulq_f32(dc, vcvtq_f32_s32(icorr)));
            }
            acc = vaddq_f32(acc, vmulq_n_f32(s, d));
        }
    }
    return acc;
}

template <class K>
void quad_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                 int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const bool conv = K::kPer32 && nt >= kConvMinTokens;
    std::vector<QuadBlock> quad((size_t)std::max<int64_t>(1, nb));
    auto fill = [&](const uint8_t* row, int i) {
        for (int64_t b = 0; b < nb; ++b) K::unpack(row + (size_t)b * K::kBytes, quad[(size_t)b], i, conv);
        if (i == 3)  // lanes 0..3 filled in order (quad_rows_drive)
            for (QuadBlock& q : quad) K::finish(q);
    };
    auto token = [&](const uint8_t* a) { return quad_token<K>(quad.data(), nb, a, conv); };
    quad_rows_drive(w, wrb, r0, r1, act, arb, nt, y, ys, fill, token);
}

// Q6_K rows re-encoded (q6k_convert) for the 4-tokens-per-register batch kernel.
struct Q6LaneRows4 : Q6ConvRows {
    struct Row {
        const Q6Conv* c;
        void values(int64_t ib, int8x16_t& lo, int8x16_t& hi) const {
            lo = vld1q_s8(c[ib / 8].q + 32 * (ib % 8));
            hi = vld1q_s8(c[ib / 8].q + 32 * (ib % 8) + 16);
        }
        float scale(int64_t ib) const { return c[ib / 8].d[ib % 8]; }
    };
    Row row(int64_t r) const { return {blocks(r)}; }
};

void q6k_matmul_neon(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                     int64_t nt, float* y, int64_t ys) {
    if (nt >= kQ6ConvMinTokens) {
        Q6LaneRows4 rows{{w, wrb, ne0 / 256, {}}};
        return lanes4_matmul(rows, ne0, r0, r1, act, arb, nt, y, ys);
    }
    quad_matmul<Q6N>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

}  // namespace

KernelTable kquant_kernels_neon() {
    static const MatmulKernel entries[] = {
        {KQ2K::id, Isa::neon, act_format_q8_k_kiqk(), q8k_quad_matmul<KQ2K>},
        {KQ3K::id, Isa::neon, act_format_q8_k_kiqk(), q8k_quad_matmul<KQ3K>},
        {quant::T_Q4_K, Isa::neon, neon_act_q8_2_x4(), quad_matmul<Q45N<false>>},
        {quant::T_Q5_K, Isa::neon, neon_act_q8_2_x4(), quad_matmul<Q45N<true>>},
        {quant::T_Q6_K, Isa::neon, neon_act_q8_2_x4(), q6k_matmul_neon, true},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable kquant_kernels_neon() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
