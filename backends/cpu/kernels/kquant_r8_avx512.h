// Q4_K_R8 (ikllm's run-time layout of Q4_K, quant/kquant_r8.h) on AVX-512 VNNI, included by
// kquant_avx512.cpp after kquant_panel_avx512.h. The plain Q4_K single-token kernel decodes one
// row at a time and sums each row horizontally: about 29 GB/s per core here, half of what the
// memory gives two cores. With 8 rows side by side a 512-bit register holds two 32-weight
// sub-blocks of all 8 rows (lanes 0-7 sub-block 2p, 8-15 sub-block 2p + 1), so as in Q4_0_R8
// (legacy_r8_avx512.h) one vpdpbusd advances 8 rows by 4 columns in two sub-blocks, every row's
// sums stay in its own lanes, and a sub-block pair needs two float multiply-adds for all 8 rows:
//   d_a * (d * sc_j) * sum q a  +  (-dmin * m_j) * (d_a * s_a)     (s_a the activation code sum).
// Fewer than kP32ExactMinTokens tokens: that tile, up to 4 tokens sharing each decoded pair; more:
// the plain Q4_K panels filled straight from the groups (the R8 code vectors are the panels'
// 4-column vectors, half a register each), so prompt batches give the plain type's bits.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/kquant_panel_avx512.h"
#include "kernels/prefetch.h"
#include "kernels/r8_slab.h"
#include "quant/kquant_r8.h"

namespace ikllm::cpu {
namespace {

constexpr size_t kR8ScratchFloats = 4096;  // per-token factors on the stack: 4 tokens of 32768 columns

inline __m512i q4kr8_pair_i32(int32_t lo, int32_t hi) {
    return _mm512_inserti64x4(_mm512_set1_epi32(lo), _mm256_set1_epi32(hi), 1);
}
inline __m512 q4kr8_pair_f32(const float* p) {  // [p[0] x 8, p[1] x 8]
    return _mm512_insertf32x8(_mm512_set1_ps(p[0]), _mm256_set1_ps(p[1]), 1);
}

// Per-token factors of one Q8_2_X4 row of nc 32-weight chunks: d_a and d_a * s_a per chunk.
inline void q4kr8_act_factors(const uint8_t* row, int64_t nc, float* da, float* das) {
    for (int64_t c = 0; c < nc; ++c) {
        const uint8_t* g = row + 144 * (c >> 2);
        uint16_t dbits;
        int16_t s;
        std::memcpy(&dbits, g + 2 * (c & 3), 2);
        std::memcpy(&s, g + 8 + 2 * (c & 3), 2);
        da[c] = bf16_to_f32(dbits);
        das[c] = da[c] * (float)s;
    }
}

// Pair P's factors from the 64 scale and min bytes (P a template argument: the lane extract
// takes an immediate, which clang wants as a constant expression).
template <int P>
inline void q4kr8_pair_factors(__m512i sc, __m512i mn, __m512 d, __m512 nm, bool conv, __m512* D, __m512* M) {
    D[P] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(sc, P))));
    M[P] = _mm512_mul_ps(nm, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(mn, P))));
    if (conv) {
        D[P] = _mm512_cvtph_ps(_mm512_cvtps_ph(D[P], _MM_FROUND_TO_NEAREST_INT));
        M[P] = _mm512_cvtph_ps(_mm512_cvtps_ph(M[P], _MM_FROUND_TO_NEAREST_INT));
    }
}

// The group block's factors per sub-block pair p (lanes 0-7 sub-block 2p of rows 0-7, 8-15 sub-block
// 2p + 1): D = d * sc_j and M = -dmin * m_j (exact products), rounded to fp16 when conv (the plain
// type's prompt-batch numerics).
inline void q4kr8_scales(const uint8_t* blk, bool conv, __m512 D[4], __m512 M[4]) {
    const __m128i dh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
    const __m128i mh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16));
    const __m512 d = _mm512_cvtph_ps(_mm256_broadcastsi128_si256(dh));
    const __m512 nm = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_cvtph_ps(_mm256_broadcastsi128_si256(mh)));
    const __m512i lo = _mm512_loadu_si512(blk + 32);
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 96));
    const __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(hi), _mm256_srli_epi16(hi, 4), 1);
    const __m512i m15 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    const __m512i sc = _mm512_or_si512(_mm512_and_si512(lo, m15), _mm512_slli_epi16(_mm512_and_si512(h, m3), 4));
    const __m512i mn = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo, 4), m15),
                                       _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 2), m3), 4));
    q4kr8_pair_factors<0>(sc, mn, d, nm, conv, D, M);
    q4kr8_pair_factors<1>(sc, mn, d, nm, conv, D, M);
    q4kr8_pair_factors<2>(sc, mn, d, nm, conv, D, M);
    q4kr8_pair_factors<3>(sc, mn, d, nm, conv, D, M);
}

// Codes of sub-block pair p: u[l] columns 4l..4l+3, u[4 + l] columns 16 + 4l.., 4 per row lane.
inline void q4kr8_codes(const uint8_t* blk, int p, __m512i u[8]) {
    const __m512i m15 = _mm512_set1_epi8(15);
    for (int l = 0; l < 4; ++l) {
        const __m512i q = _mm512_loadu_si512(blk + 128 + 256 * p + 64 * l);
        u[l] = _mm512_and_si512(q, m15);
        u[4 + l] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m15);
    }
}

// Q5_K_R8: the fifth bits of pair p's code vectors, in their byte map (quant/kquant_r8.h).
inline void q5kr8_high_bits(const uint8_t* blk, int p, __m512i u[8]) {
    const __m512i one = _mm512_set1_epi8(1);
    const __m512i hb = _mm512_loadu_si512(blk + quant::kQ4KR8Bytes + 64 * p);
    for (int l = 0; l < 4; ++l) {
        const __m128i lo = _mm_cvtsi32_si128(2 * l), hi = _mm_cvtsi32_si128(2 * l + 1);
        u[l] = _mm512_or_si512(u[l], _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(hb, lo), one), 4));
        u[4 + l] = _mm512_or_si512(u[4 + l], _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(hb, hi), one), 4));
    }
}

// One 8-row group times T tokens; a[t] token t's Q8_2_X4 row, da / das its factors. Lane k of the
// result is row k: the sum of the two halves. Five: Q5_K_R8 (codes 0..31).
template <int T, bool Five = false>
void q4kr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, const float* const* da, const float* const* das,
                float* y, int64_t ys) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ix[8];  // activation dwords of the pair's 64 code bytes: lanes 0-7 dword j, 8-15 dword 8 + j
    for (int j = 0; j < 8; ++j) ix[j] = q4kr8_pair_i32(j, 8 + j);
    for (int64_t b = 0; b < nbk; ++b) {
        constexpr int kBytes = Five ? quant::kQ5KR8Bytes : quant::kQ4KR8Bytes;
        const uint8_t* blk = g + kBytes * b;
        prefetch_weights<kBytes>(blk);
        __m512 D[4], M[4];
        q4kr8_scales(blk, false, D, M);
        for (int p = 0; p < 4; ++p) {
            __m512i u[8];
            q4kr8_codes(blk, p, u);
            if constexpr (Five) q5kr8_high_bits(blk, p, u);
            const int64_t c = 8 * b + 2 * p;  // the pair's first 32-weight activation chunk
            for (int t = 0; t < T; ++t) {
                const __m512i av = _mm512_loadu_si512(a[t] + 144 * (c >> 2) + 16 + 32 * (c & 3));
                // Four short chains (exact integer sums: order does not matter).
                __m512i s[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                                _mm512_setzero_si512()};
                for (int j = 0; j < 8; ++j) s[j % 4] = _mm512_dpbusd_epi32(s[j % 4], u[j], _mm512_permutexvar_epi32(ix[j], av));
                const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_add_epi32(s[2], s[3]));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(D[p], q4kr8_pair_f32(da[t] + c)), acc[t]);
                acc[t] = _mm512_fmadd_ps(M[p], q4kr8_pair_f32(das[t] + c), acc[t]);
            }
        }
    }
    for (int t = 0; t < T; ++t)
        _mm256_storeu_ps(y + t * ys, _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1)));
}

// Sub-block 2p + H of both groups into the panel: the low (H = 0) or high halves of their vectors.
template <int H>
inline void q4kr8_panel_half(const __m512i* u0, const __m512i* u1, __m512 d0, __m512 d1, __m512 m0, __m512 m1, int64_t c,
                             LegacyPanel& pn) {
    constexpr int kSel = H ? 0xEE : 0x44;
    uint8_t* q = pn.q.data() + (size_t)c * 32 * kP32Rows;
    for (int j = 0; j < 8; ++j) _mm512_storeu_si512(q + 64 * j, _mm512_shuffle_i64x2(u0[j], u1[j], kSel));
    _mm512_storeu_ps(pn.d.data() + (size_t)c * kP32Rows, _mm512_shuffle_f32x4(d0, d1, kSel));
    _mm512_storeu_ps(pn.m.data() + (size_t)c * kP32Rows, _mm512_shuffle_f32x4(m0, m1, kSel));
}

// Panel rows [r, r + rows) (rows 8 or 16, r a multiple of 8) as the plain Q4_K panel fill would
// write them (fill_q45k_panel): codes 0..15 and the factors D, M per 32-weight chunk and row.
// Five: Q5_K_R8 into the plain Q5_K panels (codes 0..31).
template <bool Five = false>
inline void fill_q4kr8_panel(const uint8_t* w, size_t wrb, int64_t r, int rows, int64_t nbk, bool conv, LegacyPanel& pn) {
    constexpr int kBytes = Five ? quant::kQ5KR8Bytes : quant::kQ4KR8Bytes;
    const uint8_t* g0 = w + (size_t)r * wrb;
    const uint8_t* g1 = rows > 8 ? g0 + 8 * wrb : nullptr;
    const __m512 zf = _mm512_setzero_ps();
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* b0 = g0 + kBytes * b;
        const uint8_t* b1 = g1 ? g1 + kBytes * b : nullptr;
        __m512 D0[4], M0[4], D1[4] = {zf, zf, zf, zf}, M1[4] = {zf, zf, zf, zf};
        q4kr8_scales(b0, conv, D0, M0);
        if (b1) q4kr8_scales(b1, conv, D1, M1);
        for (int p = 0; p < 4; ++p) {
            __m512i u0[8], u1[8];
            q4kr8_codes(b0, p, u0);
            if constexpr (Five) q5kr8_high_bits(b0, p, u0);
            if (b1) {
                q4kr8_codes(b1, p, u1);
                if constexpr (Five) q5kr8_high_bits(b1, p, u1);
            } else {
                for (int j = 0; j < 8; ++j) u1[j] = _mm512_setzero_si512();
            }
            q4kr8_panel_half<0>(u0, u1, D0[p], D1[p], M0[p], M1[p], 8 * b + 2 * p, pn);
            q4kr8_panel_half<1>(u0, u1, D0[p], D1[p], M0[p], M1[p], 8 * b + 2 * p + 1, pn);
        }
    }
}

void q4kr8_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    const int64_t nbk = ne0 / 256, nc = ne0 / 32;
    if (nt >= kP32ExactMinTokens) {
        const bool conv = nt >= kConvMinTokens;
        panel_gemm<true>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q4kr8_panel(w, wrb, r, rows, nbk, conv, pn); }, nc,
                         act, arb, nt, r0, r1, y, ys);
        return;
    }
    R8Scratch<float, kR8ScratchFloats> sda((size_t)(nt * nc)), sdas((size_t)(nt * nc));
    for (int64_t t = 0; t < nt; ++t) q4kr8_act_factors(act + (size_t)t * arb, nc, sda.p + t * nc, sdas.p + t * nc);
    r8_token_tiles(r0, r1, nt, [&](auto tiles, int64_t r, int64_t t0) {
        constexpr int T = decltype(tiles)::value;
        const uint8_t* a[T];
        const float* da[T];
        const float* das[T];
        for (int t = 0; t < T; ++t) {
            a[t] = act + (size_t)(t0 + t) * arb;
            da[t] = sda.p + (t0 + t) * nc;
            das[t] = sdas.p + (t0 + t) * nc;
        }
        q4kr8_tile<T>(w + (size_t)r * wrb, nbk, a, da, das, y + t0 * ys + r, ys);
    });
}

// Q5_K_R8: the Q4_K_R8 tile with the fifth bits below kP32ExactMinTokens tokens; from there the
// plain Q5_K panels filled from the groups (its results bit for bit).
void q5kr8_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    const int64_t nbk = ne0 / 256, nc = ne0 / 32;
    if (nt >= kP32ExactMinTokens) {
        const bool conv = nt >= kConvMinTokens;
        panel_gemm<true>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q4kr8_panel<true>(w, wrb, r, rows, nbk, conv, pn); }, nc,
                         act, arb, nt, r0, r1, y, ys);
        return;
    }
    R8Scratch<float, kR8ScratchFloats> sda((size_t)(nt * nc)), sdas((size_t)(nt * nc));
    for (int64_t t = 0; t < nt; ++t) q4kr8_act_factors(act + (size_t)t * arb, nc, sda.p + t * nc, sdas.p + t * nc);
    r8_token_tiles(r0, r1, nt, [&](auto tiles, int64_t r, int64_t t0) {
        constexpr int T = decltype(tiles)::value;
        const uint8_t* a[T];
        const float* da[T];
        const float* das[T];
        for (int t = 0; t < T; ++t) {
            a[t] = act + (size_t)(t0 + t) * arb;
            da[t] = sda.p + (t0 + t) * nc;
            das[t] = sdas.p + (t0 + t) * nc;
        }
        q4kr8_tile<T, true>(w + (size_t)r * wrb, nbk, a, da, das, y + t0 * ys + r, ys);
    });
}

// ---- Q6_K_R8 -----------------------------------------------------------------------------------
// The plain Q6_K code bytes in 4-byte granules of the 8 rows, both 128-weight halves per register
// (quant/kquant_r8.h): a granule pair gives 4 columns of chunk i (lanes 0-7, half 0) and of chunk
// 4 + i (lanes 8-15, half 1) for each i, the codes 0..63 built from ql nibbles and qh bit pairs.
// Per 16-weight sub-block the exact sum of (q - 32) a (vpdpbusd on q, started at -32 x the
// activation codes' sum), times the sub-block scale in int32, then one float multiply-add per
// chunk pair: d * d_a * sum_s sc_s sum (q - 32) a, the plain kernel's integer per 32 weights.

// Per-token factors of one Q8_2_X4 row: d_a per chunk, -32 x the code sum of each 16-weight half.
inline void q6kr8_act_factors(const uint8_t* row, int64_t nc, float* da, int32_t* o16) {
    for (int64_t c = 0; c < nc; ++c) {
        const uint8_t* g = row + 144 * (c >> 2);
        uint16_t dbits;
        std::memcpy(&dbits, g + 2 * (c & 3), 2);
        da[c] = bf16_to_f32(dbits);
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 16 + 32 * (c & 3)));
        // Signed byte sums per 16: pairs by maddubs (1 x q), then per 8 words.
        const __m256i w = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
        const __m256i d = _mm256_madd_epi16(w, _mm256_set1_epi16(1));  // 8 int32: 4 per half
        const __m128i lo = _mm256_castsi256_si128(d), hi = _mm256_extracti128_si256(d, 1);
        const __m128i h = _mm_hadd_epi32(_mm_hadd_epi32(lo, hi), _mm_setzero_si128());  // [sum lo, sum hi, 0, 0]
        o16[2 * c] = -32 * _mm_cvtsi128_si32(h);
        o16[2 * c + 1] = -32 * _mm_extract_epi32(h, 1);
    }
}

// Codes of chunks (i, 4 + i) in column group k (columns 4k..4k+3; lanes 0-7 half 0, 8-15 half 1).
template <int I>
inline __m512i q6kr8_codes(const uint8_t* blk, int k) {
    const __m512i m0f = _mm512_set1_epi8(0x0f), m3f = _mm512_set1_epi8(0x3f);
    const __m512i ql = _mm512_loadu_si512(blk + 144 + 64 * ((I & 1) ? 8 + k : k));
    const __m512i qh = _mm512_loadu_si512(blk + 1168 + 64 * k);
    // (a & 0x0f) | (b & 0xf0), then the 6 code bits.
    auto sel = [&](__m512i a, __m512i b) { return _mm512_and_si512(_mm512_ternarylogic_epi32(a, b, m0f, 0xE4), m3f); };
    if constexpr (I == 0) return sel(ql, _mm512_slli_epi16(qh, 4));
    if constexpr (I == 1) return sel(ql, _mm512_slli_epi16(qh, 2));
    if constexpr (I == 2) return sel(_mm512_srli_epi16(ql, 4), qh);
    return sel(_mm512_srli_epi16(ql, 4), _mm512_srli_epi16(qh, 2));
}

// Chunks I and 4 + I of block pair (b0, b1) (groups of rows 0-7 and 8-15 of a panel; b1 null:
// rows 8-15 padding) in the lanes of q6k_panel_lanes_avx512.h: an R8 code vector is half a panel
// vector of each (lanes 0-7 chunk I, 8-15 chunk 4 + I), so the panel needs no transpose.
template <int I, class Chunk>
inline void q6kr8_lane_pair(const uint8_t* b0, const uint8_t* b1, __m512 d, Chunk&& chunk) {
    Q6LaneChunk lo, hi;
    lo.d = hi.d = d;
    const __m512i pad = _mm512_set1_epi8(32);
    for (int k = 0; k < 8; ++k) {
        const __m512i u0 = q6kr8_codes<I>(b0, k), u1 = b1 ? q6kr8_codes<I>(b1, k) : pad;
        lo.q[k] = _mm512_shuffle_i64x2(u0, u1, 0x44);
        hi.q[k] = _mm512_shuffle_i64x2(u0, u1, 0xEE);
    }
    auto scales = [&](int s) {  // sub-block s's 8 scale bytes per group (quant/kquant_r8.h)
        const int o = 16 + 16 * (s & 7) + 8 * (s >> 3);
        const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b0 + o));
        const __m128i c = b1 ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b1 + o)) : _mm_setzero_si128();
        return _mm512_cvtepi8_epi32(_mm_unpacklo_epi64(a, c));
    };
    lo.sc0 = scales(2 * I);
    lo.sc1 = scales(2 * I + 1);
    hi.sc0 = scales(8 + 2 * I);
    hi.sc1 = scales(9 + 2 * I);
    chunk(I, lo);
    chunk(4 + I, hi);
}

// Every chunk of the panel rows [r, r + rows) (rows 8 or 16) of block b, as chunk(c, lanes).
template <class Chunk>
inline void q6kr8_lane_block(const uint8_t* w, size_t wrb, int64_t r, int rows, int64_t b, Chunk&& chunk) {
    const uint8_t* b0 = w + (size_t)r * wrb + (size_t)quant::kQ6KR8Bytes * b;
    const uint8_t* b1 = rows > 8 ? b0 + 8 * wrb : nullptr;
    const __m128i d0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0));
    const __m128i d1 = b1 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1)) : _mm_setzero_si128();
    const __m512 d = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(d0), d1, 1));
    q6kr8_lane_pair<0>(b0, b1, d, chunk);
    q6kr8_lane_pair<1>(b0, b1, d, chunk);
    q6kr8_lane_pair<2>(b0, b1, d, chunk);
    q6kr8_lane_pair<3>(b0, b1, d, chunk);
}

// The plain Q6_K panels (fill_q6k_panel, fill_q6k_exact_panel) filled straight from the groups:
// the same panel bytes and factors, so prompt batches give the plain type's bits.
inline void fill_q6kr8_panel(const uint8_t* w, size_t wrb, int64_t r, int rows, int64_t nb256, LegacyPanel& pn) {
    for (int64_t b = 0; b < nb256; ++b)
        q6kr8_lane_block(w, wrb, r, rows, b, [&](int c, const Q6LaneChunk& ch) {
            const size_t j = (size_t)(8 * b + c);
            q6_lane_conv_chunk(ch, pn.q.data() + j * 32 * kP32Rows, pn.d.data() + j * kP32Rows);
        });
}
inline void fill_q6kr8_exact_panel(const uint8_t* w, size_t wrb, int64_t r, int rows, int64_t nb256, Q6Panel& pn) {
    for (int64_t b = 0; b < nb256; ++b)
        q6kr8_lane_block(w, wrb, r, rows, b, [&](int c, const Q6LaneChunk& ch) {
            const size_t j = (size_t)(8 * b + c), si = j * kP32Rows;
            q6_lane_exact_chunk(ch, pn.q.data() + j * 32 * kP32Rows, pn.s0.data() + si, pn.s1.data() + si, pn.c0.data() + si,
                                pn.c1.data() + si);
        });
}

template <int I, int T>
inline void q6kr8_chunk_pair(const uint8_t* blk, int64_t b, const __m512 d16, const __m512i* ix, const uint8_t* const* a,
                             const float* const* da, const int32_t* const* o16, __m512* acc) {
    __m512i c[8];
    for (int k = 0; k < 8; ++k) c[k] = q6kr8_codes<I>(blk, k);
    const __m512i sc0 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 + 32 * I)));
    const __m512i sc1 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 32 + 32 * I)));
    const int64_t c0 = 8 * b + I, c4 = c0 + 4;  // activation chunks of the two halves
    for (int t = 0; t < T; ++t) {
        const __m512i av = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t] + 144 * (c0 >> 2) + 16 + 32 * I))),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t] + 144 * (c4 >> 2) + 16 + 32 * I)), 1);
        __m512i s0 = q4kr8_pair_i32(o16[t][2 * c0], o16[t][2 * c4]);
        __m512i s1 = q4kr8_pair_i32(o16[t][2 * c0 + 1], o16[t][2 * c4 + 1]);
        for (int k = 0; k < 4; ++k) s0 = _mm512_dpbusd_epi32(s0, c[k], _mm512_permutexvar_epi32(ix[k], av));
        for (int k = 4; k < 8; ++k) s1 = _mm512_dpbusd_epi32(s1, c[k], _mm512_permutexvar_epi32(ix[k], av));
        const __m512i isum = _mm512_add_epi32(_mm512_mullo_epi32(s0, sc0), _mm512_mullo_epi32(s1, sc1));
        const __m512 f = _mm512_insertf32x8(_mm512_set1_ps(da[t][c0]), _mm256_set1_ps(da[t][c4]), 1);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d16, f), acc[t]);
    }
}


template <int T>
void q6kr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, const float* const* da, const int32_t* const* o16,
                float* y, int64_t ys) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ix[8];
    for (int k = 0; k < 8; ++k) ix[k] = q4kr8_pair_i32(k, 8 + k);
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + quant::kQ6KR8Bytes * b;
        prefetch_weights<quant::kQ6KR8Bytes>(blk);
        const __m512 d16 = _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk))));
        q6kr8_chunk_pair<0, T>(blk, b, d16, ix, a, da, o16, acc);
        q6kr8_chunk_pair<1, T>(blk, b, d16, ix, a, da, o16, acc);
        q6kr8_chunk_pair<2, T>(blk, b, d16, ix, a, da, o16, acc);
        q6kr8_chunk_pair<3, T>(blk, b, d16, ix, a, da, o16, acc);
    }
    for (int t = 0; t < T; ++t)
        _mm256_storeu_ps(y + t * ys, _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1)));
}

void q6kr8_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    const int64_t nbk = ne0 / 256, nc = ne0 / 32;
    // From kP32ExactMinTokens tokens the plain type's panels, filled from the groups (the tile
    // reloads and rearranges every activation chunk per token: ~110 GFLOP/s on one Zen 4 core
    // at 16-128 tokens, the panels about twice that).
    if (nt >= kQ6ConvMinTokens) {
        panel_gemm<false>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q6kr8_panel(w, wrb, r, rows, nbk, pn); }, nc, act, arb,
                          nt, r0, r1, y, ys);
        return;
    }
    if (nt >= kP32ExactMinTokens) {
        q6_exact_panel_gemm([&](int64_t r, int rows, Q6Panel& pn) { fill_q6kr8_exact_panel(w, wrb, r, rows, nbk, pn); }, nc, act,
                            arb, nt, r0, r1, y, ys);
        return;
    }
    R8Scratch<float, kR8ScratchFloats> da_v((size_t)(nt * nc));
    R8Scratch<int32_t, 2 * kR8ScratchFloats> o16_v((size_t)(2 * nt * nc));
    for (int64_t t = 0; t < nt; ++t) q6kr8_act_factors(act + (size_t)t * arb, nc, da_v.p + t * nc, o16_v.p + 2 * t * nc);
    r8_token_tiles(r0, r1, nt, [&](auto tiles, int64_t r, int64_t t0) {
        constexpr int T = decltype(tiles)::value;
        const uint8_t* a[T];
        const float* da[T];
        const int32_t* o16[T];
        for (int t = 0; t < T; ++t) {
            a[t] = act + (size_t)(t0 + t) * arb;
            da[t] = da_v.p + (t0 + t) * nc;
            o16[t] = o16_v.p + 2 * (t0 + t) * nc;
        }
        q6kr8_tile<T>(w + (size_t)r * wrb, nbk, a, da, o16, y + t0 * ys + r, ys);
    });
}

}  // namespace
}  // namespace ikllm::cpu
