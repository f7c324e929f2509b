// Prompt-batch GEMM for Q4_K / Q5_K on AVX-512 VNNI (included by kquant_avx512.cpp): for batches
// of kP32MinTokens tokens or more, rows are unpacked once per call into the 16-row panels of
// legacy_panel_avx512.h, each 32-weight chunk as unsigned codes with its conv-mode factors
// D_j = fp16(d * sc_j) and M_j = fp16(-dmin * m_j) (kquant_q82.h), then multiplied by the
// affine panel tile: per chunk d_a * D_j * sum q a + d_a * M_j * s_a.
#pragma once
#include "kernels/kquant_q6k_conv.h"
#include "kernels/kquant_q82.h"
#include "kernels/legacy_panel_avx512.h"

namespace ikllm::cpu {
namespace {

template <bool Five>
void fill_q45k_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, LegacyPanel& pn) {
    constexpr int bytes = Five ? 176 : 144;
    alignas(32) float D[8], M[8];
    alignas(32) uint8_t codes[256];
    for (int k = 0; k < kP32Rows; ++k) {
        const uint8_t* row = w + (size_t)(r0 + k) * wrb;
        for (int64_t b = 0; b < nb256; ++b) {
            if (k < rows) {
                const uint8_t* x = row + (size_t)b * bytes;
                __m256 vd, vm;
                q45k_scales(x, true, &vd, &vm);
                _mm256_store_ps(D, vd);
                _mm256_store_ps(M, vm);
                for (int g = 0; g < 4; ++g) {
                    __m256i c[2];
                    q45k_codes<Five>(x, g, c);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 64 * g), c[0]);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 64 * g + 32), c[1]);
                }
            } else {
                std::memset(codes, 0, sizeof(codes));
                for (int j = 0; j < 8; ++j) D[j] = M[j] = 0.0f;
            }
            for (int j = 0; j < 8; ++j) {
                const int64_t blk = 8 * b + j;
                uint8_t* dst = pn.q.data() + (size_t)blk * 32 * kP32Rows + 4 * k;
                for (int c = 0; c < 8; ++c) std::memcpy(dst + 64 * c, codes + 32 * j + 4 * c, 4);
                pn.d[(size_t)blk * kP32Rows + k] = D[j];
                pn.m[(size_t)blk * kP32Rows + k] = M[j];
            }
        }
    }
}

template <bool Five>
void q45k_panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt < kP32MinTokens) return q82_matmul<Q45KAvx512<Five>, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    const int64_t nb = ne0 / 32;
    const ActBlockOffsets ao(ne0);
    LegacyPanel pn(nb);
    for (int64_t r = r0; r < r1; r += kP32Rows) {
        const int rows = (int)std::min<int64_t>(kP32Rows, r1 - r);
        fill_q45k_panel<Five>(w, wrb, r, rows, ne0 / 256, pn);
        int64_t t = 0;
        for (; t + 8 <= nt; t += 8) panel_tile<true, 8>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
        for (; t + 4 <= nt; t += 4) panel_tile<true, 4>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
        for (; t < nt; ++t) panel_tile<true, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
    }
}

// Q6_K batches: every 256-weight block re-encoded (kquant_q6k_conv.h) into the symmetric panel
// form of legacy_panel_avx512.h (codes + 128, one scale per 32), multiplied in SymBatchAccum order.
inline void fill_q6k_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, LegacyPanel& pn) {
    Q6Conv c;
    for (int k = 0; k < kP32Rows; ++k) {
        const uint8_t* row = w + (size_t)(r0 + k) * wrb;
        for (int64_t b = 0; b < nb256; ++b) {
            if (k < rows) q6k_convert(row + (size_t)b * 210, c);
            for (int j = 0; j < 8; ++j) {
                const int64_t blk = 8 * b + j;
                uint8_t* dst = pn.q.data() + (size_t)blk * 32 * kP32Rows + 4 * k;
                alignas(32) uint8_t tmp[32];
                if (k < rows) {
                    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.q + 32 * j));
                    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)));
                } else {
                    std::memset(tmp, 0x80, 32);
                }
                for (int q = 0; q < 8; ++q) std::memcpy(dst + 64 * q, tmp + 4 * q, 4);
                pn.d[(size_t)blk * kP32Rows + k] = k < rows ? c.d[j] : 0.0f;
            }
        }
    }
}

inline void q6k_panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                             size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt < kQ6ConvMinTokens) return q82_matmul<Q6KAvx512, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    const int64_t nb = ne0 / 32;
    const ActBlockOffsets ao(ne0);
    LegacyPanel pn(nb);
    for (int64_t r = r0; r < r1; r += kP32Rows) {
        const int rows = (int)std::min<int64_t>(kP32Rows, r1 - r);
        fill_q6k_panel(w, wrb, r, rows, ne0 / 256, pn);
        int64_t t = 0;
        for (; t + 8 <= nt; t += 8) panel_tile<false, 8>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
        for (; t + 4 <= nt; t += 4) panel_tile<false, 4>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
        for (; t < nt; ++t) panel_tile<false, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
    }
}

}  // namespace
}  // namespace ikllm::cpu
