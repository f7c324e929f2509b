// AVX2 encoders of Q8_K and Q8_K32 activations (quant-formats.md §15), byte-identical to the
// reference encoders quant::encode_q8_k_row / encode_q8_k32_row (about 9x faster); included by
// the AVX2 and AVX-512 interleaved kernel files, which publish them as their activation formats
// (internal linkage per file: no cross-ISA symbol sharing).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/matmul.h"
#include "quant/act_q8_k.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
namespace {

// One 256-value block: d = amax / 127, codes RNE(x * (127 / amax)) saturated to int8
// (cvtps_epi32 rounds half to even under the default MXCSR mode; saturating packs), and the
// sums of each 16 codes.
inline float q8k_encode_block(const float* x, int8_t* q, int32_t sum16[16]) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 mx = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + 8 * i), absmask));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const __m256 vid = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int g = 0; g < 8; ++g) {
        const float* xg = x + 32 * g;
        const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg), vid));
        const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 8), vid));
        const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 16), vid));
        const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 24), vid));
        const __m256i b = _mm256_permutevar8x32_epi32(
            _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3)), perm);
        _mm256_storeu_si256((__m256i*)(q + 32 * g), b);
        const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), b), _mm256_set1_epi16(1));
        __m128i h = _mm_hadd_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));  // 8-code sums
        h = _mm_hadd_epi32(h, h);
        sum16[2 * g] = _mm_cvtsi128_si32(h);
        sum16[2 * g + 1] = _mm_extract_epi32(h, 1);
    }
    return amax / 127.0f;
}

// Q8_K: float d, float sum = d * (code sum), codes, int16 sums of each 16 codes.
inline void encode_q8_k_row_simd(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, x += 256, out += quant::kQ8KBlockBytes) {
        int32_t s16[16];
        const float d = q8k_encode_block(x, (int8_t*)(out + quant::kQ8KOffQs), s16);
        int16_t bsums[16];
        int total = 0;
        for (int s = 0; s < 16; ++s) {
            bsums[s] = (int16_t)s16[s];
            total += s16[s];
        }
        const float sum = d * (float)total;
        std::memcpy(out + quant::kQ8KOffD, &d, 4);
        std::memcpy(out + quant::kQ8KOffSum, &sum, 4);
        std::memcpy(out + quant::kQ8KOffBsums, bsums, 32);
    }
}

// Q8_K32: as Q8_K, but 8 floats d * (sum of each 32 codes) and sum = their float sum in order.
inline void encode_q8_k32_row_simd(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, x += 256, out += quant::kQ8KBlockBytes) {
        int32_t s16[16];
        const float d = q8k_encode_block(x, (int8_t*)(out + quant::kQ8KOffQs), s16);
        float bs[8], sum = 0.0f;
        for (int s = 0; s < 8; ++s) {
            bs[s] = d * (float)(s16[2 * s] + s16[2 * s + 1]);
            sum += bs[s];
        }
        std::memcpy(out + quant::kQ8KOffD, &d, 4);
        std::memcpy(out + quant::kQ8KOffSum, &sum, 4);
        std::memcpy(out + quant::kQ8KOffBsums, bs, 32);
    }
}

// This file's Q8_K / Q8_K32 activation format objects (same ids and bytes as the reference's).
inline const ActFormat* simd_act_q8_k_rows() {
    static constexpr ActFormat f{quant::T_Q8_K, quant::q8_k_row_bytes, encode_q8_k_row_simd};
    return &f;
}
inline const ActFormat* simd_act_q8_k32_rows() {
    static constexpr ActFormat f{quant::T_Q8_K32, quant::q8_k32_row_bytes, encode_q8_k32_row_simd};
    return &f;
}

}  // namespace
}  // namespace ikllm::cpu
