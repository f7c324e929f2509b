// AVX2 encoder of Q8_2_X4 activations (quant-formats.md §15), byte-identical to the reference
// encoder quant::act_q8_2_x4_encode_row; included by the AVX2 and AVX-512 kernel files, which
// publish it as their activation format (internal linkage per file: no cross-ISA symbol sharing).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
namespace {

// ---- Q8_2_X4 activation encoder (quant-formats.md §15), byte-identical to
// quant::act_q8_2_x4_encode_row: d = bf16(amax / 127) (RNE), id = 1 / d, codes RNE(x * id)
// saturated to int8 (cvtps_epi32 + saturating packs, as the reference), int16 code sums.
inline uint16_t q82_bf16_rne(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline void q82_encode_block(const float* x, uint8_t* dptr, uint8_t* sptr, int8_t* q) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8), x2 = _mm256_loadu_ps(x + 16),
                 x3 = _mm256_loadu_ps(x + 24);
    __m256 mx = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(x0, absmask), _mm256_and_ps(x1, absmask)),
                              _mm256_max_ps(_mm256_and_ps(x2, absmask), _mm256_and_ps(x3, absmask)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const uint16_t dbits = q82_bf16_rne(_mm_cvtss_f32(m4) / 127.0f);
    const uint32_t dw = (uint32_t)dbits << 16;
    float d;
    std::memcpy(&d, &dw, 4);
    const __m256 vid = _mm256_set1_ps(d > 0.0f ? 1.0f / d : 0.0f);
    const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(x0, vid)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(x1, vid));
    const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(x2, vid)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(x3, vid));
    const __m256i b = _mm256_permutevar8x32_epi32(
        _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3)), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i*)q, b);
    const __m256i s32 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), b), _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    const int16_t sum = (int16_t)_mm_cvtsi128_si32(s);
    std::memcpy(dptr, &dbits, 2);
    std::memcpy(sptr, &sum, 2);
}

inline void encode_q8_2_x4_simd(const float* x, uint8_t* out, int64_t ne0) {
    quant::act_q8_2_x4_for_blocks(x, out, ne0, [](const float* xb, uint8_t* d, uint8_t* sum, int8_t* q) {
        q82_encode_block(xb, d, sum, q);
    });
}

// This file's Q8_2_X4 activation format object (same id and bytes as act_format_q8_2_x4()).
inline const ActFormat* simd_act_q8_2_x4() {
    static const ActFormat f{quant::T_Q8_2_X4, act_format_q8_2_x4()->row_bytes, encode_q8_2_x4_simd};
    return &f;
}

}  // namespace
}  // namespace ikllm::cpu
