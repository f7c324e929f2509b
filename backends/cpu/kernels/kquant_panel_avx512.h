// Prompt-batch GEMM for Q4_K / Q5_K on AVX-512 VNNI (included by kquant_avx512.cpp): for batches
// of kP32ExactMinTokens tokens or more, rows are unpacked once per call into the 16-row panels of
// legacy_panel_avx512.h, each 32-weight chunk as unsigned codes with its conv-mode factors
// D_j = fp16(d * sc_j) and M_j = fp16(-dmin * m_j) (kquant_q82.h), then multiplied by the
// affine panel tile: per chunk d_a * D_j * sum q a + d_a * M_j * s_a. Below kConvMinTokens the
// factors are exact (the numerics of the small-batch kernel, in another summation order); from
// there rounded to fp16 like the reference's batch path.
#pragma once
#include "kernels/kquant_q6k_conv.h"
#include "kernels/kquant_q82.h"
#include "kernels/legacy_panel_avx512.h"

namespace ikllm::cpu {
namespace {

// conv: the factors rounded to fp16 as the reference does for batches of kConvMinTokens or more;
// else exact, as the small-batch kernel computes them.
template <bool Five>
void fill_q45k_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, bool conv, LegacyPanel& pn) {
    constexpr int bytes = Five ? 176 : 144;
    alignas(32) float D[8], M[8];
    alignas(64) uint8_t tmp[kP32Rows * 256];
    for (int64_t b = 0; b < nb256; ++b) {
        for (int k = 0; k < kP32Rows; ++k) {
            uint8_t* codes = tmp + 256 * k;
            if (k < rows) {
                const uint8_t* x = w + (size_t)(r0 + k) * wrb + (size_t)b * bytes;
                if (b + 1 < nb256)  // the next block of this row (see fill_q6k_exact_panel)
                    for (int l = 0; l < bytes; l += 64) _mm_prefetch(reinterpret_cast<const char*>(x + bytes + l), _MM_HINT_T0);
                __m256 vd, vm;
                q45k_scales(x, conv, &vd, &vm);
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
    if (q82_rows1_fits(nt, ne0)) return q82_rows1<Q45KAvx512<Five>>(w, wrb, ne0, r0, r1, act, y);
    if (nt < kP32ExactMinTokens) return q82_matmul<Q45KAvx512<Five>, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    const int64_t nb = ne0 / 32;
    const bool conv = nt >= kConvMinTokens;
    panel_gemm<true>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q45k_panel<Five>(w, wrb, r, rows, ne0 / 256, conv, pn); }, nb,
                     act, arb, nt, r0, r1, y, ys);
}

// The 8 chunks of 32 codes q (0..63) of a Q6_K block, chunk j = weights 32j..32j+31: per 128
// weights, the low / high nibbles of ql0 and ql1 with the qh bit pairs 0-3.
inline void q6k_chunk_codes(const uint8_t* b, __m256i q[8]) {
    const __m256i low4 = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3);
    for (int c = 0; c < 2; ++c) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * c));
        const __m256i lo[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                               _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
        for (int k = 0; k < 4; ++k)
            q[4 * c + k] = _mm256_or_si256(lo[k], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two), 4));
    }
}

// q6k_convert (kquant_q6k_conv.h) in vectors, same bits: per 32-weight chunk the exact products
// P = sc * (q - 32) as 32 int16 lanes, m = max |P| (unsigned min-position of the complement), then
// either the codes P or RNE(float(P) * (127 / m)) with the scalar's float32 operations.
inline void q6k_convert_avx512(const uint8_t* b, Q6Conv& o) {
    const float dw = h2f(b + 208);
    __m256i q[8];
    q6k_chunk_codes(b, q);
    for (int j = 0; j < 8; ++j) {
        const __m256i v = q[j];  // q + 32 in 0..63
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
                const uint8_t* x = w + (size_t)(r0 + k) * wrb + (size_t)b * 210;
                if (b + 1 < nb256)  // the next block of this row (see fill_q6k_exact_panel)
                    for (int l = 0; l < 210; l += 64) _mm_prefetch(reinterpret_cast<const char*>(x + 210 + l), _MM_HINT_T0);
                q6k_convert_avx512(x, c);
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

// Q6_K batches of kP32MinTokens .. kQ6ConvMinTokens - 1 tokens (the routed experts of prompt
// batches): exact like the small-batch kernel, which unpacked every row once per 8 tokens (60
// GFLOP/s on one Zen 4 core at 32 tokens, against 190 for Q4_K's panels). Rows are unpacked once
// into 16-row panels of signed codes q - 32, with per row and 16-weight half the float scale
// d * sc and the code sum times 128. Every token's codes enter vpdpbusd as the unsigned operand
// a + 128, taken back per half: sum (a + 128)(q - 32) - 128 sum (q - 32) = sum a (q - 32), exact
// in int32, then scaled in float per half by (d * sc) * d_a.
struct Q6Panel {
    std::vector<uint8_t> q;      // [nb][8][16][4] codes q - 32 (as signed bytes)
    std::vector<float> s0, s1;   // [nb][16] d * sc of each 32-block's halves
    std::vector<int32_t> c0, c1; // [nb][16] 128 * sum of the half's codes
    explicit Q6Panel(int64_t nb)
        : q((size_t)nb * 32 * kP32Rows), s0((size_t)nb * kP32Rows), s1(s0.size()), c0(s0.size()), c1(s0.size()) {}
};

inline void fill_q6k_exact_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, Q6Panel& pn) {
    alignas(64) uint8_t tmp[kP32Rows * 256];
    const __m256i m32 = _mm256_set1_epi8(32);
    for (int64_t b = 0; b < nb256; ++b) {
        for (int k = 0; k < kP32Rows; ++k) {
            uint8_t* codes = tmp + 256 * k;
            if (k >= rows) {  // padding rows: codes 0, scales 0
                std::memset(codes, 0, 256);
                for (int j = 0; j < 8; ++j) {
                    const size_t si = (size_t)(8 * b + j) * kP32Rows + k;
                    pn.s0[si] = pn.s1[si] = 0.0f;
                    pn.c0[si] = pn.c1[si] = 0;
                }
                continue;
            }
            const uint8_t* x = w + (size_t)(r0 + k) * wrb + (size_t)b * 210;
            // The rows are read a block at a time across 16 rows, a pattern the hardware
            // prefetcher does not follow: fetch this row's next block now (47 % of the fill's
            // time waited on the scale load of each block before).
            if (b + 1 < nb256)
                for (int l = 0; l < 210; l += 64) _mm_prefetch(reinterpret_cast<const char*>(x + 210 + l), _MM_HINT_T0);
            const float d = h2f(x + 208);
            __m256i qc[8];
            q6k_chunk_codes(x, qc);
            for (int j = 0; j < 8; ++j) {
                const __m256i q = qc[j];  // 0..63
                _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 32 * j), _mm256_sub_epi8(q, m32));
                // Code sums of the two halves: byte sums of q per 8 (vpsadbw), less 16 * 32.
                const __m256i sad = _mm256_sad_epu8(q, _mm256_setzero_si256());
                const __m128i h0 = _mm256_castsi256_si128(sad), h1 = _mm256_extracti128_si256(sad, 1);
                const int32_t sa = _mm_cvtsi128_si32(_mm_add_epi64(h0, _mm_unpackhi_epi64(h0, h0))) - 512;
                const int32_t sb = _mm_cvtsi128_si32(_mm_add_epi64(h1, _mm_unpackhi_epi64(h1, h1))) - 512;
                const size_t si = (size_t)(8 * b + j) * kP32Rows + k;
                pn.s0[si] = d * (float)(int8_t)x[192 + 2 * j];
                pn.s1[si] = d * (float)(int8_t)x[193 + 2 * j];
                pn.c0[si] = 128 * sa;
                pn.c1[si] = 128 * sb;
            }
        }
        simd512::panel_put_codes(tmp, 256, pn.q.data() + (size_t)(8 * b) * 32 * kP32Rows, 64);
    }
}

// T tokens over R panels; every row lane runs the same operations in the same order whatever
// R and T are.
template <int R, int T>
void q6_panel_tile(const Q6Panel* const* pn, int64_t nb, const ActBlockOffsets& ao, const uint8_t* act, size_t arb,
                   const int* rows, float* y, int64_t ys) {
    __m512 acc[T][R];
    for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) acc[t][r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint32_t oq = ao.qs[b];
        __m512 da[T];
        for (int t = 0; t < T; ++t) {
            uint16_t dbits;
            std::memcpy(&dbits, act + (size_t)t * arb + ao.d[b], 2);
            da[t] = _mm512_set1_ps(bf16_to_f32(dbits));
        }
        for (int h = 0; h < 2; ++h) {
            __m512i isum[T][R];
            for (int t = 0; t < T; ++t)
                for (int r = 0; r < R; ++r) isum[t][r] = _mm512_setzero_si512();
            for (int j = 4 * h; j < 4 * h + 4; ++j) {
                __m512i wv[R];
                for (int r = 0; r < R; ++r)
                    wv[r] = _mm512_loadu_si512((const void*)(pn[r]->q.data() + (size_t)b * 32 * kP32Rows + 64 * j));
                for (int t = 0; t < T; ++t) {
                    uint32_t a4;
                    std::memcpy(&a4, act + (size_t)t * arb + oq + 4 * j, 4);
                    const __m512i av = _mm512_set1_epi32((int32_t)(a4 ^ 0x80808080u));  // a + 128, unsigned
                    for (int r = 0; r < R; ++r) isum[t][r] = _mm512_dpbusd_epi32(isum[t][r], av, wv[r]);
                }
            }
            for (int r = 0; r < R; ++r) {
                const size_t si = (size_t)b * kP32Rows;
                const __m512 sw = _mm512_loadu_ps((h ? pn[r]->s1 : pn[r]->s0).data() + si);
                const __m512i cw = _mm512_loadu_si512((const void*)((h ? pn[r]->c1 : pn[r]->c0).data() + si));
                for (int t = 0; t < T; ++t)
                    acc[t][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t][r], cw)),
                                                _mm512_mul_ps(sw, da[t]), acc[t][r]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        const __mmask16 m = (__mmask16)((1u << rows[r]) - 1);
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ys + r * kP32Rows, m, acc[t][r]);
    }
}

inline void q6k_exact_panel_gemm(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                                 size_t arb, int64_t nt, float* y, int64_t ys) {
    constexpr int G = 2, GT = 4;
    const int64_t nb = ne0 / 32;
    const ActBlockOffsets ao(ne0);
    std::vector<Q6Panel> panels((size_t)G, Q6Panel(nb));
    const Q6Panel* pn[G] = {&panels[0], &panels[1]};
    int64_t r = r0;
    for (; r + G * kP32Rows <= r1; r += G * kP32Rows) {
        const int rows[G] = {kP32Rows, kP32Rows};
        for (int i = 0; i < G; ++i) fill_q6k_exact_panel(w, wrb, r + i * kP32Rows, kP32Rows, ne0 / 256, panels[(size_t)i]);
        int64_t t = 0;
        for (; t + GT <= nt; t += GT) q6_panel_tile<G, GT>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t < nt; ++t) q6_panel_tile<G, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
    }
    for (; r < r1; r += kP32Rows) {
        const int rows[1] = {(int)std::min<int64_t>(kP32Rows, r1 - r)};
        fill_q6k_exact_panel(w, wrb, r, rows[0], ne0 / 256, panels[0]);
        int64_t t = 0;
        for (; t + 8 <= nt; t += 8) q6_panel_tile<1, 8>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t + 4 <= nt; t += 4) q6_panel_tile<1, 4>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t < nt; ++t) q6_panel_tile<1, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
    }
}

inline void q6k_panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                             size_t arb, int64_t nt, float* y, int64_t ys) {
    if (q82_rows1_fits(nt, ne0)) return q82_rows1<Q6KAvx512>(w, wrb, ne0, r0, r1, act, y);
    if (nt < kP32ExactMinTokens) return q82_matmul<Q6KAvx512, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    if (nt < kQ6ConvMinTokens) return q6k_exact_panel_gemm(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    const int64_t nb = ne0 / 32;
    panel_gemm<false>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q6k_panel(w, wrb, r, rows, ne0 / 256, pn); }, nb, act,
                      arb, nt, r0, r1, y, ys);
}

}  // namespace
}  // namespace ikllm::cpu
