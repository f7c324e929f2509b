// NEON kernels of the trellis types IQ1_KT..IQ4_KT against Q8_2_X4 activations: the portable
// kernel's float operations per output (trellis_scalar.cpp), bit-identical to it. The generator
// runs four weights per register (lane j multiplies the seed by MULT^(j+1), as in the AVX2
// kernel), four rows share a register, and every 32-weight dot is exact (`sdot`).
#include "kernels/interleaved_common.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <cstring>
#include <vector>

#include "kernels/neon_common.h"
#include "kernels/trellis_kt.h"
#include "kernels/sym_lanes_neon.h"
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"

namespace ikllm::cpu {
namespace {

using namespace quant;

// Four rows' decoded blocks: values by row, sub-block scales by (sub-block, row).
struct alignas(16) KtQuad {
    int8_t v[4][256];
    float s[8][4];
};

// Values of lanes j = 0..3 from seed x0 (c + offset): bytesum((x0 * MULT^(j+1+4h)) & mask) - 126.
inline uint32x4_t kt_u4(uint32_t x0, uint32x4_t mpow) {
    const uint32x4_t x = vandq_u32(vmulq_u32(vdupq_n_u32(x0), mpow), vdupq_n_u32(kKtMask));
    return vshrq_n_u32(vmulq_u32(x, vdupq_n_u32(0x01010101u)), 24);
}
// Two groups of four lane values (0..252) -> 8 signed bytes v = u - 126.
inline int8x8_t kt_pack8(uint32x4_t a, uint32x4_t b) {
    const uint8x8_t u = vmovn_u16(vcombine_u16(vmovn_u32(a), vmovn_u32(b)));
    return vreinterpret_s8_u8(vsub_u8(u, vdup_n_u8((uint8_t)kKtBias)));
}
struct Mpow {
    uint32x4_t lo, hi;  // MULT^1..4, MULT^5..8
    Mpow() {
        const uint32_t p[8] = {kt_mult_pow(0), kt_mult_pow(1), kt_mult_pow(2), kt_mult_pow(3),
                               kt_mult_pow(4), kt_mult_pow(5), kt_mult_pow(6), kt_mult_pow(7)};
        lo = vld1q_u32(p);
        hi = vld1q_u32(p + 4);
    }
};
// kt_generate(c, offset, 8, v) for an 8-weight code.
inline void kt_gen8(uint32_t c, uint32_t offset, const Mpow& m, int8_t* v) {
    vst1_s8(v, kt_pack8(kt_u4(c + offset, m.lo), kt_u4(c + offset, m.hi)));
}

void decode_iq1_kt(const uint8_t* b, float d, KtQuad& o, int r, const Mpow& m) {
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib][r] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
        for (int g = 0; g < 4; ++g) {
            const uint32_t c = b[8 + 4 * ib + g] | nib(b[40 + 4 * (ib % 4) + g], ib / 4) << 8 | bit(b[ib], 4 + g) << 12;
            kt_gen8(c, kKtOffset, m, o.v[r] + 32 * ib + 8 * g);
        }
    }
}

void decode_iq2_kt(const uint8_t* b, float d, KtQuad& o, int r, const Mpow& m) {
    for (int ib = 0; ib < 8; ++ib) o.s[ib][r] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
    for (int i = 0; i < 32; ++i) kt_gen8(rd_u16(b + 4 + 2 * i), kKtOffset, m, o.v[r] + 8 * i);
}

void decode_iq3_kt(const uint8_t* b, float d, KtQuad& o, int r, const Mpow& m) {
    for (int ib = 0; ib < 8; ++ib) o.s[ib][r] = kt_scale<T_IQ3_KT>(d, nib(b[ib % 4], ib / 4));
    for (int i = 0; i < 32; ++i) kt_gen8(rd_u16(b + 4 + 2 * i), kKtOffset, m, o.v[r] + 8 * i);
    // bit ib of byte 68 + j: weight 32 ib + j is negative (the magnitude is |v|)
    const uint8x16_t qh[2] = {vld1q_u8(b + 68), vld1q_u8(b + 84)};
    for (int ib = 0; ib < 8; ++ib)
        for (int h = 0; h < 2; ++h) {
            int8_t* p = o.v[r] + 32 * ib + 16 * h;
            const int8x16_t a = vabsq_s8(vld1q_s8(p));
            const uint8x16_t neg = vtstq_u8(qh[h], vdupq_n_u8((uint8_t)(1u << ib)));
            vst1q_s8(p, vbslq_s8(neg, vnegq_s8(a), a));
        }
}

void decode_iq4_kt(const uint8_t* b, float d, KtQuad& o, int r, const Mpow& m) {
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t S = rd_u32(b + 4 * ib);
        o.s[ib][r] = kt_scale<T_IQ4_KT>(d, (int)((S & 255) >> 1) - 64);
        const uint32_t offset = (S & 1) ? kKtOffsetIq4Odd : kKtOffset;
        for (int g = 0; g < 8; g += 2) {  // two 4-weight codes per 8 bytes
            uint32_t c[2];
            for (int k = 0; k < 2; ++k) {
                const int jj = 8 * ib + g + k;
                c[k] = b[32 + jj] | nib(b[96 + jj % 32], jj / 32) << 8 | bits(S, 8 + 3 * (g + k), 3) << 12;
            }
            vst1_s8(o.v[r] + 32 * ib + 4 * g, kt_pack8(kt_u4(c[0] + offset, m.lo), kt_u4(c[1] + offset, m.lo)));
        }
    }
}

using KtDecode = void (*)(const uint8_t*, float, KtQuad&, int, const Mpow&);

// One token against four rows: y = sum over blocks of (sum over sub-blocks of (s * d_a) * dot),
// in the scalar kernel's order.
float32x4_t kt_quad_token(const KtQuad* quad, int64_t nb, const uint8_t* a_row) {
    float32x4_t y = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const KtQuad& q = quad[b];
        const uint8_t* a = a_row + 288 * (size_t)b;  // two 144-byte groups
        float32x4_t acc = vdupq_n_f32(0.0f);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* G = a + 144 * (ib / 4);
            const int8_t* qa = reinterpret_cast<const int8_t*>(G + 16 + 32 * (ib % 4));
            const int8x16_t a0 = vld1q_s8(qa), a1 = vld1q_s8(qa + 16);
            int32x4_t s[4];
            for (int r = 0; r < 4; ++r)
                s[r] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), vld1q_s8(q.v[r] + 32 * ib), a0), vld1q_s8(q.v[r] + 32 * ib + 16), a1);
            const int32x4_t dot = hsum4_lanes(s[0], s[1], s[2], s[3]);
            acc = vaddq_f32(acc, vmulq_f32(vmulq_n_f32(vld1q_f32(q.s[ib]), rd_bf16(G + 2 * (ib % 4))), vcvtq_f32_s32(dot)));
        }
        y = vaddq_f32(y, acc);
    }
    return y;
}

// Calls of kKtBatchMinTokens tokens or more: decoded rows (32 signed values and one scale per
// block, fp16 scales from kKtConvMinTokens as the reference's Q8_0_R8 repack) through the
// symmetric 32-weight types' lane batch kernel (sym_lanes_neon.h), in its order (SymBatchAccum,
// as the scalar kernel).
struct KtRowBlock {
    int8_t v[256];
    float s[8];
};
template <KtDecode Decode>
struct KtLaneRows {
    const uint8_t* w;
    size_t wrb, bb;
    int64_t nb;  // 256-weight blocks per row
    bool fp16;
    std::vector<KtRowBlock> blocks;  // the prepared rows' blocks
    int64_t first = 0;
    void prepare(int64_t ra, int64_t rb) {
        const Mpow m;
        KtQuad q;
        blocks.resize((size_t)((rb - ra) * nb));
        for (int64_t r = ra; r < rb; ++r) {
            const uint8_t* row = w + (size_t)r * wrb;
            for (int64_t b = 0; b < nb; ++b) {
                Decode(row + 4 + (size_t)b * bb, rd_f32(row), q, 0, m);
                KtRowBlock& o = blocks[(size_t)((r - ra) * nb + b)];
                std::memcpy(o.v, q.v[0], 256);
                for (int i = 0; i < 8; ++i) o.s[i] = fp16 ? gti_round_half(q.s[i][0]) : q.s[i][0];
            }
        }
        first = ra;
    }
    struct Row {
        const KtRowBlock* blk;
        void values(int64_t ib, int8x16_t& lo, int8x16_t& hi) const {
            const int8_t* p = blk[ib / 8].v + 32 * (ib % 8);
            lo = vld1q_s8(p);
            hi = vld1q_s8(p + 16);
        }
        float scale(int64_t ib) const { return blk[ib / 8].s[ib % 8]; }
    };
    Row row(int64_t r) const { return {blocks.data() + (r - first) * nb}; }
};

template <KtDecode Decode>
void run_kt(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
            int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const size_t bb = (wrb - 4) / (size_t)nb;  // block bytes after the row's float32 scale
    if (nt >= kKtBatchMinTokens) {
        KtLaneRows<Decode> rows{w, wrb, bb, nb, nt >= kKtConvMinTokens, {}, 0};
        return lanes4_matmul(rows, ne0, r0, r1, act, arb, nt, y, ys);
    }
    const Mpow m;
    std::vector<KtQuad> quad((size_t)nb);
    auto fill = [&](const uint8_t* row, int i) {
        const float d = rd_f32(row);
        for (int64_t b = 0; b < nb; ++b) {
            KtQuad& q = quad[(size_t)b];
            Decode(row + 4 + (size_t)b * bb, d, q, i, m);
        }
    };
    auto token = [&](const uint8_t* a) { return kt_quad_token(quad.data(), nb, a); };
    quad_rows_drive(w, wrb, r0, r1, act, arb, nt, y, ys, fill, token);
}

}  // namespace

KernelTable trellis_kernels_neon() {
    static const MatmulKernel kKernels[] = {
        {T_IQ1_KT, Isa::neon, act_format_q8_2_x4(), run_kt<decode_iq1_kt>},
        {T_IQ2_KT, Isa::neon, act_format_q8_2_x4(), run_kt<decode_iq2_kt>},
        {T_IQ3_KT, Isa::neon, act_format_q8_2_x4(), run_kt<decode_iq3_kt>},
        {T_IQ4_KT, Isa::neon, act_format_q8_2_x4(), run_kt<decode_iq4_kt>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable trellis_kernels_neon() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
