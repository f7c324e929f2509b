// Native 512-bit unpackers for the most used ik-K types (iqk_avx512.cpp) and helpers shared with
// kquant_q82.h: each unpacker emits the block as four 64-weight vectors (sink.pair512) instead of
// eight 32-weight ones, halving the decode work of the AVX2 unpackers in kquant_simd.h. Same
// integer results.
// Requires AVX-512 F/BW/VL/VNNI/VBMI (VBMI for the 32/64-entry table lookups).
#pragma once
#include "kernels/kquant_simd.h"

#if defined(IKLLM_KIQK_AVX512) && defined(__AVX512VBMI__)
#define IKLLM_KIQK_ZMM 1

namespace ikllm::cpu {
namespace {

inline __m512i zcast(__m256i x) { return _mm512_castsi256_si512(x); }
// 32 bytes at p in both 256-bit halves.
inline __m512i zbcast256(const uint8_t* p) { return _mm512_broadcast_i64x4(ld256(p)); }
inline __m512i zset1(char c) { return _mm512_set1_epi8(c); }
// Per-16-bit-lane shifts: low half by lo, high half by hi.
inline __m512i zshift2(int lo, int hi) {
    return _mm512_inserti64x4(_mm512_set1_epi16((short)lo), _mm256_set1_epi16((short)hi), 1);
}

// int16 scale lanes of 64-weight vector k: 128-bit lane L holds scale 4k+L eight times.
inline __m512i zscale(__m256i sc16, int k) {
    alignas(64) static const int16_t idx[4][32] = {
        {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
        {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
        {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
        {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13,
         14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
    };
    return _mm512_permutexvar_epi16(_mm512_load_si512((const void*)idx[k]), zcast(sc16));
}

// Signed levels v -> (|v|, sign mask) for pair512.
template <class S>
inline void zemit_signed(S& s, int k, __m512i v, __m512i sc) {
    s.pair512(k, _mm512_abs_epi8(v), _mm512_movepi8_mask(v), sc);
}
// Signed levels of a sat type -> unsigned bytes v + 128 (kquant_unpack.h).
template <class S>
inline void zemit_sat(S& s, int k, __m512i v, __m512i sc) {
    s.pair512(k, _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)), 0, sc);
}

// P4K: 32 bytes hold chunk 2g (low nibbles) and 2g+1 (high nibbles).
inline __m512i zp4k(const uint8_t* q32) {
    return _mm512_and_si512(_mm512_srlv_epi16(zbcast256(q32), zshift2(0, 4)), zset1(15));
}
// P4N: 32 bytes = sub-blocks 2k, 2k+1 (16 bytes each, low nibbles first 16 weights).
inline __m512i zp4n(const uint8_t* q32) {
    const __m512i perm = _mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3);
    const __m512i shifts = _mm512_setr_epi64(0, 0, 0x0004000400040004ll, 0x0004000400040004ll, 0, 0,
                                             0x0004000400040004ll, 0x0004000400040004ll);
    const __m512i z = _mm512_permutexvar_epi64(perm, zcast(ld256(q32)));
    return _mm512_and_si512(_mm512_srlv_epi16(z, shifts), zset1(15));
}
// Mask of bytes whose bit c (low half) / c+1 (high half) of the 32 HB bytes is set.
inline __mmask64 zhb(__m512i hb2, int c) {
    const __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << c)), _mm256_set1_epi8((char)(1 << (c + 1))), 1);
    return _mm512_test_epi8_mask(hb2, sel);
}

template <class S>
inline void zp4n_blocks(const uint8_t* qs, const int8_t* table16, __m256i sc16, S& s) {
    const __m512i tab = _mm512_broadcast_i32x4(ld128(table16));
    for (int k = 0; k < 4; ++k) zemit_sat(s, k, _mm512_shuffle_epi8(tab, zp4n(qs + 32 * k)), zscale(sc16, k));
}

// ---- 4-bit non-linear types below the conv threshold, activations in nibble order -----------
// The P4N codes of 4 chunks (128 weights) are 64 contiguous bytes whose low nibbles are the
// chunks' first 16 weights and whose high nibbles their last 16. With the activation codes of
// each 128 weights reordered the same way once per call ([chunk c, bytes 0-15] for c = 0..3,
// then [chunk c, bytes 16-31]: act_nibble_order), one 64-byte load gives two 64-weight vectors
// with no lane-crossing permute, and the table lookup yields level + 128 directly. Same integer
// sums per block as the natural-order unpackers (maddubs pairs stay adjacent weights); only the
// float lanes they are accumulated in differ.

// int16 scale lanes of vector k in nibble order: 128-bit lane L holds scale 8(k/2) + 2L + k%2.
inline __m512i zscale_nib(__m256i sc16, int k) {
    alignas(64) static const int16_t idx[4][32] = {
        {0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6},
        {1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7},
        {8, 8, 8, 8, 8, 8, 8, 8, 10, 10, 10, 10, 10, 10, 10, 10, 12, 12, 12, 12, 12, 12, 12, 12,
         14, 14, 14, 14, 14, 14, 14, 14},
        {9, 9, 9, 9, 9, 9, 9, 9, 11, 11, 11, 11, 11, 11, 11, 11, 13, 13, 13, 13, 13, 13, 13, 13,
         15, 15, 15, 15, 15, 15, 15, 15},
    };
    return _mm512_permutexvar_epi16(_mm512_load_si512((const void*)idx[k]), zcast(sc16));
}

// The 128 P4N bytes of a block (qs) through a 16-entry level table, as sat bytes, nibble order.
template <class S>
inline void zp4n_blocks_nib(const uint8_t* qs, const int8_t* table16, __m256i sc16, S& s) {
    const __m512i tab = _mm512_xor_si512(_mm512_broadcast_i32x4(ld128(table16)), _mm512_set1_epi8((char)0x80));
    const __m512i m15 = zset1(15);
    for (int h = 0; h < 2; ++h) {
        const __m512i z = _mm512_loadu_si512((const void*)(qs + 64 * h));
        s.pair512(2 * h, _mm512_shuffle_epi8(tab, _mm512_and_si512(z, m15)), 0, zscale_nib(sc16, 2 * h));
        s.pair512(2 * h + 1, _mm512_shuffle_epi8(tab, _mm512_and_si512(_mm512_srli_epi16(z, 4), m15)), 0,
                  zscale_nib(sc16, 2 * h + 1));
    }
}

// Q8_K activation rows with each 128-weight half's codes in nibble order (see above).
inline void act_nibble_order(const uint8_t* act, size_t row_bytes, int64_t nt, int64_t nb, uint8_t* out) {
    std::memcpy(out, act, row_bytes * (size_t)nt);
    for (int64_t t = 0; t < nt; ++t)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* src = act + (size_t)t * row_bytes + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffQs;
            uint8_t* dst = out + (size_t)t * row_bytes + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffQs;
            for (int h = 0; h < 2; ++h)
                for (int p = 0; p < 2; ++p)
                    for (int c = 0; c < 4; ++c) std::memcpy(dst + 128 * h + 64 * p + 16 * c, src + 128 * h + 32 * c + 16 * p, 16);
        }
}

struct ZIq4Xs : KIq4Xs {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const uint64_t sc = _pdep_u64(rd_u32(b + 4), 0x0f0f0f0f0f0f0f0full) |
                            _pdep_u64(rd_u16(b + 2), 0x3030303030303030ull);
        const __m128i sc8 = _mm_sub_epi8(dup8(sc), _mm_set1_epi8(32));
        zp4n_blocks(b + 8, tabs::kIq4nl, _mm256_cvtepi8_epi16(sc8), s);
        s.end(hf(b), hf(b), sat_corr(_mm256_setzero_si256(), sc8));
    }
};
struct ZIq4XsNib : KIq4Xs {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const uint64_t sc = _pdep_u64(rd_u32(b + 4), 0x0f0f0f0f0f0f0f0full) |
                            _pdep_u64(rd_u16(b + 2), 0x3030303030303030ull);
        const __m128i sc8 = _mm_sub_epi8(dup8(sc), _mm_set1_epi8(32));
        zp4n_blocks_nib(b + 8, tabs::kIq4nl, _mm256_cvtepi8_epi16(sc8), s);
        s.end(hf(b), hf(b), sat_corr(_mm256_setzero_si256(), sc8));
    }
};

struct ZIq4K : KIq4K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i sc8 = k6_scales(b);
        zp4n_blocks(b + 16, tabs::kIq4k, _mm256_cvtepi8_epi16(sc8), s);
        s.end(hf(b), hf(b), sat_corr(extra_corr(rd_u16(b + 2), sc8, 4), sc8));
    }
};
struct ZIq4KNib : KIq4K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i sc8 = k6_scales(b);
        zp4n_blocks_nib(b + 16, tabs::kIq4k, _mm256_cvtepi8_epi16(sc8), s);
        s.end(hf(b), hf(b), sat_corr(extra_corr(rd_u16(b + 2), sc8, 4), sc8));
    }
};

struct ZIq4Ks : KIq4Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        __m256i corr;
        ks_scale_vectors(b, 4, &sc8, &corr);
        zp4n_blocks(b + 8, tabs::kIq4k, _mm256_cvtepi8_epi16(sc8), s);
        s.end(rowd, rowd, sat_corr(corr, sc8));
    }
};
struct ZIq4KsNib : KIq4Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        __m256i corr;
        ks_scale_vectors(b, 4, &sc8, &corr);
        zp4n_blocks_nib(b + 8, tabs::kIq4k, _mm256_cvtepi8_epi16(sc8), s);
        s.end(rowd, rowd, sat_corr(corr, sc8));
    }
};

template <class S>
inline void zp4k5_blocks(const uint8_t* qs, const uint8_t* qh, __m256i sc16, S& s) {
    const __m512i tab = zcast(ld256(tabs::kIq5nl));
    const __m512i hb2 = zbcast256(qh);
    for (int g = 0; g < 4; ++g) {
        __m512i q = zp4k(qs + 32 * g);
        q = _mm512_mask_add_epi8(q, zhb(hb2, 2 * g), q, zset1(16));
        zemit_sat(s, g, _mm512_permutexvar_epi8(q, tab), zscale(sc16, g));
    }
}

struct ZIq5K : KIq5K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i sc8 = k6_scales(b);
        zp4k5_blocks(b + 16, b + 144, _mm256_cvtepi8_epi16(sc8), s);
        s.end(hf(b), hf(b), sat_corr(extra_corr(rd_u16(b + 2), sc8, 2), sc8));
    }
};

struct ZIq5Ks : KIq5Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        __m256i corr;
        ks_scale_vectors(b, 2, &sc8, &corr);
        zp4k5_blocks(b + 8, b + 136, _mm256_cvtepi8_epi16(sc8), s);
        s.end(rowd, rowd, sat_corr(corr, sc8));
    }
};

struct ZIq6K : KIq6K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const __m128i sc8 = ld128(b + 4);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const __m512i tab = _mm512_loadu_si512((const void*)tabs::kIq6nl);
        for (int g = 0; g < 4; ++g) {
            // chunk 2g: qh bits 4(g&1)..+1, chunk 2g+1: bits 4(g&1)+2..+3, moved to bits 4-5
            const __m512i qh = zbcast256(b + 148 + 32 * (g >> 1));
            const __m512i h = (g & 1) ? _mm512_srlv_epi16(qh, zshift2(0, 2)) : _mm512_sllv_epi16(qh, zshift2(4, 2));
            const __m512i idx = _mm512_or_si512(zp4k(b + 20 + 32 * g), _mm512_and_si512(h, zset1(0x30)));
            zemit_sat(s, g, _mm512_permutexvar_epi8(idx, tab), zscale(sc16, g));
        }
        s.end(hf(b), hf(b), sat_corr(extra_corr(rd_u16(b + 2), sc8, 1), sc8));
    }
};

// P2 chunks 4h+2j, 4h+2j+1 (shifts 4j and 4j+2 of the 32 bytes of half h).
inline __m512i zp2(const uint8_t* q32, int j) {
    return _mm512_and_si512(_mm512_srlv_epi16(zbcast256(q32), zshift2(4 * j, 4 * j + 2)), zset1(3));
}

// IQ2 codes (P2, 64 bytes at q64) through the 4-entry IQ2 table, signed, into the sink.
template <class S>
inline void zp2_blocks(const uint8_t* q64, __m256i sc16, S& s) {
    const __m512i tab = _mm512_broadcast_i32x4(_mm_cvtsi32_si128((int)rd_u32((const uint8_t*)tabs::kIq2nl)));
    for (int k = 0; k < 4; ++k) zemit_signed(s, k, _mm512_shuffle_epi8(tab, zp2(q64 + 32 * (k >> 1), k & 1)), zscale(sc16, k));
}
// IQ3 codes: P2 plus bit c of the 32 bytes at hb32 for chunk c, through the 8-entry IQ3 table.
template <class S>
inline void zp3_blocks(const uint8_t* q64, const uint8_t* hb32, __m256i sc16, S& s) {
    const __m512i tab = _mm512_broadcast_i32x4(_mm_loadl_epi64((const __m128i*)tabs::kIq3nl));
    const __m512i hb2 = zbcast256(hb32);
    for (int k = 0; k < 4; ++k) {
        __m512i q = zp2(q64 + 32 * (k >> 1), k & 1);
        q = _mm512_mask_add_epi8(q, zhb(hb2, 2 * k), q, zset1(4));
        zemit_signed(s, k, _mm512_shuffle_epi8(tab, q), zscale(sc16, k));
    }
}

struct ZIq2K : KIq2K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const uint64_t lo = _pdep_u64(rd_u32(b + 4), 0x0f0f0f0f0f0f0f0full);
        const uint64_t hi = _pdep_u64(rd_u32(b + 8), 0x0f0f0f0f0f0f0f0full);
        const __m128i sc8 = _mm_sub_epi8(_mm_set_epi64x((long long)hi, (long long)lo), _mm_set1_epi8(8));
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        zp2_blocks(b + 12, sc16, s);
        s.end(hf(b), hf(b), extra_corr(rd_u16(b + 2), sc8, 5));
    }
};

struct ZIq3K : KIq3K {
    template <class S>
    static void unpack(const uint8_t* b, float, S& s) {
        const uint64_t lo = _pdep_u64(rd_u32(b + 6), 0x0f0f0f0f0f0f0f0full);
        const uint64_t hi = _pdep_u64(rd_u32(b + 10), 0x0f0f0f0f0f0f0f0full);
        const __m128i n = _mm_set_epi64x((long long)hi, (long long)lo);
        const __m128i mag = _mm_add_epi8(_mm_add_epi8(n, n), _mm_set1_epi8(1));
        const uint16_t sh = rd_u16(b + 4);
        const __m128i sc8 = _mm_mask_sub_epi8(mag, (__mmask16)sh, _mm_setzero_si128(), mag);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        zp3_blocks(b + 14, b + 78, sc16, s);
        s.end(hf(b), hf(b), extra_corr(rd_u16(b + 2), sc8, 4));
    }
};

struct ZIq2Ks : KIq2Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        const __m256i corr = iq2ks_scales(b, &sc8);
        zp2_blocks(b + 6, _mm256_cvtepi8_epi16(sc8), s);
        s.end(rowd, rowd, corr);
    }
};

struct ZIq3Ks : KIq3Ks {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        __m128i sc8;
        const __m256i corr = iq3ks_scales(b, &sc8);
        zp3_blocks(b + 6, b + 70, _mm256_cvtepi8_epi16(sc8), s);
        s.end(rowd, rowd, corr);
    }
};

// IQ2_KL: a 5-bit code per weight pair (low nibble / high nibble of the 64 bytes at 6, bit c of
// the 16 bytes at 70 for chunk c) naming one of 32 pairs. The 64-byte table holds the pairs'
// first weights at 0..31 and their second weights at 32..63, so one vpermb gives both.
struct Iq2KlBytes {
    alignas(64) int8_t v[64];
};
constexpr Iq2KlBytes make_iq2kl_bytes() {
    Iq2KlBytes t{};
    for (int k = 0; k < 32; ++k) {
        t.v[k] = (int8_t)(tabs::kIq2kl[k] & 255);
        t.v[32 + k] = (int8_t)(tabs::kIq2kl[k] >> 8);
    }
    return t;
}
inline constexpr Iq2KlBytes kIq2klBytes = make_iq2kl_bytes();

struct ZIq2Kl : KIq2Kl {
    template <class S>
    static void unpack(const uint8_t* b, float rowd, S& s) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(iq2kl_scales(b));
        // lane L of chunk pair (2m, 2m + 1): code byte (L % 32) / 2; odd lanes take the second weight
        alignas(64) static const uint8_t spread[64] = {
            0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15,
            0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15};
        const __m512i place = _mm512_load_si512((const void*)spread);
        const __m512i second = _mm512_set1_epi16((short)0x2000);
        const __m512i tab = _mm512_load_si512((const void*)kIq2klBytes.v);
        const __m512i qh = _mm512_permutexvar_epi8(place, _mm512_castsi128_si512(ld128(b + 70)));
        for (int m = 0; m < 4; ++m) {
            const __m512i q = _mm512_permutexvar_epi8(place, _mm512_castsi128_si512(ld128(b + 6 + 16 * m)));
            __m512i c = _mm512_and_si512(_mm512_srlv_epi16(q, zshift2(0, 4)), zset1(15));
            c = _mm512_mask_add_epi8(c, zhb(qh, 2 * m), c, zset1(16));
            zemit_signed(s, m, _mm512_permutexvar_epi8(_mm512_or_si512(c, second), tab), zscale(sc16, m));
        }
        s.end(rowd);
    }
};

// U: the natural-order unpacker (conv path of big batches), N: its nibble-order twin (tiles).
template <class U, class N, template <int, bool> class Tile, int TMax>
void simd_matmul_nib(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                     size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    if (nt >= kConvMinTokens) return conv_matmul<U>(w, w_row_bytes, ne0, r0, r1, act, act_row_bytes, nt, y, y_stride);
    thread_local std::vector<uint8_t> nib;
    if (nib.size() < act_row_bytes * (size_t)nt) nib.resize(act_row_bytes * (size_t)nt);
    act_nibble_order(act, act_row_bytes, nt, ne0 / 256, nib.data());
    simd_matmul<N, Tile, TMax>(w, w_row_bytes, ne0, r0, r1, nib.data(), act_row_bytes, nt, y, y_stride);
}

}  // namespace
}  // namespace ikllm::cpu
#endif
