// fp32 -> bf16, bit-identical to the reference conversion (act_format_bf16): round to nearest
// even, NaN kept quiet. (The vector cvtne2ps instruction would flush denormals.) Shared by the
// AMX GEMM's activation encoder and the tile-unit attention.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ikllm::cpu::simd512 {

inline __m256i bf16_rne(__m512 x) {
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff), quiet = _mm512_set1_epi32(0x40);
    const __m512i b = _mm512_castps_si512(x);
    const __m512i rne = _mm512_add_epi32(b, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(b, 16), one)));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, absm), inf);
    const __m512i r = _mm512_mask_or_epi32(_mm512_srli_epi32(rne, 16), nan, _mm512_srli_epi32(b, 16), quiet);
    return _mm512_cvtepi32_epi16(r);
}

inline void bf16_encode_row(const float* x, uint16_t* o, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), bf16_rne(_mm512_loadu_ps(x + i)));
    for (; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, x + i, 4);
        o[i] = (b & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((b >> 16) | 0x40u) : (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
    }
}

}  // namespace ikllm::cpu::simd512
