// IQ1_S_R4 and IQ1_M_R4 (quant-formats.md §12.8: the reference's own 4-row formats, no plain
// base to convert to) against Q8_K128 activations on AVX-512. The generic dequantize-and-dot
// kernel ran at ~4 GFLOP/s; here every weight is the integer code c = 8 g +- 1 (g the signed grid
// byte, the delta +-1/8 scaled by 8) times an integer multiplier m per 16 columns (IQ1_S_R4: 2s + 1
// per 32, IQ1_M_R4: the 4-bit scale per 16) times d_k / 8 per row, so a row's product is exact
// integers per 128-column activation block, one float multiply-add per block and token:
//   y_k = d_k / 8 * sum_blocks d_a * sum_16 m * sum (c . a).
// Two passes per 4-row group as in grid_int.h: the grid entries by scalar table loads (and the
// delta signs, multipliers) for the whole row length, then per token the codes in vectors (rows
// 0-1 and 2-3 in the halves of two registers), |c| x (a signed by c) pair sums, vpdpwssd by m.
// Included by interleaved_avx512.cpp (anonymous namespace: its own ISA flags).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/act_q8_k.h"
#include "quant/grid_tables.h"
#include "quant/type_traits.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics seed results with _mm*_undefined_*(), which -Wmaybe-uninitialized
// reports at lane inserts and casts (a known false positive; kquant_simd.h does the same).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ikllm::cpu {
namespace {

// One 32-column block of the 4 rows after pass 1.
struct Iq1R4Raw {
    alignas(64) uint64_t g[16];  // row k's 4 grid entries (columns 8i .. 8i + 7) at 4k + i
    int16_t m[8];                // multiplier of columns 16h .. 16h + 15 of row k at 2k + h
    uint16_t neg;                // bit 4k + i: the delta of row k's columns 8i .. is -1
};

template <uint32_t Type>
inline void iq1r4_raw(const uint8_t* b, Iq1R4Raw& o) {
    using quant::kIq1sGrid;
    o.neg = 0;
    if constexpr (Type == quant::T_IQ1_S_R4) {  // qs[16], h_k at 16 + 2k
        for (int k = 0; k < 4; ++k) {
            uint16_t h;
            std::memcpy(&h, b + 16 + 2 * k, 2);
            o.m[2 * k] = o.m[2 * k + 1] = (int16_t)(2 * ((h >> 12) & 7) + 1);
            if (h >> 15) o.neg |= (uint16_t)(15u << (4 * k));
            for (int i = 0; i < 4; ++i) o.g[4 * k + i] = kIq1sGrid[b[4 * i + k] | ((h >> (3 * i)) & 7) << 8];
        }
    } else {  // IQ1_M_R4: qs[16], qh[8] at 16, scales[4] at 24
        for (int k = 0; k < 4; ++k) {
            const uint8_t sc = b[24 + k];
            o.m[2 * k] = (int16_t)(sc & 15);
            o.m[2 * k + 1] = (int16_t)(sc >> 4);
            for (int i = 0; i < 2; ++i) {
                const uint8_t hq = b[16 + 4 * i + k];
                o.g[4 * k + 2 * i] = kIq1sGrid[b[8 * i + k] | (hq & 7) << 8];
                o.g[4 * k + 2 * i + 1] = kIq1sGrid[b[8 * i + 4 + k] | ((hq >> 4) & 7) << 8];
                o.neg |= (uint16_t)((((hq >> 3) & 1) | ((hq >> 7) & 1) << 1) << (4 * k + 2 * i));
            }
        }
    }
}

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

template <uint32_t Type>
void iq1r4_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    constexpr int kBlockBytes = Type == quant::T_IQ1_S_R4 ? 24 : 28;
    const int64_t nb = ne0 / 32;
    std::vector<Iq1R4Raw> raw((size_t)nb);
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* grp = w + (size_t)r * wrb;  // 4 fp16 d_k, then the 32-column blocks
        for (int64_t b = 0; b < nb; ++b) iq1r4_raw<Type>(grp + 8 + (size_t)kBlockBytes * b, raw[(size_t)b]);
        float dk[4];
        for (int k = 0; k < 4; ++k) {
            uint16_t h;
            std::memcpy(&h, grp + 2 * k, 2);
            dk[k] = _cvtsh_ss(h) * 0.125f;
        }
        for (int64_t t = 0; t < nt; ++t) {
            const uint8_t* at = act + (size_t)t * arb;
            __m512 f01 = _mm512_setzero_ps(), f23 = _mm512_setzero_ps();
            for (int64_t c = 0; c < nb / 4; ++c) {  // 128-column activation blocks
                const uint8_t* ab = at + (size_t)quant::kQ8K128BlockBytes * c;
                __m512i i01 = _mm512_setzero_si512(), i23 = _mm512_setzero_si512();
                for (int s = 0; s < 4; ++s) {
                    const Iq1R4Raw& o = raw[(size_t)(4 * c + s)];
                    const __m512i a = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab + quant::kQ8K128OffQs + 32 * s)));
                    const __m512i c01 = iq1r4_codes(o, 0), c23 = iq1r4_codes(o, 1);
                    // |c| x (a with c's sign): a negated where c < 0 (c == 0 gives 0 anyway)
                    const __m512i s01 = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(c01), _mm512_setzero_si512(), a);
                    const __m512i s23 = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(c23), _mm512_setzero_si512(), a);
                    i01 = _mm512_dpwssd_epi32(i01, _mm512_maddubs_epi16(_mm512_abs_epi8(c01), s01), iq1r4_mults(o, 0));
                    i23 = _mm512_dpwssd_epi32(i23, _mm512_maddubs_epi16(_mm512_abs_epi8(c23), s23), iq1r4_mults(o, 1));
                }
                float da;
                std::memcpy(&da, ab + quant::kQ8K128OffD, 4);
                f01 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i01), _mm512_set1_ps(da), f01);
                f23 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i23), _mm512_set1_ps(da), f23);
            }
            // lanes 0-7 row 2p, 8-15 row 2p + 1
            y[t * ys + r] = dk[0] * iq1r4_hsum8(_mm512_castps512_ps256(f01));
            y[t * ys + r + 1] = dk[1] * iq1r4_hsum8(_mm512_extractf32x8_ps(f01, 1));
            y[t * ys + r + 2] = dk[2] * iq1r4_hsum8(_mm512_castps512_ps256(f23));
            y[t * ys + r + 3] = dk[3] * iq1r4_hsum8(_mm512_extractf32x8_ps(f23, 1));
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
