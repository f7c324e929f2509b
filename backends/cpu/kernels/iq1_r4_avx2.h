// IQ1_S_R4 / IQ1_M_R4 on AVX2 (iq1_r4_common.h): one row of a 32-column block per register, a
// row at a time over the group's decoded blocks (16 registers: the tile's int and float
// accumulators stay in them); per block and row the codes, their magnitudes and multipliers once
// for the tile's tokens, then per token |c| x (a signed by c) pair sums (maddubs) and vpmaddwd by
// m -- the AVX-512 kernel's integer lanes and float operations, so the same bits. (Before: the
// generic dequantize-and-dot kernel, 0.3 GB/s per core.)
// Included by interleaved_avx2.cpp (anonymous namespace: its own ISA flags).
#pragma once
#include <immintrin.h>

#include "kernels/iq1_r4_common.h"

namespace ikllm::cpu {
namespace {

struct Iq1R4Tile256 {
    using Prep = Iq1R4Raw;
    template <int T>
    static void run(const Iq1R4Raw* raw, int64_t nb, const uint8_t* act, size_t arb, const float dk[4], float* y, int64_t ys) {
        // byte b of a row's 32 codes: bit b / 8 of its 4 delta-sign bits
        const __m256i spread = _mm256_setr_epi8(1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8);
        for (int k = 0; k < 4; ++k) {
            __m256 f[T];
            for (int t = 0; t < T; ++t) f[t] = _mm256_setzero_ps();
            for (int64_t c = 0; c < nb / 4; ++c) {  // 128-column activation blocks
                const size_t ab = (size_t)quant::kQ8K128BlockBytes * c;
                __m256i acc[T];
                for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
                for (int s = 0; s < 4; ++s) {
                    const Iq1R4Raw& o = raw[4 * c + s];
                    const __m256i g = _mm256_load_si256(reinterpret_cast<const __m256i*>(o.g + 4 * k));
                    const __m256i g8 = _mm256_and_si256(_mm256_slli_epi16(g, 3), _mm256_set1_epi8((char)0xF8));
                    const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_set1_epi8((char)((o.neg >> (4 * k)) & 15)), spread), spread);
                    const __m256i code = _mm256_add_epi8(g8, _mm256_or_si256(neg, _mm256_set1_epi8(1)));  // 8g + 1, or 8g - 1
                    const __m256i u = _mm256_abs_epi8(code);
                    const __m256i m = _mm256_setr_m128i(_mm_set1_epi16(o.m[2 * k]), _mm_set1_epi16(o.m[2 * k + 1]));
                    for (int t = 0; t < T; ++t) {
                        const __m256i a = _mm256_loadu_si256(
                            reinterpret_cast<const __m256i*>(act + (size_t)t * arb + ab + quant::kQ8K128OffQs + 32 * s));
                        const __m256i sa = _mm256_sign_epi8(a, code);  // c is never 0
                        acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(u, sa), m));
                    }
                }
                for (int t = 0; t < T; ++t) {
                    float da;
                    std::memcpy(&da, act + (size_t)t * arb + ab + quant::kQ8K128OffD, 4);
                    f[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(da), f[t]);
                }
            }
            for (int t = 0; t < T; ++t) {
                __m128 x = _mm_add_ps(_mm256_castps256_ps128(f[t]), _mm256_extractf128_ps(f[t], 1));
                x = _mm_add_ps(x, _mm_movehl_ps(x, x));
                y[t * ys + k] = dk[k] * _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
            }
        }
    }
};

template <uint32_t Type>
void iq1r4_matmul_avx2(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                       int64_t nt, float* y, int64_t ys) {
    iq1r4_run<Type, Iq1R4Tile256>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

}  // namespace
}  // namespace ikllm::cpu
