// Interleaving 8-bit weight codes into the 16-row panels of the AVX-512 VNNI prompt-batch GEMMs
// (legacy_panel_avx512.h, the conv panels of kquant_simd.h): per 256 columns, 64 vectors of
// 16 rows x 4 consecutive columns, stored contiguously (vector i holds columns 4i..4i+3).
// Four 16 x 16 dword transposes instead of 64 scattered 4-byte stores per row.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/transpose_avx512.h"

namespace ikllm::cpu::simd512 {

// Codes of 16 rows x 256 columns (row k at src + k * stride) into the first nvec (<= 64)
// panel vectors at dst.
inline void panel_put_codes(const uint8_t* src, size_t stride, uint8_t* dst, int nvec) {
    __m512i r[16];
    for (int m = 0; 16 * m < nvec; ++m) {
        for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_si512((const void*)(src + stride * k + 64 * m));
        transpose16(r);
        for (int p = 0; p < 16 && 16 * m + p < nvec; ++p) _mm512_storeu_si512((void*)(dst + 64 * (16 * m + p)), r[p]);
    }
}

}  // namespace ikllm::cpu::simd512
