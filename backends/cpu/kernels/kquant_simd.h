// SIMD matmul kernels of the K-quant and ik K/KS types against Q8_K activations (included by
// kquant_avx2.cpp, iqk_avx2.cpp, kquant_avx512.cpp, iqk_avx512.cpp; compiled with each file's
// ISA flags). Q4_K/Q5_K/Q6_K take Q8_2_X4 activations and live in kquant_q82.h.
//
// Numerics are those of kquant_unpack.h (the scalar kernels): weights become 256 small
// integers v with a 16-bit scale per 16 weights plus a correction against the Q8_K block sums.
// Each weight type has an unpacker that emits the block as eight 32-weight chunks in AVX2
// registers (u = unsigned operand: |v|, or v for the unsigned types - including the sat types'
// level + 128, whose maddubs saturation is the reference's; s = v for the sign; sc = per-16
// scales as int16 lanes) and a "tile" consumes them against T tokens at once:
//   AVX2:    sumi += madd(maddubs(u, sign(a, s)), sc)
//   AVX-512: pairs of chunks joined into 512-bit vectors; a is negated under the sign mask of
//            v, then maddubs + vpdpwssd.
// A weight block is thus decoded once per tile of T tokens (T = 4 / 8) and stays in registers.
// Batches of kConvMinTokens tokens or more of the conv types take conv_matmul instead: rows are
// re-encoded to 8-bit codes (the same unpackers feed a ConvSink) and multiplied exactly.
// Every type of both families has a SIMD unpacker here; kquant_simd512.h adds native 512-bit
// ones for the most used types.
#pragma once
#include <immintrin.h>
#include <algorithm>
#include <vector>
#include "kernels/kquant_unpack.h"
#include "kernels/prefetch.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define IKLLM_KIQK_AVX512 1
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics seed results with _mm*_undefined_*(), which -Wmaybe-uninitialized
// reports at every widening cast / lane insert; the warning is a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <cstring>

#include "kernels/conv_panel_avx512.h"
#endif

namespace ikllm::cpu {
namespace {

inline __m256i ld256(const void* p) { return _mm256_loadu_si256((const __m256i*)p); }
inline __m128i ld128(const void* p) { return _mm_loadu_si128((const __m128i*)p); }
// fp16 -> float with F16C (exact, same as f16_to_f32).
inline float hf(const uint8_t* p) { return _cvtsh_ss(rd_u16(p)); }
inline __m256i bcast16(const int8_t* table) { return _mm256_broadcastsi128_si256(ld128(table)); }

// int16 lanes: acc + pairwise products of p and sc.
inline __m256i madd_acc(__m256i acc, __m256i p, __m256i sc) {
#ifdef IKLLM_KIQK_AVX512
    return _mm256_dpwssd_epi32(acc, p, sc);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
#endif
}

inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Per-16 scales (16 int8) -> int16 lane vector of 32-weight chunk c: low 128-bit lane holds
// scale 2c eight times, high lane scale 2c+1.
struct ScaleVec {
    __m256i lo, hi;
    explicit ScaleVec(__m128i sc8) {
        const __m256i s = _mm256_cvtepi8_epi16(sc8);
        lo = _mm256_permute2x128_si256(s, s, 0x00);
        hi = _mm256_permute2x128_si256(s, s, 0x11);
    }
    __m256i get(int c) const {
        alignas(32) static const int8_t masks[4][32] = {
            {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
            {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7},
            {8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11},
            {12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13,
             14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15},
        };
        return _mm256_shuffle_epi8(c < 4 ? lo : hi, _mm256_load_si256((const __m256i*)masks[c & 3]));
    }
};

// Duplicate 8 per-32 scale bytes into 16 per-16 bytes.
inline __m128i dup8(uint64_t b8) {
    const __m128i x = _mm_cvtsi64_si128((long long)b8);
    return _mm_unpacklo_epi8(x, x);
}

// corr lane s = (bit s of extra) ? shift * sc_s : 0.
inline __m256i extra_corr(uint16_t extra, __m128i sc8, int shift) {
    const __m256i bits = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                                           (short)0x8000);
    const __m256i m = _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16((short)extra), bits), bits);
    return _mm256_and_si256(m, _mm256_mullo_epi16(_mm256_cvtepi8_epi16(sc8), _mm256_set1_epi16((short)shift)));
}

// IQ4_KS / IQ5_KS: 8 scale bytes (bit 0 = value set) -> per-16 scales and set correction.
inline void ks_scale_vectors(const uint8_t* b, int shift, __m128i* sc8, __m256i* corr) {
    const __m128i x = dup8(rd_u32(b) | (uint64_t)rd_u32(b + 4) << 32);
    *sc8 = _mm_sub_epi8(_mm_and_si128(x, _mm_set1_epi8((char)0xFE)), _mm_set1_epi8(127));
    const __m128i e = _mm_cmpeq_epi8(_mm_and_si128(x, _mm_set1_epi8(1)), _mm_set1_epi8(1));
    *corr = _mm256_and_si256(_mm256_cvtepi8_epi16(e), _mm256_mullo_epi16(_mm256_cvtepi8_epi16(*sc8),
                                                                        _mm256_set1_epi16((short)shift)));
}

inline __m256i nib_lo(__m256i q) { return _mm256_and_si256(q, _mm256_set1_epi8(15)); }
inline __m256i nib_hi(__m256i q) { return _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(15)); }
// Bit c of every byte, as 0/1.
inline __m256i bit_of(__m256i h, int c) { return _mm256_and_si256(_mm256_srli_epi16(h, c), _mm256_set1_epi8(1)); }

// Sat types (kquant_unpack.h): signed levels -> unsigned bytes level + 128, and the matching
// correction corr - 128 * sc (sc8: the 16 per-16 scales).
inline __m256i sat_bytes(__m256i v) { return _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)); }
inline __m256i sat_corr(__m256i corr, __m128i sc8) {
    return _mm256_sub_epi16(corr, _mm256_slli_epi16(_mm256_cvtepi8_epi16(sc8), 7));
}

// ---------------------------------------------------------------------------------------------
// Unpackers: U::unpack(block, rowd, sink) calls sink.pair(k, ...) for k = 0..3 (chunks 2k, 2k+1)
// and then sink.end(dw, dc, corr) or sink.end(dw).

// P4N codes (NL4 per 32 weights) through a 16-entry table: chunks 2k, 2k+1 from 32 bytes, as
// sat bytes (every user is a sat type).
template <class S>
inline void p4n_pairs(const uint8_t* qs, __m256i table, const ScaleVec& sv, S& s) {
    for (int k = 0; k < 4; ++k) {
        const __m256i q = ld256(qs + 32 * k);
        const __m256i lo = _mm256_shuffle_epi8(table, nib_lo(q)), hi = _mm256_shuffle_epi8(table, nib_hi(q));
        const __m256i v0 = sat_bytes(_mm256_permute2x128_si256(lo, hi, 0x20));
        const __m256i v1 = sat_bytes(_mm256_permute2x128_si256(lo, hi, 0x31));
        s.pair(k, v0, v0, sv.get(2 * k), v1, v1, sv.get(2 * k + 1));
    }
}

struct SIq4Xs : KIq4Xs {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const uint64_t sc = _pdep_u64(rd_u32(b + 4), 0x0f0f0f0f0f0f0f0full) |
                            _pdep_u64(rd_u16(b + 2), 0x3030303030303030ull);
        const __m128i sc8 = _mm_sub_epi8(dup8(sc), _mm_set1_epi8(32));
        const ScaleVec sv(sc8);
        p4n_pairs(b + 8, bcast16(tabs::kIq4nl), sv, s);
        s.end(hf(b), hf(b), sat_corr(_mm256_setzero_si256(), sc8));
    }
};

// IQ4_K / IQ5_K scales: 16 six-bit scales from scales_h (4 bytes @4) and scales_l (8 bytes @8).
inline __m128i k6_scales(const uint8_t* b) {
    const uint32_t sh = rd_u32(b + 4);
    const uint32_t sl0 = rd_u32(b + 8), sl1 = rd_u32(b + 12);
    const uint64_t lo = _pdep_u64(sl0, 0x0f0f0f0f0f0f0f0full) | _pdep_u64(sh & 0xffff, 0x3030303030303030ull);
    const uint64_t hi = _pdep_u64(sl1, 0x0f0f0f0f0f0f0f0full) | _pdep_u64(sh >> 16, 0x3030303030303030ull);
    return _mm_sub_epi8(_mm_set_epi64x((long long)hi, (long long)lo), _mm_set1_epi8(32));
}

struct SIq4K : KIq4K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i sc8 = k6_scales(b);
        const ScaleVec sv(sc8);
        p4n_pairs(b + 16, bcast16(tabs::kIq4k), sv, s);
        s.end(hf(b), hf(b), sat_corr(extra_corr(rd_u16(b + 2), sc8, 4), sc8));
    }
};

struct SIq4Ks : KIq4Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        __m256i corr;
        ks_scale_vectors(b, 4, &sc8, &corr);
        const ScaleVec sv(sc8);
        p4n_pairs(b + 8, bcast16(tabs::kIq4k), sv, s);
        s.end(rowd, rowd, sat_corr(corr, sc8));
    }
};

// 5-bit codes (P4K low nibbles + HB 5th bit) through a 32-entry table, as sat bytes.
template <class S>
inline void p4k5_pairs(const uint8_t* qs, const uint8_t* qh, const int8_t* table32, const ScaleVec& sv, S& s) {
    const __m256i hb = ld256(qh);
#if defined(__AVX512VBMI__) && defined(__AVX512VL__)
    const __m256i tab = ld256(table32);
    auto look = [&](__m256i q4, int c) {
        return _mm256_permutexvar_epi8(_mm256_or_si256(q4, _mm256_slli_epi16(bit_of(hb, c), 4)), tab);
    };
#else
    const __m256i tlo = bcast16(table32), thi = bcast16(table32 + 16);
    auto look = [&](__m256i q4, int c) {
        const __m256i m = _mm256_cmpeq_epi8(bit_of(hb, c), _mm256_set1_epi8(1));
        return _mm256_blendv_epi8(_mm256_shuffle_epi8(tlo, q4), _mm256_shuffle_epi8(thi, q4), m);
    };
#endif
    for (int g = 0; g < 4; ++g) {
        const __m256i q = ld256(qs + 32 * g);
        const __m256i v0 = sat_bytes(look(nib_lo(q), 2 * g)), v1 = sat_bytes(look(nib_hi(q), 2 * g + 1));
        s.pair(g, v0, v0, sv.get(2 * g), v1, v1, sv.get(2 * g + 1));
    }
}

struct SIq5K : KIq5K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i sc8 = k6_scales(b);
        const ScaleVec sv(sc8);
        p4k5_pairs(b + 16, b + 144, tabs::kIq5nl, sv, s);
        s.end(hf(b), hf(b), sat_corr(extra_corr(rd_u16(b + 2), sc8, 2), sc8));
    }
};

struct SIq5Ks : KIq5Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        __m256i corr;
        ks_scale_vectors(b, 2, &sc8, &corr);
        const ScaleVec sv(sc8);
        p4k5_pairs(b + 8, b + 136, tabs::kIq5nl, sv, s);
        s.end(rowd, rowd, sat_corr(corr, sc8));
    }
};

struct SIq6K : KIq6K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i sc8 = ld128(b + 4);
        const ScaleVec sv(sc8);
        const __m256i three = _mm256_set1_epi8(3);
#if defined(__AVX512VBMI__) && defined(__AVX512VL__)
        const __m256i t0 = ld256(tabs::kIq6nl), t1 = ld256(tabs::kIq6nl + 32);
        auto look = [&](__m256i idx) { return _mm256_permutex2var_epi8(t0, idx, t1); };
#else
        const __m256i t0 = bcast16(tabs::kIq6nl), t1 = bcast16(tabs::kIq6nl + 16), t2 = bcast16(tabs::kIq6nl + 32),
                      t3 = bcast16(tabs::kIq6nl + 48);
        auto look = [&](__m256i idx) {
            const __m256i b4 = _mm256_slli_epi16(idx, 3), b5 = _mm256_slli_epi16(idx, 2);
            const __m256i r01 = _mm256_blendv_epi8(_mm256_shuffle_epi8(t0, idx), _mm256_shuffle_epi8(t1, idx), b4);
            const __m256i r23 = _mm256_blendv_epi8(_mm256_shuffle_epi8(t2, idx), _mm256_shuffle_epi8(t3, idx), b4);
            return _mm256_blendv_epi8(r01, r23, b5);
        };
#endif
        for (int g = 0; g < 4; ++g) {
            const __m256i q = ld256(b + 20 + 32 * g);
            const __m256i qh = ld256(b + 148 + 32 * (g >> 1));
            const int sh = 4 * (g & 1);
            const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, sh), three);
            const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(qh, sh + 2), three);
            const __m256i v0 = sat_bytes(look(_mm256_or_si256(nib_lo(q), _mm256_slli_epi16(h0, 4))));
            const __m256i v1 = sat_bytes(look(_mm256_or_si256(nib_hi(q), _mm256_slli_epi16(h1, 4))));
            s.pair(g, v0, v0, sv.get(2 * g), v1, v1, sv.get(2 * g + 1));
        }
        s.end(hf(b), hf(b), sat_corr(extra_corr(rd_u16(b + 2), sc8, 1), sc8));
    }
};

struct SIq2K : KIq2K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const uint64_t lo = _pdep_u64(rd_u32(b + 4), 0x0f0f0f0f0f0f0f0full);
        const uint64_t hi = _pdep_u64(rd_u32(b + 8), 0x0f0f0f0f0f0f0f0full);
        const __m128i sc8 = _mm_sub_epi8(_mm_set_epi64x((long long)hi, (long long)lo), _mm_set1_epi8(8));
        const ScaleVec sv(sc8);
        const __m256i tab = _mm256_broadcastsi128_si256(_mm_cvtsi32_si128((int)rd_u32((const uint8_t*)tabs::kIq2nl)));
        const __m256i three = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; ++h) {
            const __m256i q = ld256(b + 12 + 32 * h);
            __m256i v[4];
            for (int j = 0; j < 4; ++j)
                v[j] = _mm256_shuffle_epi8(tab, _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three));
            s.pair(2 * h, _mm256_abs_epi8(v[0]), v[0], sv.get(4 * h), _mm256_abs_epi8(v[1]), v[1], sv.get(4 * h + 1));
            s.pair(2 * h + 1, _mm256_abs_epi8(v[2]), v[2], sv.get(4 * h + 2), _mm256_abs_epi8(v[3]), v[3],
                   sv.get(4 * h + 3));
        }
        s.end(hf(b), hf(b), extra_corr(rd_u16(b + 2), sc8, 5));
    }
};

struct SIq3K : KIq3K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const uint64_t lo = _pdep_u64(rd_u32(b + 6), 0x0f0f0f0f0f0f0f0full);
        const uint64_t hi = _pdep_u64(rd_u32(b + 10), 0x0f0f0f0f0f0f0f0full);
        const __m128i n = _mm_set_epi64x((long long)hi, (long long)lo);
        const __m128i mag = _mm_add_epi8(_mm_add_epi8(n, n), _mm_set1_epi8(1));
        const uint16_t sh = rd_u16(b + 4);
        const __m128i sbits = _mm_set_epi64x((long long)_pdep_u64(sh >> 8, 0x0101010101010101ull),
                                             (long long)_pdep_u64(sh & 0xff, 0x0101010101010101ull));
        const __m128i neg = _mm_cmpeq_epi8(sbits, _mm_set1_epi8(1));
        const __m128i sc8 = _mm_sub_epi8(_mm_xor_si128(mag, neg), neg);
        const ScaleVec sv(sc8);
        const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i*)tabs::kIq3nl));
        const __m256i three = _mm256_set1_epi8(3);
        const __m256i hb = ld256(b + 78);
        for (int h = 0; h < 2; ++h) {
            const __m256i q = ld256(b + 14 + 32 * h);
            __m256i v[4];
            for (int j = 0; j < 4; ++j) {
                const __m256i idx = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three),
                                                    _mm256_slli_epi16(bit_of(hb, 4 * h + j), 2));
                v[j] = _mm256_shuffle_epi8(tab, idx);
            }
            s.pair(2 * h, _mm256_abs_epi8(v[0]), v[0], sv.get(4 * h), _mm256_abs_epi8(v[1]), v[1], sv.get(4 * h + 1));
            s.pair(2 * h + 1, _mm256_abs_epi8(v[2]), v[2], sv.get(4 * h + 2), _mm256_abs_epi8(v[3]), v[3],
                   sv.get(4 * h + 3));
        }
        s.end(hf(b), hf(b), extra_corr(rd_u16(b + 2), sc8, 4));
    }
};

// P2 codes (+ optional HB third bit) of a 256-weight block, unsigned or through a table.
template <class S>
inline void p2_pairs(const uint8_t* q64, const uint8_t* hb32, const __m256i* table, const ScaleVec& sv, S& s) {
    const __m256i three = _mm256_set1_epi8(3);
    const __m256i hb = hb32 ? ld256(hb32) : _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
        const __m256i q = ld256(q64 + 32 * h);
        __m256i v[4];
        for (int j = 0; j < 4; ++j) {
            v[j] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three);
            if (hb32) v[j] = _mm256_or_si256(v[j], _mm256_slli_epi16(bit_of(hb, 4 * h + j), 2));
            if (table) v[j] = _mm256_shuffle_epi8(*table, v[j]);
        }
        for (int k = 0; k < 2; ++k) {
            const __m256i a = v[2 * k], c = v[2 * k + 1];
            if (table)
                s.pair(2 * h + k, _mm256_abs_epi8(a), a, sv.get(4 * h + 2 * k), _mm256_abs_epi8(c), c,
                       sv.get(4 * h + 2 * k + 1));
            else
                s.pair(2 * h + k, a, a, sv.get(4 * h + 2 * k), c, c, sv.get(4 * h + 2 * k + 1));
        }
    }
}

struct SQ2K : KQ2K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i x = ld128(b);
        const __m128i m15 = _mm_set1_epi8(15);
        const ScaleVec sv(_mm_and_si128(x, m15));
        const __m256i corr = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(x, 4), m15));
        p2_pairs(b + 16, nullptr, nullptr, sv, s);
        s.end(hf(b + 80), -hf(b + 82), corr);
    }
};

struct SQ3K : KQ3K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        uint64_t l8;
        std::memcpy(&l8, b + 96, 8);
        const uint32_t h = rd_u32(b + 104);
        const uint64_t lo = (l8 & 0x0f0f0f0f0f0f0f0full) |
                            ((uint64_t)(h & 0x03030303u) | (uint64_t)((h >> 2) & 0x03030303u) << 32) << 4;
        const uint64_t hi = ((l8 >> 4) & 0x0f0f0f0f0f0f0f0full) |
                            ((uint64_t)((h >> 4) & 0x03030303u) | (uint64_t)((h >> 6) & 0x03030303u) << 32) << 4;
        const __m128i sc8 = _mm_sub_epi8(_mm_set_epi64x((long long)hi, (long long)lo), _mm_set1_epi8(32));
        const ScaleVec sv(sc8);
        // codes q + 4 in 0..7 (the third bit is the HB plane); the -4 goes into the correction
        const __m256i corr = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(sc8), _mm256_set1_epi16(-4));
        p2_pairs(b + 32, b, nullptr, sv, s);
        const float d = hf(b + 108);
        s.end(d, d, corr);
    }
};

// Per-32 scales (8 bytes) and value-set bits (8 bits) -> per-16 scale bytes and set correction.
// Scale bytes are stored with a bias (subtracted per byte here).
inline __m256i set_corr32(uint64_t biased, int bias, unsigned sets, int shift, __m128i* sc8) {
    *sc8 = _mm_sub_epi8(dup8(biased), _mm_set1_epi8((char)bias));
    const __m128i e = _mm_cmpeq_epi8(dup8(_pdep_u64(sets, 0x0101010101010101ull)), _mm_set1_epi8(1));
    return _mm256_and_si256(_mm256_cvtepi8_epi16(e),
                            _mm256_mullo_epi16(_mm256_cvtepi8_epi16(*sc8), _mm256_set1_epi16((short)shift)));
}

// Block scales of the KS types (and IQ2_KL): the 16 per-16 scales, and the value-set correction.
inline __m256i iq2ks_scales(const uint8_t* b, __m128i* sc8) {
    const uint16_t extra = rd_u16(b);
    const uint64_t ls = _pdep_u64(rd_u32(b + 2), 0x0f0f0f0f0f0f0f0full) | _pdep_u64(extra >> 8, 0x1010101010101010ull);
    return set_corr32(ls, 16, extra & 0xff, 5, sc8);
}
inline uint64_t nib8_of(uint32_t sl) {  // 8 nibbles: low nibbles of the 4 bytes, then their high nibbles
    return (uint64_t)(sl & 0x0f0f0f0fu) | (uint64_t)((sl >> 4) & 0x0f0f0f0fu) << 32;
}
inline __m256i iq3ks_scales(const uint8_t* b, __m128i* sc8) {
    const uint16_t extra = rd_u16(b);
    return set_corr32(nib8_of(rd_u32(b + 2)) | _pdep_u64(extra & 0xff, 0x1010101010101010ull), 16, extra >> 8, 4, sc8);
}
inline __m128i iq2kl_scales(const uint8_t* b) {
    return _mm_sub_epi8(dup8(nib8_of(rd_u32(b + 2)) | _pdep_u64(rd_u16(b), 0x3030303030303030ull)), _mm_set1_epi8(32));
}

struct SIq2Ks : KIq2Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        const __m256i corr = iq2ks_scales(b, &sc8);
        const ScaleVec sv(sc8);
        const __m256i tab = _mm256_broadcastsi128_si256(_mm_cvtsi32_si128((int)rd_u32((const uint8_t*)tabs::kIq2nl)));
        p2_pairs(b + 6, nullptr, &tab, sv, s);
        s.end(rowd, rowd, corr);
    }
};

struct SIq3Ks : KIq3Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        const __m256i corr = iq3ks_scales(b, &sc8);
        const ScaleVec sv(sc8);
        const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i*)tabs::kIq3nl));
        p2_pairs(b + 6, b + 70, &tab, sv, s);
        s.end(rowd, rowd, corr);
    }
};

struct SIq4Kss : KIq4Kss {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        // bit 0 of the 8 words of sub-block j = scale byte j; the rest is a Gray code of the
        // sub-block's 16 NL4 bytes
        uint64_t s8 = 0;
        alignas(32) uint8_t codes[128];
        for (int k = 0; k < 4; ++k) {
            const __m256i u = ld256(b + 32 * k);
            const unsigned m = (unsigned)_mm256_movemask_epi8(_mm256_slli_epi16(u, 15));
            s8 |= (uint64_t)_pext_u32(m, 0xAAAAAAAAu) << (16 * k);
            const __m256i e = _mm256_and_si256(u, _mm256_set1_epi16((short)0xFFFE));
            _mm256_store_si256((__m256i*)(codes + 32 * k), _mm256_xor_si256(e, _mm256_srli_epi16(e, 1)));
        }
        __m128i sc8;
        __m256i corr;
        alignas(8) uint8_t sb[8];
        std::memcpy(sb, &s8, 8);
        ks_scale_vectors(sb, 4, &sc8, &corr);
        const ScaleVec sv(sc8);
        p4n_pairs(codes, bcast16(tabs::kIq4k), sv, s);
        s.end(rowd, rowd, sat_corr(corr, sc8));
    }
};

struct SIq2Kl : KIq2Kl {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        const ScaleVec sv(iq2kl_scales(b));
        // first / second weight of every codebook pair, split by the code's 5th bit
        alignas(16) int8_t t1[32], t2[32];
        for (int k = 0; k < 32; ++k) {
            t1[k] = (int8_t)(tabs::kIq2kl[k] & 255);
            t2[k] = (int8_t)(tabs::kIq2kl[k] >> 8);
        }
        const __m128i a_lo = ld128(t1), a_hi = ld128(t1 + 16), b_lo = ld128(t2), b_hi = ld128(t2 + 16);
        const __m128i qh = ld128(b + 70), m15 = _mm_set1_epi8(15), one = _mm_set1_epi8(1);
        __m256i v[8];
        for (int k = 0; k < 8; ++k) {
            const __m128i q = ld128(b + 6 + 16 * (k >> 1));
            const __m128i c = _mm_and_si128((k & 1) ? _mm_srli_epi16(q, 4) : q, m15);
            const __m128i hm = _mm_cmpeq_epi8(_mm_and_si128(_mm_srli_epi16(qh, k), one), one);
            const __m128i f = _mm_blendv_epi8(_mm_shuffle_epi8(a_lo, c), _mm_shuffle_epi8(a_hi, c), hm);
            const __m128i g = _mm_blendv_epi8(_mm_shuffle_epi8(b_lo, c), _mm_shuffle_epi8(b_hi, c), hm);
            v[k] = _mm256_set_m128i(_mm_unpackhi_epi8(f, g), _mm_unpacklo_epi8(f, g));
        }
        for (int k = 0; k < 4; ++k)
            s.pair(k, _mm256_abs_epi8(v[2 * k]), v[2 * k], sv.get(2 * k), _mm256_abs_epi8(v[2 * k + 1]), v[2 * k + 1],
                   sv.get(2 * k + 1));
        s.end(rowd);
    }
};

// ---------------------------------------------------------------------------------------------
// Tiles: T tokens against one weight block at a time.

struct TileBase {
    const uint8_t* a0;  // activation block of token 0 of the tile
    size_t astride;     // bytes between tokens
    const uint8_t* at(int t) const { return a0 + (size_t)t * astride; }
};

template <int T, bool Uns>
struct Avx2Tile : TileBase {
    __m256i sumi[T];
    __m256 facc[T];
    void reset() {
        for (int t = 0; t < T; ++t) facc[t] = _mm256_setzero_ps();
    }
    void begin(const uint8_t* a, size_t stride) {
        a0 = a;
        astride = stride;
        for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
    }
    inline void one(int c, __m256i u, __m256i s, __m256i sc) {
        for (int t = 0; t < T; ++t) {
            __m256i a = ld256(act_qs(at(t)) + 32 * c);
            if (!Uns) a = _mm256_sign_epi8(a, s);
            sumi[t] = madd_acc(sumi[t], _mm256_maddubs_epi16(u, a), sc);
        }
    }
    inline void pair(int k, __m256i u0, __m256i s0, __m256i sc0, __m256i u1, __m256i s1, __m256i sc1) {
        one(2 * k, u0, s0, sc0);
        one(2 * k + 1, u1, s1, sc1);
    }
    // dw == dc: the correction is added as integers first (exact; the sat types' +128 terms cancel).
    inline void end(float dw, float dc, __m256i corr) {
        for (int t = 0; t < T; ++t) {
            const float da = act_d(at(t));
            const __m256i ci = _mm256_madd_epi16(ld256(at(t) + quant::kQ8KOffBsums), corr);
            if (dw == dc) {
                facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(sumi[t], ci)), _mm256_set1_ps(da * dw), facc[t]);
                continue;
            }
            facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(da * dw), facc[t]);
            facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ci), _mm256_set1_ps(da * dc), facc[t]);
        }
    }
    inline void end(float dw) {
        for (int t = 0; t < T; ++t)
            facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(act_d(at(t)) * dw), facc[t]);
    }
    float result(int t) const { return hsum256(facc[t]); }
};

#ifdef IKLLM_KIQK_AVX512
template <int T, bool Uns>
struct Avx512Tile : TileBase {
    __m512i sumi[T];
    __m256 facc[T];
    void reset() {
        for (int t = 0; t < T; ++t) facc[t] = _mm256_setzero_ps();
    }
    void begin(const uint8_t* a, size_t stride) {
        a0 = a;
        astride = stride;
        for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    }
    static __m512i join(__m256i a, __m256i b) { return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1); }
    inline void pair(int k, __m256i u0, __m256i s0, __m256i sc0, __m256i u1, __m256i s1, __m256i sc1) {
        const __m512i u = join(u0, u1), sc = join(sc0, sc1);
        __mmask64 neg = 0;
        if (!Uns) neg = _mm512_movepi8_mask(join(s0, s1));
        for (int t = 0; t < T; ++t) {
            __m512i a = _mm512_loadu_si512((const void*)(act_qs(at(t)) + 64 * k));
            if (!Uns) a = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
            sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_maddubs_epi16(u, a), sc);
        }
    }
    // 64 weights (chunks 2k, 2k+1) already joined: u unsigned operand, neg = lanes where v < 0.
    inline void pair512(int k, __m512i u, __mmask64 neg, __m512i sc) {
        for (int t = 0; t < T; ++t) {
            __m512i a = _mm512_loadu_si512((const void*)(act_qs(at(t)) + 64 * k));
            if (!Uns) a = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
            sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_maddubs_epi16(u, a), sc);
        }
    }
    static __m256i fold(__m512i v) {
        return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    }
    inline void end(float dw, float dc, __m256i corr) {
        for (int t = 0; t < T; ++t) {
            const float da = act_d(at(t));
            const __m256i ci = _mm256_madd_epi16(ld256(at(t) + quant::kQ8KOffBsums), corr);
            if (dw == dc) {
                facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(fold(sumi[t]), ci)), _mm256_set1_ps(da * dw),
                                          facc[t]);
                continue;
            }
            facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold(sumi[t])), _mm256_set1_ps(da * dw), facc[t]);
            facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ci), _mm256_set1_ps(da * dc), facc[t]);
        }
    }
    inline void end(float dw) {
        for (int t = 0; t < T; ++t)
            facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold(sumi[t])), _mm256_set1_ps(act_d(at(t)) * dw), facc[t]);
    }
    float result(int t) const { return hsum256(facc[t]); }
};
#endif

// ---------------------------------------------------------------------------------------------
// Q8_K activation encoder (quant-formats.md §15), byte-identical to quant::encode_q8_k_row:
// cvtps_epi32 rounds half to even under the default MXCSR mode, as RNE8 requires.
inline void encode_q8_k_simd(const float* x, uint8_t* out, int64_t ne0) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, x += 256, out += quant::kQ8KBlockBytes) {
        __m256 mx = _mm256_setzero_ps();
        for (int i = 0; i < 32; ++i) mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + 8 * i), absmask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const __m256 vid = _mm256_set1_ps(id);
        int8_t* q = (int8_t*)(out + quant::kQ8KOffQs);
        alignas(32) int32_t part[64];
        const __m256i ones8 = _mm256_set1_epi8(1);
        const __m256i ones16 = _mm256_set1_epi16(1);
        for (int g = 0; g < 8; ++g) {
            const float* xg = x + 32 * g;
            const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg), vid));
            const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 8), vid));
            const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 16), vid));
            const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 24), vid));
            const __m256i b = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3)), perm);
            _mm256_storeu_si256((__m256i*)(q + 32 * g), b);
            // sums of 4 consecutive codes
            _mm256_store_si256((__m256i*)(part + 8 * g),
                               _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, b), ones16));
        }
        int16_t bsums[16];
        int total = 0;
        for (int s = 0; s < 16; ++s) {
            const int v = part[4 * s] + part[4 * s + 1] + part[4 * s + 2] + part[4 * s + 3];
            bsums[s] = (int16_t)v;
            total += v;
        }
        const float sum = d * (float)total;
        std::memcpy(out + quant::kQ8KOffD, &d, 4);
        std::memcpy(out + quant::kQ8KOffSum, &sum, 4);
        std::memcpy(out + quant::kQ8KOffBsums, bsums, 32);
    }
}

// This file's Q8_K activation format object (same id and bytes as the reference encoder).
inline const ActFormat* simd_act_q8_k() {
    static constexpr ActFormat f{quant::T_Q8_K, quant::q8_k_row_bytes, encode_q8_k_simd};
    return &f;
}

// ---------------------------------------------------------------------------------------------
// Conv path (kquant_unpack.h): for batches of kConvMinTokens tokens or more, each weight row is
// first re-encoded to 8-bit codes with one fp16-rounded scale per 256 weights (the reference's
// Q8_K_R8 repacking), then multiplied exactly against the Q8_K activations.

// Receives an unpacker's chunks: P = sc * v as int16 per weight, the per-16 corrections and the
// two block scales.
template <bool Uns>
struct ConvSink {
    alignas(64) int16_t P[256];
    alignas(32) int16_t cr[16];
    float dw = 0, dc = 0;
    static __m256i widen(__m128i b) { return Uns ? _mm256_cvtepu8_epi16(b) : _mm256_cvtepi8_epi16(b); }
    inline void one(int c, __m256i u, __m256i s, __m256i sc) {
        const __m256i v = Uns ? u : s;
        // bytes 0..15: sub-block 2c (scale in sc's low lane), bytes 16..31: sub-block 2c+1
        const __m256i s0 = _mm256_permute2x128_si256(sc, sc, 0x00), s1 = _mm256_permute2x128_si256(sc, sc, 0x11);
        _mm256_store_si256((__m256i*)(P + 32 * c), _mm256_mullo_epi16(widen(_mm256_castsi256_si128(v)), s0));
        _mm256_store_si256((__m256i*)(P + 32 * c + 16), _mm256_mullo_epi16(widen(_mm256_extracti128_si256(v, 1)), s1));
    }
    inline void pair(int k, __m256i u0, __m256i s0, __m256i sc0, __m256i u1, __m256i s1, __m256i sc1) {
        one(2 * k, u0, s0, sc0);
        one(2 * k + 1, u1, s1, sc1);
    }
#ifdef IKLLM_KIQK_AVX512
    // 64 weights (chunks 2k, 2k+1): u unsigned operand, neg = lanes where v < 0; sc 128-bit lane L
    // holds the scale of sub-block 4k+L.
    inline void pair512(int k, __m512i u, __mmask64 neg, __m512i sc) {
        const __m512i v = Uns ? u : _mm512_mask_sub_epi8(u, neg, _mm512_setzero_si512(), u);
        const __m512i lo = Uns ? _mm512_cvtepu8_epi16(_mm512_castsi512_si256(v)) : _mm512_cvtepi8_epi16(_mm512_castsi512_si256(v));
        const __m512i hi = Uns ? _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(v, 1))
                               : _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(v, 1));
        _mm512_storeu_si512((void*)(P + 64 * k), _mm512_mullo_epi16(lo, _mm512_shuffle_i64x2(sc, sc, 0x50)));
        _mm512_storeu_si512((void*)(P + 64 * k + 32), _mm512_mullo_epi16(hi, _mm512_shuffle_i64x2(sc, sc, 0xFA)));
    }
#endif
    inline void end(float d, float c, __m256i corr) {
        dw = d;
        dc = c;
        _mm256_store_si256((__m256i*)cr, corr);
    }
    inline void end(float d) { end(d, d, _mm256_setzero_si256()); }
};

// 8 int32 values -> RNE(v * inv) packed with saturation into bytes (|result| <= 127 here).
inline __m256i conv_pack32(__m256 a, __m256 b, __m256 c, __m256 d, __m256 inv) {
    const __m256i ab = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(a, inv)), _mm256_cvtps_epi32(_mm256_mul_ps(b, inv)));
    const __m256i cd = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(c, inv)), _mm256_cvtps_epi32(_mm256_mul_ps(d, inv)));
    return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Float re-encoding (conv_float types, kquant_unpack.h conv_block): w = dw * P + dc * corr.
inline float conv_requant_float(const int16_t* P, const int16_t* cr, float dw, float dc, float d0, int8_t* q,
                                uint8_t* aq) {
    alignas(32) float w[256];
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 mx = _mm256_setzero_ps();
    for (int s = 0; s < 16; ++s) {
        const __m256 c = _mm256_mul_ps(_mm256_set1_ps(dc), _mm256_set1_ps((float)cr[s]));
        for (int h = 0; h < 2; ++h) {
            const __m256 p = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm_load_si128((const __m128i*)(P + 16 * s + 8 * h))));
            const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(dw), p), c);  // products exact
            _mm256_store_ps(w + 16 * s + 8 * h, v);
            mx = _mm256_max_ps(mx, _mm256_and_ps(v, absmask));
        }
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float dnew = _mm_cvtss_f32(m4) * d0;
    const __m256 inv = _mm256_set1_ps(dnew > 0.0f ? 1.0f / dnew : 0.0f);
    for (int i = 0; i < 8; ++i) {
        const float* p = w + 32 * i;
        const __m256i v = conv_pack32(_mm256_load_ps(p), _mm256_load_ps(p + 8), _mm256_load_ps(p + 16), _mm256_load_ps(p + 24), inv);
        _mm256_storeu_si256((__m256i*)(q + 32 * i), v);
        _mm256_storeu_si256((__m256i*)(aq + 32 * i), _mm256_abs_epi8(v));
    }
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(dnew), _MM_FROUND_TO_NEAREST_INT)));
}

// Integer re-encoding: P + corr (int16) -> 8-bit codes q[256], |q| and the block scale
// (fp16-rounded dw * dnew).
inline float conv_requant(int16_t* P, const int16_t* cr, float dw, float d0, int8_t* q, uint8_t* aq) {
    __m256i mx = _mm256_setzero_si256();
    for (int i = 0; i < 16; ++i) {
        __m256i* p = (__m256i*)(P + 16 * i);
        const __m256i v = _mm256_add_epi16(_mm256_load_si256(p), _mm256_set1_epi16(cr[i]));
        _mm256_store_si256(p, v);
        mx = _mm256_max_epi16(mx, _mm256_abs_epi16(v));
    }
    __m128i m = _mm_max_epi16(_mm256_castsi256_si128(mx), _mm256_extracti128_si256(mx, 1));
    m = _mm_max_epi16(m, _mm_srli_si128(m, 8));
    m = _mm_max_epi16(m, _mm_srli_si128(m, 4));
    m = _mm_max_epi16(m, _mm_srli_si128(m, 2));
    const int imax = (uint16_t)_mm_extract_epi16(m, 0);  // |P| <= 32640
    float dnew = (float)imax * d0;
    if (dnew < 1.0f) {
        dnew = 1.0f;
        for (int i = 0; i < 8; ++i) {
            const __m256i a = _mm256_load_si256((const __m256i*)(P + 32 * i)), b = _mm256_load_si256((const __m256i*)(P + 32 * i + 16));
            const __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi16(a, b), 0xD8);
            _mm256_storeu_si256((__m256i*)(q + 32 * i), v);
            _mm256_storeu_si256((__m256i*)(aq + 32 * i), _mm256_abs_epi8(v));
        }
    } else {
        const __m256 inv = _mm256_set1_ps(1.0f / dnew);
        auto cv = [&](const int16_t* p) { return _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm_load_si128((const __m128i*)p))); };
        for (int i = 0; i < 8; ++i) {
            const int16_t* p = P + 32 * i;
            const __m256i v = conv_pack32(cv(p), cv(p + 8), cv(p + 16), cv(p + 24), inv);
            _mm256_storeu_si256((__m256i*)(q + 32 * i), v);
            _mm256_storeu_si256((__m256i*)(aq + 32 * i), _mm256_abs_epi8(v));
        }
    }
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(dw * dnew), _MM_FROUND_TO_NEAREST_INT)));
}

// Buffer of one re-encoded row (a local type: no std::vector, see interleaved_common.h).
struct ConvRow {
    uint8_t* mem;
    int8_t* q;    // codes
    uint8_t* aq;  // |codes|
    float* d;     // block scales
    explicit ConvRow(int64_t ne0) : mem(new uint8_t[(size_t)(2 * ne0 + (ne0 / 256) * 4 + 64)]) {
        uint8_t* p = (uint8_t*)(((uintptr_t)mem + 31) & ~(uintptr_t)31);
        q = (int8_t*)p;
        aq = p + ne0;
        d = (float*)(p + 2 * ne0);
    }
    ~ConvRow() { delete[] mem; }
    ConvRow(const ConvRow&) = delete;
    ConvRow& operator=(const ConvRow&) = delete;
};

template <class U>
inline void conv_row(const uint8_t* row, int64_t nb, ConvRow& cr) {
    const float rowd = U::row_scale(row);
    ConvSink<U::uns> sink;
    for (int64_t b = 0; b < nb; ++b) {
        U::unpack(row + U::meta + (size_t)b * U::bytes, rowd, sink);
        if constexpr (U::conv_float)
            cr.d[b] = conv_requant_float(sink.P, sink.cr, sink.dw, sink.dc, U::conv_d0, cr.q + 256 * b, cr.aq + 256 * b);
        else
            cr.d[b] = conv_requant(sink.P, sink.cr, sink.dw, U::conv_d0, cr.q + 256 * b, cr.aq + 256 * b);
    }
}

#ifndef IKLLM_KIQK_AVX512
// T tokens against a re-encoded row (AVX2): exact int dots (|q|, |a| <= 127), one scale per block.
template <int T>
inline void conv_tile(const ConvRow& cr, int64_t nb, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    __m256 facc[T];
    for (int t = 0; t < T; ++t) facc[t] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
        __m256i sumi[T];
        for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
        for (int c = 0; c < 8; ++c) {
            const __m256i q = _mm256_loadu_si256((const __m256i*)(cr.q + 256 * b + 32 * c));
            const __m256i aq = _mm256_loadu_si256((const __m256i*)(cr.aq + 256 * b + 32 * c));
            for (int t = 0; t < T; ++t) {
                const uint8_t* a = act + (size_t)t * arb + (size_t)b * quant::kQ8KBlockBytes;
                const __m256i x = _mm256_sign_epi8(ld256(act_qs(a) + 32 * c), q);
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aq, x), ones));
            }
        }
        for (int t = 0; t < T; ++t) {
            const uint8_t* a = act + (size_t)t * arb + (size_t)b * quant::kQ8KBlockBytes;
            facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(cr.d[b] * act_d(a)), facc[t]);
        }
    }
    for (int t = 0; t < T; ++t) y[t * ys] = hsum256(facc[t]);
}
#endif

#ifdef IKLLM_KIQK_AVX512
// AVX-512 conv GEMM (conv_panel_avx512.h): each panel's 16 rows re-encoded by the type's
// unpacker, stored as q + 128.
// Integer conv types: each block's products (plus the sink's per-16 corrections) re-encoded
// straight into the panel row by requant_block_512: conv_requant's integers, 512 bits wide.
template <class U>
inline void conv_row_panel(const uint8_t* row, int64_t nb, uint8_t* dst, float* d) {
    const float rowd = U::row_scale(row);
    ConvSink<U::uns> sink;
    for (int64_t b = 0; b < nb; ++b) {
        U::unpack(row + U::meta + (size_t)b * U::bytes, rowd, sink);
        __m512i P[8];
        // correction of sub-blocks 2i (low half) and 2i + 1 (high half) by one word permute
        const __m512i cr = _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(sink.cr)));
        __m512i sel = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
        for (int i = 0; i < 8; ++i, sel = _mm512_add_epi16(sel, _mm512_set1_epi16(2)))
            P[i] = _mm512_add_epi16(_mm512_loadu_si512((const void*)(sink.P + 32 * i)), _mm512_permutexvar_epi16(sel, cr));
        const float dnew = requant_block_512(P, U::conv_d0, dst + 256 * b);
        d[(size_t)b * kPanelRows] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(sink.dw * dnew), _MM_FROUND_TO_NEAREST_INT)));
    }
}

template <class U>
inline void conv_panel(const uint8_t* w, size_t w_row_bytes, int64_t r0, int rows, int64_t nb, ConvRow& cr,
                       ConvPanelRows& pr, ConvPanel& pn) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int k = 0; k < kPanelRows; ++k) {
        uint8_t* dst = pr.row(k);
        if constexpr (!U::conv_float) {
            if (k < rows) {
                conv_row_panel<U>(w + (size_t)(r0 + k) * w_row_bytes, nb, dst, pn.d.data() + k);
                continue;
            }
        }
        if (k < rows) {
            conv_row<U>(w + (size_t)(r0 + k) * w_row_bytes, nb, cr);
            for (size_t i = 0; i < pr.stride; i += 64)  // int8 q -> uint8 q + 128
                _mm512_storeu_si512((void*)(dst + i), _mm512_xor_si512(_mm512_loadu_si512((const void*)(cr.q + i)), flip));
        } else {
            pr.pad(k);
        }
        for (int64_t b = 0; b < nb; ++b) pn.d[(size_t)b * kPanelRows + k] = k < rows ? cr.d[b] : 0.0f;
    }
    pr.put(pn, nb);
}

template <class U>
void conv_matmul(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                 size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    const int64_t nb = ne0 / 256;
    ConvRow cr(ne0);
    ConvPanelRows pr(nb);
    conv_panel_gemm([&](int64_t r, int rows, ConvPanel& pn) { conv_panel<U>(w, w_row_bytes, r, rows, nb, cr, pr, pn); }, nb,
                    r0, r1, act, act_row_bytes, nt, y, y_stride);
}
#else
// AVX2 conv path: each row is re-encoded once, then multiplied against every token.
template <class U>
void conv_matmul(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                 size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    const int64_t nb = ne0 / 256;
    ConvRow cr(ne0);
    for (int64_t r = r0; r < r1; ++r) {
        conv_row<U>(w + (size_t)r * w_row_bytes, nb, cr);
        int64_t t = 0;
        for (; t + 4 <= nt; t += 4)
            conv_tile<4>(cr, nb, act + (size_t)t * act_row_bytes, act_row_bytes, y + t * y_stride + r, y_stride);
        for (; t < nt; ++t)
            conv_tile<1>(cr, nb, act + (size_t)t * act_row_bytes, act_row_bytes, y + t * y_stride + r, y_stride);
    }
}
#endif

// ---------------------------------------------------------------------------------------------
// Driver: token blocks (kept in L2) x weight rows x tiles of T tokens x 256-weight blocks.

template <class U, template <int, bool> class Tile, int T>
inline void run_tile(const uint8_t* row, int64_t nb, const uint8_t* act, size_t act_row_bytes, float* y,
                     int64_t y_stride) {
    Tile<T, U::uns> tile;
    tile.reset();
    const float rowd = U::row_scale(row);
    for (int64_t b = 0; b < nb; ++b) {
        if constexpr (T <= 2) prefetch_weights<U::bytes>(row + U::meta + (size_t)b * U::bytes);
        tile.begin(act + (size_t)b * quant::kQ8KBlockBytes, act_row_bytes);
        U::unpack(row + U::meta + (size_t)b * U::bytes, rowd, tile);
    }
    for (int t = 0; t < T; ++t) y[t * y_stride] = tile.result(t);
}

template <class U, template <int, bool> class Tile, int TMax>
void simd_matmul(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                 size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    if constexpr (U::conv) {
        if (nt >= kConvMinTokens) return conv_matmul<U>(w, w_row_bytes, ne0, r0, r1, act, act_row_bytes, nt, y, y_stride);
    }
    const int64_t nb = ne0 / 256;
    const int64_t tb = token_block(act_row_bytes);
    for (int64_t t0 = 0; t0 < nt; t0 += tb) {
        const int64_t tn = nt - t0 < tb ? nt - t0 : tb;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * w_row_bytes;
            int64_t t = 0;
            for (; t + TMax <= tn; t += TMax)
                run_tile<U, Tile, TMax>(row, nb, act + (size_t)(t0 + t) * act_row_bytes, act_row_bytes,
                                        y + (t0 + t) * y_stride + r, y_stride);
            if constexpr (TMax > 4) {
                if (t + 4 <= tn) {
                    run_tile<U, Tile, 4>(row, nb, act + (size_t)(t0 + t) * act_row_bytes, act_row_bytes,
                                         y + (t0 + t) * y_stride + r, y_stride);
                    t += 4;
                }
            }
            if (t + 2 <= tn) {
                run_tile<U, Tile, 2>(row, nb, act + (size_t)(t0 + t) * act_row_bytes, act_row_bytes,
                                     y + (t0 + t) * y_stride + r, y_stride);
                t += 2;
            }
            if (t < tn)
                run_tile<U, Tile, 1>(row, nb, act + (size_t)(t0 + t) * act_row_bytes, act_row_bytes,
                                     y + (t0 + t) * y_stride + r, y_stride);
            // TMax == 4 leaves at most 3: handled by 2 + 1 above
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
