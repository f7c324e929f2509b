// SIMD matmul kernels of Q4_K, Q5_K and Q6_K against Q8_2_X4 activations (included by
// kquant_avx2.cpp, kquant_avxvnni.cpp and kquant_avx512.cpp; compiled with each file's ISA flags). Numerics are
// those of scalar_matmul_q82 (kquant_unpack.h): every 32-weight activation block j has its own
// bf16 scale d_j, so each chunk of 32 weights gets an exact integer dot that is then scaled in
// float right away:
//   Q4_K / Q5_K: d_j * (D_j * sum q a + M_j * s_j), D_j = d * sc_j, M_j = -dmin * m_j, s_j the
//                stored code sum of the activation block (D_j, M_j rounded to fp16 in conv mode:
//                batches of kConvMinTokens tokens or more);
//   Q6_K:        d_j * d * sum_{s in j} sc_s * sum (q - 32) a   (signed levels, sign trick).
// Per token and block the eight factors d_j * D_j are formed once (stored, then broadcast).
// A weight block is decoded once per tile of T tokens and stays in registers.
#pragma once
#include "kernels/act_q8_2_x4_simd.h"
#include "kernels/kquant_simd512.h"

namespace ikllm::cpu {
namespace {

// (the Q8_2_X4 activation encoder lives in act_q8_2_x4_simd.h)

// ---- per-block activation factors -----------------------------------------------------------------
// The 8 bf16 scales d_j and int16 sums s_j of the Q8_2_X4 activations of one 256-weight block.
inline __m256 q82_scales8(const uint8_t* a) {
    const __m128i h = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i*)a), _mm_loadl_epi64((const __m128i*)(a + 144)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m256 q82_sums8(const uint8_t* a) {
    const __m128i h =
        _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i*)(a + 8)), _mm_loadl_epi64((const __m128i*)(a + 152)));
    return _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(h));
}
// Codes of 32-weight chunk c of the block (c = 0..7); chunks 2k, 2k+1 are 64 contiguous bytes.
inline const int8_t* q82_chunk(const uint8_t* a, int c) { return (const int8_t*)(a + 144 * (c >> 2) + 16 + 32 * (c & 3)); }

// sum of c * a per 4 bytes (c unsigned, a signed; the K-quant codes are small, so the int16
// pair sums of maddubs cannot saturate): one dpbusd with AVX-VNNI (kquant_avxvnni.cpp).
inline __m256i udot4(__m256i c, __m256i a) {
#ifdef __AVXVNNI__
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), c, a);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(c, a), _mm256_set1_epi16(1));
#endif
}

inline __m256 round_half8(__m256 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }

// Q4_K / Q5_K block header: the 6-bit scales sc_j and mins m_j as 8 floats each.
inline void q45k_scale_codes(const uint8_t* b, __m256* sc8, __m256* m8) {
    const uint32_t u0 = rd_u32(b + 4), u1 = rd_u32(b + 8), u2 = rd_u32(b + 12);
    const uint64_t sc = (u0 & 0x3f3f3f3fu) | (uint64_t)((u2 & 0x0f0f0f0fu) | ((u0 >> 2) & 0x30303030u)) << 32;
    const uint64_t mn = (u1 & 0x3f3f3f3fu) | (uint64_t)(((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 2) & 0x30303030u)) << 32;
    *sc8 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc)));
    *m8 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mn)));
}
// D_j = d * sc_j and M_j = -dmin * m_j as 8 floats.
inline void q45k_scales(const uint8_t* b, bool conv, __m256* D, __m256* M) {
    __m256 sc8, m8;
    q45k_scale_codes(b, &sc8, &m8);
    *D = _mm256_mul_ps(_mm256_set1_ps(hf(b)), sc8);
    *M = _mm256_mul_ps(_mm256_set1_ps(-hf(b + 2)), m8);
    if (conv) {
        *D = round_half8(*D);
        *M = round_half8(*M);
    }
}

// Codes of chunks 2g (c[0]) and 2g + 1 (c[1]) of a Q4_K / Q5_K block at b, 32 unsigned bytes each:
// 64 weights per 32 bytes of qs (low nibbles first, then high nibbles), plus for Q5_K the 5th bits
// (bits 2g / 2g + 1 of qh byte l).
template <bool Five>
inline void q45k_codes(const uint8_t* b, int g, __m256i c[2]) {
    const __m256i m15 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i q = ld256((Five ? b + 48 : b + 16) + 32 * g);
    c[0] = _mm256_and_si256(q, m15);
    c[1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m15);
    if constexpr (Five) {
        const __m256i qh = ld256(b + 16);
        c[0] = _mm256_or_si256(c[0], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
        c[1] = _mm256_or_si256(c[1], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
    }
}

// Single-token products (token generation) convert the activation's per-block floats (d_j, s_j)
// once per call instead of once per row: rows of up to kMatvecMaxBlocks blocks (16384 weights).
constexpr int64_t kMatvecMaxBlocks = 64;
struct Q82ActFloats {
    alignas(32) float d[kMatvecMaxBlocks][8];  // d_j of each block's 8 chunks
    alignas(32) float s[kMatvecMaxBlocks][8];  // s_j as floats
};
inline void q82_act_floats(const uint8_t* act, int64_t nb, Q82ActFloats& af) {
    for (int64_t b = 0; b < nb; ++b) {
        _mm256_store_ps(af.d[b], q82_scales8(act + (size_t)b * kQ82BlockBytes));
        _mm256_store_ps(af.s[b], q82_sums8(act + (size_t)b * kQ82BlockBytes));
    }
}

// ---- AVX2 -------------------------------------------------------------------------------------------

// af: see q45k_tile_avx512.
template <int T, bool Five>
inline void q45k_tile_avx2(const uint8_t* row, int64_t nb, bool conv, const uint8_t* act, size_t arb, float* y,
                           int64_t ys, const Q82ActFloats* af = nullptr) {
    constexpr int NA = 1;  // independent accumulators (latency of a single token)
    constexpr int bytes = Five ? 176 : 144;
    __m256 facc[T][NA];
    for (int t = 0; t < T; ++t)
        for (int i = 0; i < NA; ++i) facc[t][i] = _mm256_setzero_ps();
    alignas(32) float f[T][8];
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = row + (size_t)b * bytes;
        if constexpr (T <= 2) prefetch_weights<bytes>(x);
        __m256 D, M;
        q45k_scales(x, conv, &D, &M);
        for (int t = 0; t < T; ++t) {
            const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
            const __m256 da = af ? _mm256_load_ps(af->d[b]) : q82_scales8(a);
            _mm256_store_ps(f[t], _mm256_mul_ps(da, D));
            facc[t][0] = _mm256_fmadd_ps(_mm256_mul_ps(da, M), af ? _mm256_load_ps(af->s[b]) : q82_sums8(a), facc[t][0]);
        }
        const uint8_t* qs = Five ? x + 48 : x + 16;
        const __m256i hb = Five ? ld256(x + 16) : _mm256_setzero_si256();
        for (int g = 0; g < 4; ++g) {
            const __m256i q = ld256(qs + 32 * g);
            __m256i c0 = nib_lo(q), c1 = nib_hi(q);
            if (Five) {
                c0 = _mm256_or_si256(c0, _mm256_slli_epi16(bit_of(hb, 2 * g), 4));
                c1 = _mm256_or_si256(c1, _mm256_slli_epi16(bit_of(hb, 2 * g + 1), 4));
            }
            for (int t = 0; t < T; ++t) {
                const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
                const __m256i p0 = udot4(c0, ld256(q82_chunk(a, 2 * g)));
                const __m256i p1 = udot4(c1, ld256(q82_chunk(a, 2 * g + 1)));
                facc[t][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_broadcast_ss(&f[t][2 * g]), facc[t][0]);
                facc[t][NA - 1] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_broadcast_ss(&f[t][2 * g + 1]), facc[t][NA - 1]);
            }
        }
    }
    for (int t = 0; t < T; ++t) {
        __m256 s = facc[t][0];
        if (NA > 1) s = _mm256_add_ps(s, facc[t][NA - 1]);
        y[t * ys] = hsum256(s);
    }
}

// Two rows side by side (prompt batches): q45k_tile_avx2's operations for each (row, token), in the
// same order, so the same bits; each activation chunk is loaded once for both rows.
template <int T, bool Five>
inline void q45k_tile2_avx2(const uint8_t* row0, size_t wrb, int64_t nb, bool conv, const uint8_t* act, size_t arb,
                            float* y, int64_t ys) {
    constexpr int bytes = Five ? 176 : 144;
    __m256 facc[2][T];
    for (int r = 0; r < 2; ++r)
        for (int t = 0; t < T; ++t) facc[r][t] = _mm256_setzero_ps();
    alignas(32) float f[2][T][8];
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x[2] = {row0 + (size_t)b * bytes, row0 + wrb + (size_t)b * bytes};
        for (int r = 0; r < 2; ++r) {
            __m256 D, M;
            q45k_scales(x[r], conv, &D, &M);
            for (int t = 0; t < T; ++t) {
                const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
                const __m256 da = q82_scales8(a);
                _mm256_store_ps(f[r][t], _mm256_mul_ps(da, D));
                facc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(da, M), q82_sums8(a), facc[r][t]);
            }
        }
        for (int g = 0; g < 4; ++g) {
            __m256i c[2][2];
            for (int r = 0; r < 2; ++r) {
                const __m256i q = ld256((Five ? x[r] + 48 : x[r] + 16) + 32 * g);
                c[r][0] = nib_lo(q);
                c[r][1] = nib_hi(q);
                if (Five) {
                    const __m256i hb = ld256(x[r] + 16);
                    c[r][0] = _mm256_or_si256(c[r][0], _mm256_slli_epi16(bit_of(hb, 2 * g), 4));
                    c[r][1] = _mm256_or_si256(c[r][1], _mm256_slli_epi16(bit_of(hb, 2 * g + 1), 4));
                }
            }
            for (int t = 0; t < T; ++t) {
                const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
                const __m256i a0 = ld256(q82_chunk(a, 2 * g)), a1 = ld256(q82_chunk(a, 2 * g + 1));
                for (int r = 0; r < 2; ++r) {
                    const __m256i p0 = udot4(c[r][0], a0);
                    const __m256i p1 = udot4(c[r][1], a1);
                    facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_broadcast_ss(&f[r][t][2 * g]), facc[r][t]);
                    facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_broadcast_ss(&f[r][t][2 * g + 1]), facc[r][t]);
                }
            }
        }
    }
    for (int r = 0; r < 2; ++r)
        for (int t = 0; t < T; ++t) y[t * ys + r] = hsum256(facc[r][t]);
}

template <int T>
inline void q6k_tile_avx2(const uint8_t* row, int64_t nb, bool, const uint8_t* act, size_t arb, float* y, int64_t ys,
                          const Q82ActFloats* af = nullptr) {
    constexpr int NA = 1;
    __m256 facc[T][NA];
    for (int t = 0; t < T; ++t)
        for (int i = 0; i < NA; ++i) facc[t][i] = _mm256_setzero_ps();
    alignas(32) float f[T][8];
    const __m256i m30 = _mm256_set1_epi8(0x30), m32 = _mm256_set1_epi8(32);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = row + (size_t)b * 210;
        if constexpr (T <= 2) prefetch_weights<210>(x);
        const __m256 d = _mm256_set1_ps(hf(x + 208));
        const ScaleVec sv(ld128(x + 192));
        for (int t = 0; t < T; ++t)
            _mm256_store_ps(f[t], _mm256_mul_ps(af ? _mm256_load_ps(af->d[b]) : q82_scales8(act + (size_t)t * arb + (size_t)b * kQ82BlockBytes), d));
        for (int c = 0; c < 2; ++c) {
            const __m256i ql0 = ld256(x + 64 * c), ql1 = ld256(x + 64 * c + 32), qh = ld256(x + 128 + 32 * c);
            __m256i v[4];
            v[0] = _mm256_or_si256(nib_lo(ql0), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
            v[1] = _mm256_or_si256(nib_lo(ql1), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
            v[2] = _mm256_or_si256(nib_hi(ql0), _mm256_and_si256(qh, m30));
            v[3] = _mm256_or_si256(nib_hi(ql1), _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
            for (int j = 0; j < 4; ++j) {
                const int ch = 4 * c + j;
                const __m256i s = _mm256_sub_epi8(v[j], m32), u = _mm256_abs_epi8(s), sc = sv.get(ch);
                for (int t = 0; t < T; ++t) {
                    const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
                    const __m256i p =
                        _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_sign_epi8(ld256(q82_chunk(a, ch)), s)), sc);
                    facc[t][j & (NA - 1)] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(&f[t][ch]), facc[t][j & (NA - 1)]);
                }
            }
        }
    }
    for (int t = 0; t < T; ++t) {
        __m256 s = facc[t][0];
        if (NA > 1) s = _mm256_add_ps(s, facc[t][NA - 1]);
        y[t * ys] = hsum256(s);
    }
}

// ---- AVX-512 ----------------------------------------------------------------------------------------
#ifdef IKLLM_KIQK_ZMM
// Lanes 0-7: factor of chunk 2k, lanes 8-15: chunk 2k+1 (f: the 8 per-chunk factors).
inline __m512 q82_pair_factors(__m256 f, int k) {
    const __m512i idx = _mm512_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1, 2 * k + 1,
                                          2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1);
    return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(f));
}
// Codes of chunks 2k, 2k+1 of a block's activations (64 contiguous bytes).
inline __m512i q82_pair_codes(const uint8_t* a, int k) {
    return _mm512_loadu_si512((const void*)(a + 144 * (k >> 1) + 16 + 64 * (k & 1)));
}
inline float hsum512(__m512 v) { return _mm512_reduce_add_ps(v); }

// af: the single-token path's precomputed activation floats (T == 1), else null. Either way the
// same float operations in the same order: the same bits.
template <int T, bool Five>
inline void q45k_tile_avx512(const uint8_t* row, int64_t nb, bool conv, const uint8_t* act, size_t arb, float* y,
                             int64_t ys, const Q82ActFloats* af = nullptr) {
    constexpr int bytes = Five ? 176 : 144;
    constexpr int NA = 1;  // independent accumulators (latency of a single token)
    __m512 facc[T][NA];
    __m256 macc[T];
    for (int t = 0; t < T; ++t) {
        for (int i = 0; i < NA; ++i) facc[t][i] = _mm512_setzero_ps();
        macc[t] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = row + (size_t)b * bytes;
        if constexpr (T <= 2) prefetch_weights<bytes>(x);
        __m256 D, M;
        q45k_scales(x, conv, &D, &M);
        __m256 f[T];
        for (int t = 0; t < T; ++t) {
            const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
            const __m256 da = af ? _mm256_load_ps(af->d[b]) : q82_scales8(a);
            f[t] = _mm256_mul_ps(da, D);
            macc[t] = _mm256_fmadd_ps(_mm256_mul_ps(da, M), af ? _mm256_load_ps(af->s[b]) : q82_sums8(a), macc[t]);
        }
        const uint8_t* qs = Five ? x + 48 : x + 16;
        const __m512i hb2 = Five ? zbcast256(x + 16) : _mm512_setzero_si512();
        for (int g = 0; g < 4; ++g) {
            __m512i q = zp4k(qs + 32 * g);
            if (Five) q = _mm512_mask_add_epi8(q, zhb(hb2, 2 * g), q, zset1(16));
            for (int t = 0; t < T; ++t) {
                const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
                const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, q82_pair_codes(a, g));
                __m512& acc = facc[t][g & (NA - 1)];
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), q82_pair_factors(f[t], g), acc);
            }
        }
    }
    for (int t = 0; t < T; ++t) {
        __m512 s = facc[t][0];
        if (NA > 1) s = _mm512_add_ps(s, facc[t][NA - 1]);
        y[t * ys] = hsum512(s) + hsum256(macc[t]);
    }
}

// Signed levels q - 32 of a Q6_K block's chunks 4c..4c+3 (c = 0, 1): v[0] chunks 4c, 4c+1 (low
// nibbles), v[1] chunks 4c+2, 4c+3 (high nibbles), 64 bytes each.
inline void q6k_levels512(const uint8_t* x, int c, __m512i v[2]) {
    const __m512i m15 = zset1(15), m30 = zset1(0x30), m32 = zset1(32);
    const __m512i ql = _mm512_loadu_si512((const void*)(x + 64 * c));
    const __m512i qh = zbcast256(x + 128 + 32 * c);
    const __m512i h01 = _mm512_and_si512(_mm512_sllv_epi16(qh, zshift2(4, 2)), m30);
    const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(qh, zshift2(0, 2)), m30);
    v[0] = _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(ql, m15), h01), m32);
    v[1] = _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m15), h23), m32);
}

// Exact sum_{s} sc_s * sum (q - 32) a over chunks 2k, 2k+1 (16 int32 lanes): u = |q - 32|, neg the
// lanes where q - 32 < 0 (the sign moves to the activation codes ac), sc the chunks' scales.
inline __m512i q6k_pair_dot(__m512i u, __mmask64 neg, __m512i sc, __m512i ac) {
    return _mm512_dpwssd_epi32(_mm512_setzero_si512(),
                               _mm512_maddubs_epi16(u, _mm512_mask_sub_epi8(ac, neg, _mm512_setzero_si512(), ac)), sc);
}

template <int T>
inline void q6k_tile_avx512(const uint8_t* row, int64_t nb, bool, const uint8_t* act, size_t arb, float* y,
                            int64_t ys, const Q82ActFloats* af = nullptr) {
    constexpr int NA = 1;
    __m512 facc[T][NA];
    for (int t = 0; t < T; ++t)
        for (int i = 0; i < NA; ++i) facc[t][i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = row + (size_t)b * 210;
        if constexpr (T <= 2) prefetch_weights<210>(x);
        const __m256 d = _mm256_set1_ps(hf(x + 208));
        const __m256i sc16 = _mm256_cvtepi8_epi16(ld128(x + 192));
        __m256 f[T];
        for (int t = 0; t < T; ++t)
            f[t] = _mm256_mul_ps(af ? _mm256_load_ps(af->d[b]) : q82_scales8(act + (size_t)t * arb + (size_t)b * kQ82BlockBytes), d);
        for (int c = 0; c < 2; ++c) {
            __m512i v[2];
            q6k_levels512(x, c, v);
            for (int h = 0; h < 2; ++h) {
                const int k = 2 * c + h;
                const __m512i u = _mm512_abs_epi8(v[h]), sc = zscale(sc16, k);
                const __mmask64 neg = _mm512_movepi8_mask(v[h]);
                for (int t = 0; t < T; ++t) {
                    const uint8_t* a = act + (size_t)t * arb + (size_t)b * kQ82BlockBytes;
                    const __m512i p = q6k_pair_dot(u, neg, sc, q82_pair_codes(a, k));
                    __m512& acc = facc[t][h & (NA - 1)];
                    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), q82_pair_factors(f[t], k), acc);
                }
            }
        }
    }
    for (int t = 0; t < T; ++t) {
        __m512 s = facc[t][0];
        if (NA > 1) s = _mm512_add_ps(s, facc[t][NA - 1]);
        y[t * ys] = hsum512(s);
    }
}
#endif

#ifndef Q45K_ROWS2_T
#define Q45K_ROWS2_T 4
#endif
// ---- driver: token blocks x weight rows x tiles of T tokens --------------------------------------
// Tile(T) is a callable template: Tile::template run<T>(row, nb, conv, act, arb, y, ys).
template <class Tile, int TMax>
void q82_matmul(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    const int64_t nb = ne0 / 256;
    const int64_t tb = token_block(act_row_bytes);
    const bool conv = Tile::conv && nt >= kConvMinTokens;
    for (int64_t t0 = 0; t0 < nt; t0 += tb) {
        const int64_t tn = nt - t0 < tb ? nt - t0 : tb;
        int64_t r = r0;
        if constexpr (Tile::kRows2 > 0)  // pairs of rows, tiles of kRows2 tokens, then the tiles below
            for (; r + 2 <= r1; r += 2) {
                const uint8_t* row = w + (size_t)r * w_row_bytes;
                int64_t t = 0;
                for (; t + Tile::kRows2 <= tn; t += Tile::kRows2)
                    Tile::template run2<Tile::kRows2>(row, w_row_bytes, nb, conv, act + (size_t)(t0 + t) * act_row_bytes,
                                                      act_row_bytes, y + (t0 + t) * y_stride + r, y_stride);
                if (Tile::kRows2 > 2 && t + 2 <= tn) {
                    Tile::template run2<2>(row, w_row_bytes, nb, conv, act + (size_t)(t0 + t) * act_row_bytes, act_row_bytes,
                                           y + (t0 + t) * y_stride + r, y_stride);
                    t += 2;
                }
                for (; t < tn; ++t)
                    Tile::template run2<1>(row, w_row_bytes, nb, conv, act + (size_t)(t0 + t) * act_row_bytes, act_row_bytes,
                                           y + (t0 + t) * y_stride + r, y_stride);
            }
        for (; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * w_row_bytes;
            int64_t t = 0;
            auto at = [&](int64_t tt) { return act + (size_t)(t0 + tt) * act_row_bytes; };
            for (; t + TMax <= tn; t += TMax) Tile::template run<TMax>(row, nb, conv, at(t), act_row_bytes, y + (t0 + t) * y_stride + r, y_stride);
            if constexpr (TMax > 4) {
                if (t + 4 <= tn) {
                    Tile::template run<4>(row, nb, conv, at(t), act_row_bytes, y + (t0 + t) * y_stride + r, y_stride);
                    t += 4;
                }
            }
            if (t + 2 <= tn) {
                Tile::template run<2>(row, nb, conv, at(t), act_row_bytes, y + (t0 + t) * y_stride + r, y_stride);
                t += 2;
            }
            if (t < tn) Tile::template run<1>(row, nb, conv, at(t), act_row_bytes, y + (t0 + t) * y_stride + r, y_stride);
        }
    }
}

template <bool Five>
struct Q45KAvx2 {
    static constexpr bool conv = true;
    static constexpr int kRows2 = Q45K_ROWS2_T;  // tokens per two-row tile (0: one row at a time)
    template <int T>
    static void run(const uint8_t* row, int64_t nb, bool cv, const uint8_t* a, size_t arb, float* y, int64_t ys) {
        q45k_tile_avx2<T, Five>(row, nb, cv, a, arb, y, ys);
    }
    template <int T>
    static void run2(const uint8_t* row, size_t wrb, int64_t nb, bool cv, const uint8_t* a, size_t arb, float* y, int64_t ys) {
        q45k_tile2_avx2<T, Five>(row, wrb, nb, cv, a, arb, y, ys);
    }
    static void run1(const uint8_t* row, int64_t nb, const uint8_t* a, const Q82ActFloats* af, float* y) {
        q45k_tile_avx2<1, Five>(row, nb, false, a, 0, y, 1, af);
    }
};
struct Q6KAvx2 {
    static constexpr bool conv = false;
    static constexpr int kRows2 = 0;
    template <int T>
    static void run(const uint8_t* row, int64_t nb, bool cv, const uint8_t* a, size_t arb, float* y, int64_t ys) {
        q6k_tile_avx2<T>(row, nb, cv, a, arb, y, ys);
    }
    static void run1(const uint8_t* row, int64_t nb, const uint8_t* a, const Q82ActFloats* af, float* y) {
        q6k_tile_avx2<1>(row, nb, false, a, 0, y, 1, af);
    }
};

// One token (q82_rows1_fits), rows r0..r1 of w into y[r]: the one-token tile with the activation
// floats of the call (Tile: one of the Q45K / Q6K tile structs, AVX2 or AVX-512). Two or four rows side by side were
// faster from cache and slower from memory (two weight streams per core; docs/cpu-speed.md).
inline bool q82_rows1_fits(int64_t nt, int64_t ne0) { return nt == 1 && ne0 / 256 <= kMatvecMaxBlocks; }
template <class Tile>
inline void q82_rows1(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, float* y) {
    Q82ActFloats af;
    q82_act_floats(act, ne0 / 256, af);
    for (int64_t r = r0; r < r1; ++r) Tile::run1(w + (size_t)r * wrb, ne0 / 256, act, &af, y + r);
}
// One token through q82_rows1, else the tiles.
template <class Tile, int TMax>
void q82_matmul_or_rows1(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                         int64_t nt, float* y, int64_t ys) {
    if (q82_rows1_fits(nt, ne0)) return q82_rows1<Tile>(w, wrb, ne0, r0, r1, act, y);
    q82_matmul<Tile, TMax>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

#ifdef IKLLM_KIQK_ZMM
template <bool Five>
struct Q45KAvx512 {
    static constexpr bool conv = true;
    static constexpr int kRows2 = 0;
    template <int T>
    static void run(const uint8_t* row, int64_t nb, bool cv, const uint8_t* a, size_t arb, float* y, int64_t ys) {
        q45k_tile_avx512<T, Five>(row, nb, cv, a, arb, y, ys);
    }
    static void run1(const uint8_t* row, int64_t nb, const uint8_t* a, const Q82ActFloats* af, float* y) {
        q45k_tile_avx512<1, Five>(row, nb, false, a, 0, y, 1, af);
    }
};
struct Q6KAvx512 {
    static constexpr bool conv = false;
    static constexpr int kRows2 = 0;
    template <int T>
    static void run(const uint8_t* row, int64_t nb, bool cv, const uint8_t* a, size_t arb, float* y, int64_t ys) {
        q6k_tile_avx512<T>(row, nb, cv, a, arb, y, ys);
    }
    static void run1(const uint8_t* row, int64_t nb, const uint8_t* a, const Q82ActFloats* af, float* y) {
        q6k_tile_avx512<1>(row, nb, false, a, 0, y, 1, af);
    }
};
#endif

}  // namespace
}  // namespace ikllm::cpu
