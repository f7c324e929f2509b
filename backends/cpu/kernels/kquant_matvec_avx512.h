// Single-token products of Q4_K / Q5_K / Q6_K rows against Q8_2_X4 activations on AVX-512
// (included by kquant_panel_avx512.h). Token generation spends most of its time here, and the
// one-token tile of kquant_q82.h converted the activation's per-block floats (bf16 scales d_j,
// int16 code sums s_j) again for every row: here they are converted once per call, and R rows run
// side by side (independent accumulator chains; one load of each activation vector for all R).
// Each row's float operations are those of the one-token tile, in the same order, so the results
// are the same bits (tested against the tile and the scalar kernel).
#pragma once
#include <type_traits>

#include "kernels/kquant_q82.h"

namespace ikllm::cpu {
namespace {

// Rows of up to this many 256-weight blocks take the single-token path (16384 weights).
constexpr int64_t kMatvecMaxBlocks = 64;

struct Q82ActFloats {
    alignas(32) float d[kMatvecMaxBlocks][8];  // d_j of each block's 8 chunks
    alignas(32) float s[kMatvecMaxBlocks][8];  // s_j as floats
};

inline void q82_act_floats(const uint8_t* act, int64_t nb, Q82ActFloats& af) {
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* a = act + (size_t)b * kQ82BlockBytes;
        _mm256_store_ps(af.d[b], q82_scales8(a));
        _mm256_store_ps(af.s[b], q82_sums8(a));
    }
}

// R consecutive rows (stride wrb) of nb blocks, one token: y[i] for i < R.
template <int R, bool Five>
inline void q45k_rows1_avx512(const uint8_t* w, size_t wrb, int64_t nb, const uint8_t* act, const Q82ActFloats& af,
                              float* y) {
    constexpr int bytes = Five ? 176 : 144;
    __m512 acc[R];
    __m256 macc[R];
    for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps(), macc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m256 da = _mm256_load_ps(af.d[b]), sa = _mm256_load_ps(af.s[b]);
        const uint8_t* a = act + (size_t)b * kQ82BlockBytes;
        __m256 f[R];
        const uint8_t* x[R];
        for (int i = 0; i < R; ++i) {
            x[i] = w + (size_t)i * wrb + (size_t)b * bytes;
            prefetch_weights<bytes>(x[i]);
            __m256 D, M;
            q45k_scales(x[i], false, &D, &M);
            f[i] = _mm256_mul_ps(da, D);
            macc[i] = _mm256_fmadd_ps(_mm256_mul_ps(da, M), sa, macc[i]);
        }
        for (int g = 0; g < 4; ++g) {
            const __m512i ac = q82_pair_codes(a, g);
            for (int i = 0; i < R; ++i) {
                __m512i q = zp4k((Five ? x[i] + 48 : x[i] + 16) + 32 * g);
                if (Five) q = _mm512_mask_add_epi8(q, zhb(zbcast256(x[i] + 16), 2 * g), q, zset1(16));
                const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, ac);
                acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), q82_pair_factors(f[i], g), acc[i]);
            }
        }
    }
    for (int i = 0; i < R; ++i) y[i] = hsum512(acc[i]) + hsum256(macc[i]);
}

template <int R>
inline void q6k_rows1_avx512(const uint8_t* w, size_t wrb, int64_t nb, const uint8_t* act, const Q82ActFloats& af,
                             float* y) {
    const __m512i m15 = zset1(15), m30 = zset1(0x30), m32 = zset1(32);
    __m512 acc[R];
    for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m256 da = _mm256_load_ps(af.d[b]);
        const uint8_t* a = act + (size_t)b * kQ82BlockBytes;
        const uint8_t* x[R];
        __m256 f[R];
        __m256i sc16[R];
        for (int i = 0; i < R; ++i) {
            x[i] = w + (size_t)i * wrb + (size_t)b * 210;
            prefetch_weights<210>(x[i]);
            f[i] = _mm256_mul_ps(da, _mm256_set1_ps(hf(x[i] + 208)));
            sc16[i] = _mm256_cvtepi8_epi16(ld128(x[i] + 192));
        }
        for (int c = 0; c < 2; ++c)
            for (int i = 0; i < R; ++i) {
                const __m512i ql = _mm512_loadu_si512((const void*)(x[i] + 64 * c));
                const __m512i qh = zbcast256(x[i] + 128 + 32 * c);
                const __m512i h01 = _mm512_and_si512(_mm512_sllv_epi16(qh, zshift2(4, 2)), m30);
                const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(qh, zshift2(0, 2)), m30);
                const __m512i v[2] = {_mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(ql, m15), h01), m32),
                                      _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m15), h23), m32)};
                for (int h = 0; h < 2; ++h) {
                    const int k = 2 * c + h;
                    const __m512i u = _mm512_abs_epi8(v[h]), sc = zscale(sc16[i], k);
                    const __mmask64 neg = _mm512_movepi8_mask(v[h]);
                    const __m512i ac = q82_pair_codes(a, k);
                    const __m512i p = _mm512_dpwssd_epi32(
                        _mm512_setzero_si512(), _mm512_maddubs_epi16(u, _mm512_mask_sub_epi8(ac, neg, _mm512_setzero_si512(), ac)), sc);
                    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), q82_pair_factors(f[i], k), acc[i]);
                }
            }
    }
    for (int i = 0; i < R; ++i) y[i] = hsum512(acc[i]);
}

// One token (nt == 1), rows r0..r1: R rows at a time, then one by one. kRows1 picks R.
template <int R, class Rows>
inline void rows1_drive(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, float* y,
                        Rows rows) {
    Q82ActFloats af;
    const int64_t nb = ne0 / 256;
    q82_act_floats(act, nb, af);
    int64_t r = r0;
    for (; r + R <= r1; r += R) rows(std::integral_constant<int, R>{}, w + (size_t)r * wrb, nb, af, y + r);
    for (; r < r1; ++r) rows(std::integral_constant<int, 1>{}, w + (size_t)r * wrb, nb, af, y + r);
}

// Rows side by side (IKLLM_KQUANT_ROWS1 at build time, for A/B runs; 0: the one-token tile instead).
#ifndef IKLLM_KQUANT_ROWS1
#define IKLLM_KQUANT_ROWS1 1
#endif
constexpr int kRows1 = IKLLM_KQUANT_ROWS1;
inline bool use_rows1(int64_t nt, int64_t ne0) { return kRows1 > 0 && nt == 1 && ne0 / 256 <= kMatvecMaxBlocks; }

template <bool Five>
inline void q45k_matvec_avx512(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                               float* y) {
    rows1_drive<(kRows1 > 0 ? kRows1 : 1)>(w, wrb, ne0, r0, r1, act, y, [&](auto rc, const uint8_t* row, int64_t nb, const Q82ActFloats& af, float* yr) {
        q45k_rows1_avx512<decltype(rc)::value, Five>(row, wrb, nb, act, af, yr);
    });
}
inline void q6k_matvec_avx512(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                              float* y) {
    rows1_drive<(kRows1 > 0 ? kRows1 : 1)>(w, wrb, ne0, r0, r1, act, y, [&](auto rc, const uint8_t* row, int64_t nb, const Q82ActFloats& af, float* yr) {
        q6k_rows1_avx512<decltype(rc)::value>(row, wrb, nb, act, af, yr);
    });
}

}  // namespace
}  // namespace ikllm::cpu
