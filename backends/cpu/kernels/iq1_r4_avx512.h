// IQ1_S_R4 / IQ1_M_R4 on AVX-512 VNNI (iq1_r4_common.h): rows 0-1 and 2-3 of a 32-column block
// in the halves of two registers. Pass 1 leaves per block the products |c| m as unsigned bytes
// and the codes' sign masks, so a token's product is one vpdpbusd per two rows and 32 columns
// (the activations negated under the mask): the same integer lanes as maddubs + vpdpwssd by m
// (calls of fewer than 8 tokens, where forming the codes per tile is cheaper), so the same bits. (Before: codes, magnitudes and multipliers formed again for every token,
// then maddubs and vpdpwssd: 53-60 GFLOP/s at 16-64 tokens on one core.)
// Included by interleaved_avx512.cpp (anonymous namespace: its own ISA flags).
#pragma once
#include <immintrin.h>

#include "kernels/iq1_r4_common.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics seed results with _mm*_undefined_*(), which -Wmaybe-uninitialized
// reports at lane inserts and casts (a known false positive; kquant_simd.h does the same).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ikllm::cpu {
namespace {

inline uint64_t iq1r4_byte_mask(uint32_t b) {  // bit j of b (j < 8) -> byte j = 0xff
    const uint64_t x = ((uint64_t)(b & 255u) * 0x0101010101010101ull) & 0x8040201008040201ull;
    return (((x + 0x7F7F7F7F7F7F7F7Full) & 0x8080808080808080ull) >> 7) * 0xFF;
}

// Codes of rows 2p, 2p + 1 (32 bytes each) and the int16 multipliers of their column pairs.
inline __m512i iq1r4_codes(const Iq1R4Raw& o, int p) {
    const __m512i v = _mm512_load_si512(o.g + 8 * p);
    const __m512i g8 = _mm512_and_si512(_mm512_slli_epi16(v, 3), _mm512_set1_epi8((char)0xF8));
    const __mmask64 neg = (__mmask64)iq1r4_byte_mask(o.neg >> (8 * p));
    return _mm512_add_epi8(g8, _mm512_mask_blend_epi8(neg, _mm512_set1_epi8(1), _mm512_set1_epi8(-1)));
}
inline __m512i iq1r4_mults(const Iq1R4Raw& o, int p) {
    // int16 lane L: pair of columns 2 (L % 16) of row 2p + L / 16: multiplier 2 (L / 16) + (L % 16) / 8
    const __m512i idx = _mm512_set_epi64(0x0003000300030003ll, 0x0003000300030003ll, 0x0002000200020002ll, 0x0002000200020002ll,
                                         0x0001000100010001ll, 0x0001000100010001ll, 0x0000000000000000ll, 0x0000000000000000ll);
    return _mm512_permutexvar_epi16(idx, _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(o.m + 4 * p))));
}

inline float iq1r4_hsum8(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

// A 128-column block's integer lanes into the float lanes, token by token; the rows' results.
template <int T>
inline void iq1r4_accumulate(const uint8_t* act, size_t arb, size_t ab, const __m512i* i01, const __m512i* i23, __m512* f01, __m512* f23) {
    for (int t = 0; t < T; ++t) {
        float da;
        std::memcpy(&da, act + (size_t)t * arb + ab + quant::kQ8K128OffD, 4);
        f01[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i01[t]), _mm512_set1_ps(da), f01[t]);
        f23[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i23[t]), _mm512_set1_ps(da), f23[t]);
    }
}
template <int T>
inline void iq1r4_store(const __m512* f01, const __m512* f23, const float dk[4], float* y, int64_t ys) {
    for (int t = 0; t < T; ++t) {  // lanes 0-7 row 2p, 8-15 row 2p + 1
        y[t * ys] = dk[0] * iq1r4_hsum8(_mm512_castps512_ps256(f01[t]));
        y[t * ys + 1] = dk[1] * iq1r4_hsum8(_mm512_extractf32x8_ps(f01[t], 1));
        y[t * ys + 2] = dk[2] * iq1r4_hsum8(_mm512_castps512_ps256(f23[t]));
        y[t * ys + 3] = dk[3] * iq1r4_hsum8(_mm512_extractf32x8_ps(f23[t], 1));
    }
}

// A block after pass 1 for many tokens: per pair of rows the products |c| m as bytes (<= 9 x 15 =
// 135: unsigned 8-bit, so one vpdpbusd takes them against the activations signed by c, exactly)
// and the negative codes' mask.
struct Iq1R4Prep512 {
    __m512i mc[2];
    __mmask64 neg[2];
};

// kPrepared = false (few tokens): each block's codes, magnitudes, sign masks and multipliers
// formed from the raw block once for the tile's tokens, then per token |c| x (a signed by c) pair
// sums (maddubs) and vpdpwssd by m. kPrepared = true: the Iq1R4Prep512 bytes, one vpdpbusd.
template <bool kPrepared>
struct Iq1R4Tile512 {
    using Prep = std::conditional_t<kPrepared, Iq1R4Prep512, Iq1R4Raw>;
    static void prepare(const Iq1R4Raw* raw, int64_t nb, Prep* out) {
        if constexpr (kPrepared)
            for (int64_t b = 0; b < nb; ++b)
                for (int p = 0; p < 2; ++p) {
                    const __m512i c = iq1r4_codes(raw[b], p), m = iq1r4_mults(raw[b], p), u = _mm512_abs_epi8(c);
                    // |c| x m per byte: even bytes in the low halves of the int16 lanes, odd in the high
                    const __m512i lo = _mm512_mullo_epi16(_mm512_and_si512(u, _mm512_set1_epi16(0x00FF)), m);
                    const __m512i hi = _mm512_mullo_epi16(_mm512_srli_epi16(u, 8), m);
                    out[b].mc[p] = _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi16(0x00FF)), _mm512_slli_epi16(hi, 8));
                    out[b].neg[p] = _mm512_movepi8_mask(c);
                }
    }
    template <int T>
    static void run(const Prep* raw, int64_t nb, const uint8_t* act, size_t arb, const float dk[4], float* y, int64_t ys) {
        __m512 f01[T], f23[T];
        for (int t = 0; t < T; ++t) f01[t] = f23[t] = _mm512_setzero_ps();
        for (int64_t c = 0; c < nb / 4; ++c) {  // 128-column activation blocks
            const size_t ab = (size_t)quant::kQ8K128BlockBytes * c;
            __m512i i01[T], i23[T];
            for (int t = 0; t < T; ++t) i01[t] = i23[t] = _mm512_setzero_si512();
            for (int s = 0; s < 4; ++s) {
                const Prep& o = raw[4 * c + s];
                __m512i u01, u23, m01, m23;
                __mmask64 n01, n23;
                if constexpr (kPrepared) {
                    u01 = _mm512_load_si512(&o.mc[0]);
                    u23 = _mm512_load_si512(&o.mc[1]);
                    n01 = o.neg[0];
                    n23 = o.neg[1];
                    m01 = m23 = _mm512_setzero_si512();
                } else {
                    const __m512i c01 = iq1r4_codes(o, 0), c23 = iq1r4_codes(o, 1);
                    n01 = _mm512_movepi8_mask(c01);
                    n23 = _mm512_movepi8_mask(c23);
                    u01 = _mm512_abs_epi8(c01);
                    u23 = _mm512_abs_epi8(c23);
                    m01 = iq1r4_mults(o, 0);
                    m23 = iq1r4_mults(o, 1);
                }
                for (int t = 0; t < T; ++t) {
                    const __m512i a = _mm512_broadcast_i64x4(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act + (size_t)t * arb + ab + quant::kQ8K128OffQs + 32 * s)));
                    // a negated where c < 0 (c is never 0)
                    const __m512i s01 = _mm512_mask_sub_epi8(a, n01, _mm512_setzero_si512(), a);
                    const __m512i s23 = _mm512_mask_sub_epi8(a, n23, _mm512_setzero_si512(), a);
                    if constexpr (kPrepared) {  // |c| m x (a with c's sign)
                        i01[t] = _mm512_dpbusd_epi32(i01[t], u01, s01);
                        i23[t] = _mm512_dpbusd_epi32(i23[t], u23, s23);
                    } else {  // (|c| x (a with c's sign), pairwise) x m
                        i01[t] = _mm512_dpwssd_epi32(i01[t], _mm512_maddubs_epi16(u01, s01), m01);
                        i23[t] = _mm512_dpwssd_epi32(i23[t], _mm512_maddubs_epi16(u23, s23), m23);
                    }
                }
            }
            iq1r4_accumulate<T>(act, arb, ab, i01, i23, f01, f23);
        }
        iq1r4_store<T>(f01, f23, dk, y, ys);
    }
};

// The prepared blocks pay from 8 tokens (one core, 2048 x 2048: 4 tokens 58 GFLOP/s with the codes
// formed per tile, 54 prepared; 16 tokens 91 and 114).
constexpr int64_t kIq1R4PrepMinTokens = 8;
template <uint32_t Type>
void iq1r4_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    if (nt >= kIq1R4PrepMinTokens) iq1r4_run<Type, Iq1R4Tile512<true>>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    else iq1r4_run<Type, Iq1R4Tile512<false>>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

}  // namespace
}  // namespace ikllm::cpu
