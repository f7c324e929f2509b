// AVX2 kernels of the trellis types (quant-formats.md §10) against Q8_2_X4 activations (§15).
// Each 256-weight block of a row is generated into 256 signed bytes (the generator vectorises
// over the 8 (or 4) weights of a code: lane j multiplies the seed by MULT^(j+1)), then dotted
// with every token of the tile via maddubs on |v| and sign-adjusted codes. Sub-block scales
// follow trellis_kt.h (the reference's matmul factors, fp16 rounding for large batches).
#include "kernels/interleaved_common.h"

#if defined(__AVX2__)
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"
#include "kernels/trellis_kt.h"

namespace ikllm::cpu {
namespace {

using namespace quant;

// u_j = bytesum((x0 * mpow_j) & 0x3f3f3f3f) in each 32-bit lane (0..252).
inline __m256i kt_lanes(__m256i x0, __m256i mpow) {
    const __m256i x = _mm256_and_si256(_mm256_mullo_epi32(x0, mpow), _mm256_set1_epi32((int)kKtMask));
    return _mm256_srli_epi32(_mm256_mullo_epi32(x, _mm256_set1_epi32(0x01010101)), 24);
}

// Four vectors of 8 lane values (in order a, b, c, d) -> 32 signed bytes v = u - 126.
inline __m256i kt_pack(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packus_epi32(a, b), cd = _mm256_packus_epi32(c, d);
    const __m256i abcd = _mm256_packus_epi16(ab, cd);  // dwords: a0-3 b0-3 c0-3 d0-3 a4-7 b4-7 c4-7 d4-7
    const __m256i v = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    return _mm256_sub_epi8(v, _mm256_set1_epi8((char)kKtBias));
}

inline __m256i mpow8() {
    return _mm256_setr_epi32((int)kt_mult_pow(0), (int)kt_mult_pow(1), (int)kt_mult_pow(2), (int)kt_mult_pow(3),
                             (int)kt_mult_pow(4), (int)kt_mult_pow(5), (int)kt_mult_pow(6), (int)kt_mult_pow(7));
}
inline __m256i mpow4x2() {
    return _mm256_setr_epi32((int)kt_mult_pow(0), (int)kt_mult_pow(1), (int)kt_mult_pow(2), (int)kt_mult_pow(3),
                             (int)kt_mult_pow(0), (int)kt_mult_pow(1), (int)kt_mult_pow(2), (int)kt_mult_pow(3));
}

// 32 values of four 8-weight codes c[0..3] (IQ2_KT / IQ3_KT sub-block).
inline __m256i kt_gen32(const uint8_t* codes, __m256i mp) {
    const __m256i off = _mm256_set1_epi32((int)kKtOffset);
    return kt_pack(kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes)), off), mp),
                   kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes + 2)), off), mp),
                   kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes + 4)), off), mp),
                   kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes + 6)), off), mp));
}

// A decoded block: v[256] signed weights (|v| <= 126), s[8] float scales per 32 weights.
struct Block {
    alignas(32) int8_t v[256];
    alignas(32) int8_t absv[256];
    float s[8];
};

void decode_iq1_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow8();
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
        alignas(8) uint16_t c[4];
        for (int g = 0; g < 4; ++g)
            c[g] = (uint16_t)(b[8 + 4 * ib + g] | nib(b[40 + 4 * (ib % 4) + g], ib / 4) << 8 | bit(b[ib], 4 + g) << 12);
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), kt_gen32((const uint8_t*)c, mp));
    }
}

void decode_iq2_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow8();
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), kt_gen32(b + 4 + 8 * ib, mp));
    }
}

void decode_iq3_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow8();
    const __m256i qh = _mm256_loadu_si256((const __m256i*)(b + 68));
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ3_KT>(d, nib(b[ib % 4], ib / 4));
        const __m256i a = _mm256_abs_epi8(kt_gen32(b + 4 + 8 * ib, mp));
        // bit ib of qh[j] is the sign of weight 32ib + j: move it to bit 7, make the byte nonzero
        const __m256i sh = _mm256_sll_epi16(qh, _mm_cvtsi32_si128(7 - ib));
        const __m256i sg = _mm256_or_si256(_mm256_and_si256(sh, _mm256_set1_epi8((char)0x80)), _mm256_set1_epi8(1));
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), _mm256_sign_epi8(a, sg));
    }
}

// The 8 IQ4_KT codes of sub-block ib (§10.5), offset included, one per lane.
inline __m256i kt4_codes(const uint8_t* b, int ib, uint32_t S, uint32_t offset) {
    const __m256i ql = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 32 + 8 * ib)));
    const __m256i qh = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 96 + 8 * (ib % 4))));
    const __m256i hi4 = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * (ib / 4)), _mm256_set1_epi32(15));
    const __m256i top = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)S), _mm256_setr_epi32(8, 11, 14, 17, 20, 23, 26, 29)),
                                         _mm256_set1_epi32(7));
    const __m256i c = _mm256_or_si256(ql, _mm256_or_si256(_mm256_slli_epi32(hi4, 8), _mm256_slli_epi32(top, 12)));
    return _mm256_add_epi32(c, _mm256_set1_epi32((int)offset));
}

void decode_iq4_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow4x2();
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t S = rd_u32(b + 4 * ib);
        o.s[ib] = kt_scale<T_IQ4_KT>(d, (int)((S & 255) >> 1) - 64);
        const uint32_t offset = (S & 1) ? kKtOffsetIq4Odd : kKtOffset;
        const __m256i cv = kt4_codes(b, ib, S, offset);
        __m256i q[4];
        for (int p = 0; p < 4; ++p)
            q[p] = kt_lanes(_mm256_permutevar8x32_epi32(cv, _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1,
                                                                               2 * p + 1, 2 * p + 1, 2 * p + 1)),
                            mp);
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), kt_pack(q[0], q[1], q[2], q[3]));
    }
}

inline float hsum8(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

// acc += sum over the block's 8 sub-blocks of (s_ib * d_act) * dot(v_ib, a_ib); `a` = the token's
// Q8_2_X4 data of this block (two 144-byte groups).
inline __m256 dot_block(const Block& o, const uint8_t* a, __m256 acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int grp = 0; grp < 2; ++grp) {
        const uint8_t* G = a + 144 * grp;
        for (int k = 0; k < 4; ++k) {
            const int ib = 4 * grp + k;
            const __m256i q = _mm256_loadu_si256((const __m256i*)(G + 16 + 32 * k));
            const __m256i v = _mm256_load_si256((const __m256i*)(o.v + 32 * ib));
            const __m256i av = _mm256_load_si256((const __m256i*)(o.absv + 32 * ib));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(q, v)), ones);
            const float da = rd_bf16(G + 2 * k);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(o.s[ib] * da), acc);
        }
    }
    return acc;
}

template <void (*Decode)(const uint8_t*, float, Block&)>
void run_kt(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
            int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const size_t bb = (wrb - 4) / (size_t)nb;  // block bytes after the row's float32 scale
    const bool conv = nt >= kKtConvMinTokens;
    const int64_t tile = std::clamp<int64_t>((int64_t)(196608 / std::max<size_t>(arb, 1)), 1, 64);
    Block blk;
    __m256 acc[64];
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t tn = std::min(tile, nt - t0);
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * wrb;
            const float d = rd_f32(row);
            for (int64_t t = 0; t < tn; ++t) acc[t] = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; ++b) {
                Decode(row + 4 + (size_t)b * bb, d, blk);
                if (conv)
                    for (int i = 0; i < 8; ++i) blk.s[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(blk.s[i]), 0)));
                for (int i = 0; i < 8; ++i) {
                    const __m256i v = _mm256_load_si256((const __m256i*)(blk.v + 32 * i));
                    _mm256_store_si256((__m256i*)(blk.absv + 32 * i), _mm256_abs_epi8(v));
                }
                for (int64_t t = 0; t < tn; ++t) acc[t] = dot_block(blk, act + (size_t)(t0 + t) * arb + 288 * b, acc[t]);
            }
            for (int64_t t = 0; t < tn; ++t) y[(t0 + t) * ys + r] = hsum8(acc[t]);
        }
    }
}

}  // namespace

KernelTable trellis_kernels_avx2() {
    static const MatmulKernel kKernels[] = {
        {T_IQ1_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq1_kt>},
        {T_IQ2_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq2_kt>},
        {T_IQ3_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq3_kt>},
        {T_IQ4_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq4_kt>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable trellis_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
