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
    alignas(64) uint8_t tmp[kP32Rows * 256];
    for (int64_t b = 0; b < nb256; ++b) {
        for (int k = 0; k < kP32Rows; ++k) {
            uint8_t* codes = tmp + 256 * k;
            if (k < rows) {
                const uint8_t* x = w + (size_t)(r0 + k) * wrb + (size_t)b * bytes;
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
                std::memset(codes, 0, 256);
                for (int j = 0; j < 8; ++j) D[j] = M[j] = 0.0f;
            }
            for (int j = 0; j < 8; ++j) {
                pn.d[(size_t)(8 * b + j) * kP32Rows + k] = D[j];
                pn.m[(size_t)(8 * b + j) * kP32Rows + k] = M[j];
            }
        }
        simd512::panel_put_codes(tmp, 256, pn.q.data() + (size_t)(8 * b) * 32 * kP32Rows, 64);
    }
}

template <bool Five>
void q45k_panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt < kP32MinTokens) return q82_matmul<Q45KAvx512<Five>, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    const int64_t nb = ne0 / 32;
    panel_gemm<true>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q45k_panel<Five>(w, wrb, r, rows, ne0 / 256, pn); }, nb,
                     act, arb, nt, r0, r1, y, ys);
}

// q6k_convert (kquant_q6k_conv.h) in vectors, same bits: per 32-weight chunk the exact products
// P = sc * (q - 32) as 32 int16 lanes, m = max |P| (unsigned min-position of the complement), then
// either the codes P or RNE(float(P) * (127 / m)) with the scalar's float32 operations.
inline void q6k_convert_avx512(const uint8_t* b, Q6Conv& o) {
    const float dw = h2f(b + 208);
    const __m256i low4 = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3);
    for (int c = 0; c < 2; ++c) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * c));
        // The four 32-weight chunks of this half: low / high nibbles of ql0, ql1 with qh bit pairs 0-3.
        const __m256i lo[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                               _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
        for (int k = 0; k < 4; ++k) {
            const int j = 4 * c + k;
            const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two), 4);
            const __m256i v = _mm256_or_si256(lo[k], hi);  // q + 32 in 0..63
            const __m512i sc = _mm512_inserti64x4(_mm512_set1_epi16((int16_t)(int8_t)b[192 + 2 * j]),
                                                  _mm256_set1_epi16((int16_t)(int8_t)b[193 + 2 * j]), 1);
            const __m512i p = _mm512_mullo_epi16(_mm512_sub_epi16(_mm512_cvtepu8_epi16(v), _mm512_set1_epi16(32)), sc);
            const __m512i a = _mm512_abs_epi16(p);
            const __m256i a256 = _mm256_max_epu16(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
            const __m128i a128 = _mm_max_epu16(_mm256_castsi256_si128(a256), _mm256_extracti128_si256(a256, 1));
            const int m = 0xffff - (_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(a128, _mm_set1_epi16(-1)))) & 0xffff);
            __m256i codes;
            if (m <= 127) {
                codes = _mm512_cvtepi16_epi8(p);
                o.d[j] = dw;
            } else {
                const __m512 id = _mm512_set1_ps(127.0f / (float)m);
                const __m512i p0 = _mm512_cvtepi16_epi32(_mm512_castsi512_si256(p));
                const __m512i p1 = _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(p, 1));
                const __m512i r0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(p0), id));  // RNE
                const __m512i r1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(p1), id));
                codes = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(r0)), _mm512_cvtepi32_epi8(r1), 1);
                o.d[j] = round_to_half(dw * (float)m / 127.0f);
            }
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.q + 32 * j), codes);
        }
    }
}

// Q6_K batches: every 256-weight block re-encoded (kquant_q6k_conv.h) into the symmetric panel
// form of legacy_panel_avx512.h (codes + 128, one scale per 32), multiplied in SymBatchAccum order.
inline void fill_q6k_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, LegacyPanel& pn) {
    Q6Conv c;
    alignas(64) uint8_t tmp[kP32Rows * 256];
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb256; ++b) {
        for (int k = 0; k < kP32Rows; ++k) {
            uint8_t* codes = tmp + 256 * k;
            if (k < rows) {
                q6k_convert_avx512(w + (size_t)(r0 + k) * wrb + (size_t)b * 210, c);
                for (int j = 0; j < 8; ++j) {
                    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.q + 32 * j));
                    _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 32 * j), _mm256_xor_si256(v, flip));
                }
            } else {
                std::memset(codes, 0x80, 256);
            }
            for (int j = 0; j < 8; ++j) pn.d[(size_t)(8 * b + j) * kP32Rows + k] = k < rows ? c.d[j] : 0.0f;
        }
        simd512::panel_put_codes(tmp, 256, pn.q.data() + (size_t)(8 * b) * 32 * kP32Rows, 64);
    }
}

inline void q6k_panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                             size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt < kQ6ConvMinTokens) return q82_matmul<Q6KAvx512, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    const int64_t nb = ne0 / 32;
    panel_gemm<false>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q6k_panel(w, wrb, r, rows, ne0 / 256, pn); }, nb, act,
                      arb, nt, r0, r1, y, ys);
}

}  // namespace
}  // namespace ikllm::cpu
