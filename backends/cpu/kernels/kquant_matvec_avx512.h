// Single-token products of Q4_K / Q5_K / Q6_K rows against Q8_2_X4 activations on AVX-512
// (included by kquant_panel_avx512.h). Token generation spends most of its time here, and the
// one-token tile of kquant_q82.h converted the activation's per-block floats (bf16 scales d_j,
// int16 code sums s_j) again for every row: here they are converted once per call. Each row's float
// operations are those of the one-token tile, in the same order, so the results are the same bits
// (tested: a token alone gives the bits it gets inside a small batch). Two or four rows side by
// side were faster from cache and slower from memory (two weight streams per core; docs/cpu-speed.md).
#pragma once
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

// One row of nb blocks, one token.
template <bool Five>
inline float q45k_row1_avx512(const uint8_t* row, int64_t nb, const uint8_t* act, const Q82ActFloats& af) {
    constexpr int bytes = Five ? 176 : 144;
    __m512 acc = _mm512_setzero_ps();
    __m256 macc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = row + (size_t)b * bytes;
        const uint8_t* a = act + (size_t)b * kQ82BlockBytes;
        prefetch_weights<bytes>(x);
        const __m256 da = _mm256_load_ps(af.d[b]);
        __m256 D, M;
        q45k_scales(x, false, &D, &M);
        const __m256 f = _mm256_mul_ps(da, D);
        macc = _mm256_fmadd_ps(_mm256_mul_ps(da, M), _mm256_load_ps(af.s[b]), macc);
        const uint8_t* qs = Five ? x + 48 : x + 16;
        const __m512i hb2 = Five ? zbcast256(x + 16) : _mm512_setzero_si512();
        for (int g = 0; g < 4; ++g) {
            __m512i q = zp4k(qs + 32 * g);
            if (Five) q = _mm512_mask_add_epi8(q, zhb(hb2, 2 * g), q, zset1(16));
            const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, q82_pair_codes(a, g));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), q82_pair_factors(f, g), acc);
        }
    }
    return hsum512(acc) + hsum256(macc);
}

inline float q6k_row1_avx512(const uint8_t* row, int64_t nb, const uint8_t* act, const Q82ActFloats& af) {
    const __m512i m15 = zset1(15), m30 = zset1(0x30), m32 = zset1(32);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = row + (size_t)b * 210;
        const uint8_t* a = act + (size_t)b * kQ82BlockBytes;
        prefetch_weights<210>(x);
        const __m256 f = _mm256_mul_ps(_mm256_load_ps(af.d[b]), _mm256_set1_ps(hf(x + 208)));
        const __m256i sc16 = _mm256_cvtepi8_epi16(ld128(x + 192));
        for (int c = 0; c < 2; ++c) {
            const __m512i ql = _mm512_loadu_si512((const void*)(x + 64 * c));
            const __m512i qh = zbcast256(x + 128 + 32 * c);
            const __m512i h01 = _mm512_and_si512(_mm512_sllv_epi16(qh, zshift2(4, 2)), m30);
            const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(qh, zshift2(0, 2)), m30);
            const __m512i v[2] = {_mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(ql, m15), h01), m32),
                                  _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m15), h23), m32)};
            for (int h = 0; h < 2; ++h) {
                const int k = 2 * c + h;
                const __m512i u = _mm512_abs_epi8(v[h]), sc = zscale(sc16, k);
                const __mmask64 neg = _mm512_movepi8_mask(v[h]);
                const __m512i ac = q82_pair_codes(a, k);
                const __m512i p = _mm512_dpwssd_epi32(
                    _mm512_setzero_si512(), _mm512_maddubs_epi16(u, _mm512_mask_sub_epi8(ac, neg, _mm512_setzero_si512(), ac)), sc);
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), q82_pair_factors(f, k), acc);
            }
        }
    }
    return hsum512(acc);
}

inline bool use_rows1(int64_t nt, int64_t ne0) { return nt == 1 && ne0 / 256 <= kMatvecMaxBlocks; }

// One token (use_rows1), rows r0..r1 of w into y[r].
template <bool Five>
inline void q45k_matvec_avx512(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                               float* y) {
    Q82ActFloats af;
    q82_act_floats(act, ne0 / 256, af);
    for (int64_t r = r0; r < r1; ++r) y[r] = q45k_row1_avx512<Five>(w + (size_t)r * wrb, ne0 / 256, act, af);
}
inline void q6k_matvec_avx512(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                              float* y) {
    Q82ActFloats af;
    q82_act_floats(act, ne0 / 256, af);
    for (int64_t r = r0; r < r1; ++r) y[r] = q6k_row1_avx512(w + (size_t)r * wrb, ne0 / 256, act, af);
}

}  // namespace
}  // namespace ikllm::cpu
