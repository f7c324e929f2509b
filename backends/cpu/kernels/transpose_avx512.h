// In-register 16 x 16 transpose of 32-bit elements (AVX-512), shared by the AMX GEMM (packing
// activations, storing results) and the attention score tiles.
#pragma once
#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 seeds AVX-512 intrinsic results with _mm512_undefined_*(), which -Wuninitialized reports
// (a known false positive; same in kquant_simd.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ikllm::cpu::simd512 {

// r[i] holds row i on entry, column i on return.
inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    // Now r[4q + j], 128-bit lane L, holds column 4L + j of rows 4q..4q+3: column 4L + j is lane L
    // of r[j], r[4 + j], r[8 + j], r[12 + j].
    for (int j = 0; j < 4; ++j) {
        const __m512i a = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x88);  // lanes 0, 2 of both
        const __m512i b = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xDD);  // lanes 1, 3
        const __m512i c = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x88);
        const __m512i d = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xDD);
        t[j] = _mm512_shuffle_i32x4(a, c, 0x88);       // lane 0 of every quad
        t[4 + j] = _mm512_shuffle_i32x4(b, d, 0x88);   // lane 1
        t[8 + j] = _mm512_shuffle_i32x4(a, c, 0xDD);   // lane 2
        t[12 + j] = _mm512_shuffle_i32x4(b, d, 0xDD);  // lane 3
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}

}  // namespace ikllm::cpu::simd512
