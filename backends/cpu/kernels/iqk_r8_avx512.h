// IQ4_K_R8, IQ4_XS_X8, Q2_K_R8, Q3_K_R8, IQ2_K_R8, IQ3_K_R8, IQ2_KS_R8, IQ3_KS_R8, IQ4_KS_R8, IQ5_KS_R8 and IQ2_KL_R8 (ikllm's
// run-time layouts of IQ4_K, IQ4_XS, Q2_K, Q3_K, IQ2_K, IQ3_K, IQ2_KS, IQ3_KS, IQ4_KS, IQ5_KS, IQ2_KL,
// quant/kquant_r8.h) on AVX-512 VNNI, included by iqk_avx512.cpp. As Q4_K_R8 (kquant_r8_avx512.h): 8 rows side by side, a register holds one
// 4-column granule of two 32-weight chunks of all 8 rows, every row's sums stay in its lanes.
// The numerics are the plain kernel's (kquant_unpack.h, KIq4K), which follow the reference: the
// levels of the first value set + 128 as unsigned bytes (one vpshufb lookup), multiplied with
// vpmaddubsw's saturating int16 pair sums (the saturation is common and moves logits by percents),
// summed to int32 and corrected per 16 weights by (4 e - 128) x the activation's code sum (Q8_K
// bsums; e the value-set bit: the second set is the first plus 4); times the sub-block scale in
// int32 and one float multiply-add per block: the plain kernel's integer per 256 weights. From
// kIq4KR8PlainMinTokens tokens: the plain IQ4_K kernel on unpacked slabs (r8_slab.h), its results
// bit for bit.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/legacy_panel_avx512.h"  // kP32ExactMinTokens
#include "kernels/prefetch.h"
#include "kernels/r8_slab.h"
#include "quant/act_q8_k.h"
#include "quant/kquant_r8.h"
#include "quant/quant_tables.h"

namespace ikllm::cpu {
namespace {

// From here the plain kernel re-encodes rows to 8 bits ("conv", kquant_unpack.h) and outruns the
// tile (one Zen 4 core, 512 x 2048 from cache: tile ~215 GFLOP/s at any batch, plain 214 at 16
// tokens, 270 at 64, 402 at 256).
constexpr int64_t kIq4KR8PlainMinTokens = 32;

inline __m512i iq4kr8_pair_i32(int32_t lo, int32_t hi) {
    return _mm512_inserti64x4(_mm512_set1_epi32(lo), _mm256_set1_epi32(hi), 1);
}

// The 8 rows' sums of 4 columns of sub-blocks 2p (lanes 0-7) and 2p + 1 (lanes 8-15) x 4
// granules (u: unsigned codes of shift j in half n) against one token's activation block ab,
// started at init: the activation's 32 codes put in place by one vpermd per granule.
inline __m512i r8_pair_dot(const __m512i (&u)[4], const __m512i (&ix)[4], const uint8_t* ab, int n, int j, __m512i init) {
    const __m512i av = _mm512_castsi256_si512(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab + quant::kQ8KOffQs + 128 * n + 32 * j)));
    __m512i s0 = _mm512_dpbusd_epi32(init, u[0], _mm512_permutexvar_epi32(ix[0], av));
    __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[1], _mm512_permutexvar_epi32(ix[1], av));
    s0 = _mm512_dpbusd_epi32(s0, u[2], _mm512_permutexvar_epi32(ix[2], av));
    s1 = _mm512_dpbusd_epi32(s1, u[3], _mm512_permutexvar_epi32(ix[3], av));
    return _mm512_add_epi32(s0, s1);
}

// The 8 bytes at p (byte r: row r) as dword lanes, rows 0-7 in both halves.
inline __m512i ksr8_row_bytes(const uint8_t* p) {
    const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(x, x));
}
// The 8 rows' fp16 scales at p as floats, in both halves (lane L: row L % 8).
inline __m512 r8_row_scales(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
// A block's int32 sums per row-lane times d (the rows' scales) x d_a into acc.
template <int T>
inline void r8_block_scale(__m512 d, const uint8_t* const* a, int64_t b, const __m512i (&isum)[T], __m512 (&acc)[T]) {
    for (int t = 0; t < T; ++t) {
        float da;
        std::memcpy(&da, a[t] + quant::kQ8KBlockBytes * b + quant::kQ8KOffD, 4);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, _mm512_set1_ps(da)), acc[t]);
    }
}
// Each row's two lanes (its even and odd sub-blocks) added: the 8 rows' results.
template <int T>
inline void r8_store_rows(const __m512 (&acc)[T], float* y, int64_t ys) {
    for (int t = 0; t < T; ++t)
        _mm256_storeu_ps(y + t * ys, _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1)));
}

// The IQ4_NL levels (IQ4_XS, and the first IQ4_K value set) + 128 as unsigned bytes, in every
// 128-bit lane.
inline __m512i iq4r8_table() {
    return _mm512_broadcast_i32x4(_mm_setr_epi8((char)1, (char)24, (char)45, (char)63, (char)79, (char)93, (char)106,
                                                (char)118, (char)129, (char)141, (char)153, (char)166, (char)181,
                                                (char)197, (char)217, (char)241));
}

// The 4 granule vectors of a chunk pair (p: its 256 code bytes) as levels + 128: lo[g] the low
// nibbles (columns 4g.. of both chunks), hi[g] the high ones (columns 16 + 4g..).
inline void iq4r8_levels(__m512i table, const uint8_t* p, __m512i lo[4], __m512i hi[4]) {
    const __m512i m15 = _mm512_set1_epi8(15);
    for (int g = 0; g < 4; ++g) {
        const __m512i q = _mm512_loadu_si512(p + 64 * g);
        lo[g] = _mm512_shuffle_epi8(table, _mm512_and_si512(q, m15));
        hi[g] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(q, 4), m15));
    }
}

// A chunk pair's 256 code bytes (p) back to the plain rows' qs bytes (q: row 0's bytes of the pair,
// rows rb apart): the 4 granule vectors (lane L = row L % 8 of chunk 2j + L / 8) transposed 4 x 4
// within each 128-bit lane, so lane k of t[i] is the 16 plain bytes of row 4 (k % 2) + i in chunk
// 2j + k / 2.
inline void iq4r8_put_codes(const uint8_t* p, uint8_t* q, size_t rb) {
    const __m512i v0 = _mm512_loadu_si512(p), v1 = _mm512_loadu_si512(p + 64);
    const __m512i v2 = _mm512_loadu_si512(p + 128), v3 = _mm512_loadu_si512(p + 192);
    const __m512i a0 = _mm512_unpacklo_epi32(v0, v1), a1 = _mm512_unpackhi_epi32(v0, v1);
    const __m512i a2 = _mm512_unpacklo_epi32(v2, v3), a3 = _mm512_unpackhi_epi32(v2, v3);
    const __m512i t[4] = {_mm512_unpacklo_epi64(a0, a2), _mm512_unpackhi_epi64(a0, a2), _mm512_unpacklo_epi64(a1, a3),
                          _mm512_unpackhi_epi64(a1, a3)};
    for (int i = 0; i < 4; ++i) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + rb * (size_t)i), _mm512_extracti32x4_epi32(t[i], 0));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + rb * (size_t)(4 + i)), _mm512_extracti32x4_epi32(t[i], 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 + rb * (size_t)i), _mm512_extracti32x4_epi32(t[i], 2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 + rb * (size_t)(4 + i)), _mm512_extracti32x4_epi32(t[i], 3));
    }
}

// The 8 accumulators' scales sc = ls - 32 (int32, lane L of accumulator a as in kquant_r8.h).
inline void iq4kr8_scales(const uint8_t* s96, __m512i sc[8]) {  // s96: the 96 scale bytes
    const __m512i lo = _mm512_loadu_si512(s96);
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s96 + 64));
    const __m512i m15 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3), k32 = _mm512_set1_epi8(32);
    const __m512i h0 = _mm512_inserti64x4(_mm512_castsi256_si512(hi), _mm256_srli_epi16(hi, 2), 1);
    const __m512i h1 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(hi, 4)), _mm256_srli_epi16(hi, 6), 1);
    const __m512i v0 = _mm512_sub_epi8(
        _mm512_or_si512(_mm512_and_si512(lo, m15), _mm512_slli_epi16(_mm512_and_si512(h0, m3), 4)), k32);
    const __m512i v1 = _mm512_sub_epi8(
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo, 4), m15), _mm512_slli_epi16(_mm512_and_si512(h1, m3), 4)), k32);
    sc[0] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v0, 0));
    sc[1] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v0, 1));
    sc[2] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v0, 2));
    sc[3] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v0, 3));
    sc[4] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v1, 0));
    sc[5] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v1, 1));
    sc[6] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v1, 2));
    sc[7] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v1, 3));
}

// One 8-row group times T tokens (a[t]: token t's Q8_K row). Lane k of the result is row k: the
// sum of the two halves.
template <int T>
void iq4kr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) {
    const __m512i table = iq4r8_table();
    const __m512i ones = _mm512_set1_epi16(1);
    const __m512i base = _mm512_set1_epi32(-128), shifted = _mm512_set1_epi32(-124);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ix[8];  // activation dwords: lanes 0-7 dword j of chunk 2j', 8-15 dword 8 + j (chunk 2j' + 1)
    for (int j = 0; j < 8; ++j) ix[j] = iq4kr8_pair_i32(j, 8 + j);
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + quant::kIQ4KR8Bytes * b;
        prefetch_weights<quant::kIQ4KR8Bytes>(blk);
        __m512i sc[8];
        iq4kr8_scales(blk + 32, sc);
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
            __m512i lo[4], hi[4];
            iq4r8_levels(table, blk + 128 + 256 * j, lo, hi);
            uint16_t mk[2];
            std::memcpy(mk, blk + 16 + 4 * j, 4);
            const __m512i mul0 = _mm512_mask_blend_epi32((__mmask16)mk[0], base, shifted);
            const __m512i mul1 = _mm512_mask_blend_epi32((__mmask16)mk[1], base, shifted);
            for (int t = 0; t < T; ++t) {
                const uint8_t* ab = a[t] + quant::kQ8KBlockBytes * b;
                int16_t bs[4];  // per-16 code sums of sub-blocks 4j .. 4j + 3
                std::memcpy(bs, ab + quant::kQ8KOffBsums + 8 * j, 8);
                const __m512i av = _mm512_loadu_si512(ab + quant::kQ8KOffQs + 64 * j);
                // Low nibbles: sub-blocks 4j (lanes 0-7) and 4j + 2; high: 4j + 1 and 4j + 3.
                __m512i s0 = _mm512_mullo_epi32(iq4kr8_pair_i32(bs[0], bs[2]), mul0);
                __m512i s1 = _mm512_mullo_epi32(iq4kr8_pair_i32(bs[1], bs[3]), mul1);
                for (int gq = 0; gq < 4; ++gq) {
                    s0 = _mm512_dpwssd_epi32(s0, _mm512_maddubs_epi16(lo[gq], _mm512_permutexvar_epi32(ix[gq], av)), ones);
                    s1 = _mm512_dpwssd_epi32(s1, _mm512_maddubs_epi16(hi[gq], _mm512_permutexvar_epi32(ix[4 + gq], av)), ones);
                }
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(s0, sc[2 * j]),
                                                                     _mm512_mullo_epi32(s1, sc[2 * j + 1])));
            }
        }
        const __m512 d16 = _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk))));
        for (int t = 0; t < T; ++t) {
            float da;
            std::memcpy(&da, a[t] + quant::kQ8KBlockBytes * b + quant::kQ8KOffD, 4);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d16, _mm512_set1_ps(da)), acc[t]);
        }
    }
    r8_store_rows<T>(acc, y, ys);
}

// iq4k_r8_unpack_group (quant/kquant_r8.h) for the prompt-batch slabs, 8 rows at a time: the 128
// scales of a group block decoded in two registers; then per sub-block s the 8 rows' scales are 8
// consecutive bytes (lane L = row + 8c), so the plain scale nibbles and bit pairs of all 8 rows
// come out of 64-bit words; the value-set bits are spread to one byte per row; the codes are a
// 4 x 4 transpose of granules per 128-bit lane (iq4r8_put_codes). Checked against the plain
// kernel on the same rows, bit for bit (quant_kquant_r8_test).
// The 128 6-bit scales of the IQ4_K_R8 / Q3_K_R8 encoding (s96: low nibbles, then bit pairs)
// as bytes, value i at ls[i].
inline void iq4r8_scale_bytes(const uint8_t* s96, uint8_t ls[128]) {
    const __m512i m15 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    const __m512i lo = _mm512_loadu_si512(s96);
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s96 + 64));
    const __m512i h0 = _mm512_inserti64x4(_mm512_castsi256_si512(hi), _mm256_srli_epi16(hi, 2), 1);
    const __m512i h1 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(hi, 4)), _mm256_srli_epi16(hi, 6), 1);
    _mm512_storeu_si512(ls, _mm512_or_si512(_mm512_and_si512(lo, m15), _mm512_slli_epi16(_mm512_and_si512(h0, m3), 4)));
    _mm512_storeu_si512(ls + 64, _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo, 4), m15),
                                                 _mm512_slli_epi16(_mm512_and_si512(h1, m3), 4)));
}

inline uint64_t iq4kr8_spread_bits(uint32_t m) {  // bit r of m -> bit 0 of byte r
    const uint64_t x = ((uint64_t)m * 0x0101010101010101ULL) & 0x8040201008040201ULL;
    return ((x + 0x7F7F7F7F7F7F7F7FULL) & 0x8080808080808080ULL) >> 7;
}
inline void iq4kr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = group + quant::kIQ4KR8Bytes * blk;
        uint8_t* x0 = rows + quant::kIQ4KBlockBytes * (size_t)blk;
        alignas(64) uint8_t ls[128];  // ls of value i = 16a + L
        iq4r8_scale_bytes(src + 32, ls);
        uint64_t v[16], e_lo = 0, e_hi = 0;  // v[s]: byte r = ls of sub-block s of row r
        for (int s = 0; s < 16; ++s) {
            const int a = 2 * (s >> 2) + (s & 1), c = (s >> 1) & 1;
            std::memcpy(&v[s], ls + 16 * a + 8 * c, 8);
            const uint32_t mbits = src[16 + 2 * a + c];  // rows' value-set bits of sub-block s
            (s < 8 ? e_lo : e_hi) |= iq4kr8_spread_bits(mbits) << (s & 7);
        }
        uint64_t sl[8], sh[4];
        for (int k = 0; k < 8; ++k) sl[k] = (v[2 * k] & 0x0F0F0F0F0F0F0F0FULL) | (v[2 * k + 1] & 0x0F0F0F0F0F0F0F0FULL) << 4;
        for (int k = 0; k < 4; ++k) {
            uint64_t h = 0;
            for (int i = 0; i < 4; ++i) h |= ((v[4 * k + i] >> 4) & 0x0303030303030303ULL) << (2 * i);
            sh[k] = h;
        }
        for (int r = 0; r < 8; ++r) {
            uint8_t* x = x0 + rb * (size_t)r;
            std::memcpy(x, src + 2 * r, 2);
            x[2] = (uint8_t)(e_lo >> (8 * r));
            x[3] = (uint8_t)(e_hi >> (8 * r));
            for (int k = 0; k < 4; ++k) x[4 + k] = (uint8_t)(sh[k] >> (8 * r));
            for (int k = 0; k < 8; ++k) x[8 + k] = (uint8_t)(sl[k] >> (8 * r));
        }
        for (int j = 0; j < 4; ++j) iq4r8_put_codes(src + 128 + 256 * j, x0 + 16 + 32 * j, rb);
    }
}



// ---- IQ4_XS_X8 ---------------------------------------------------------------------------------
// The IQ4_K_R8 kernel without value sets and with one scale per 32-weight chunk: per chunk pair
// the low- and high-nibble sums of a lane share the chunk's scale, so they add before the one
// multiply by it, and the +128 of the levels is removed per chunk with -128 x the activation's
// code sum of its 32 weights. The plain IQ4_XS kernel's integers per 256 weights, exactly.

// sc[j]: lane L the scale ls - 32 of chunk 2j + L / 8 of row L % 8 (value 16j + L, kquant_r8.h).
inline __m512i iq4xsx8_scale_bytes(const uint8_t* blk) {
    const __m512i m15 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 48));
    __m512i hz = _mm512_castsi128_si512(h);
    hz = _mm512_inserti32x4(hz, _mm_srli_epi16(h, 2), 1);
    hz = _mm512_inserti32x4(hz, _mm_srli_epi16(h, 4), 2);
    hz = _mm512_inserti32x4(hz, _mm_srli_epi16(h, 6), 3);
    const __m512i l = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_srli_epi16(lo, 4), 1), m15);
    return _mm512_or_si512(l, _mm512_slli_epi16(_mm512_and_si512(hz, m3), 4));  // byte i: value i (ls, 0..63)
}
inline void iq4xsx8_scales(const uint8_t* blk, __m512i sc[4]) {
    const __m512i v = _mm512_sub_epi8(iq4xsx8_scale_bytes(blk), _mm512_set1_epi8(32));
    sc[0] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 0));
    sc[1] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 1));
    sc[2] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 2));
    sc[3] = _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 3));
}

// The scales of the X8 codes' tile: IQ4_XS_X8 (6-bit ls - 32 per chunk, fp16 d per block).
struct Iq4XsX8Scales {
    static constexpr int kBytes = quant::kIQ4XSX8Bytes, kMeta = 0;
    __m512i sc[4];
    void begin(const uint8_t* blk) { iq4xsx8_scales(blk, sc); }
    // chunk pair j: lane L the scale of chunk 2j + L / 8, and the start of its sum from the
    // chunks' code sums bs0 (lanes 0-7), bs1 (8-15): -128 x (the levels' + 128)
    __m512i scale(int j) const { return sc[j]; }
    __m512i start(int, int bs0, int bs1) const { return iq4kr8_pair_i32(-128 * bs0, -128 * bs1); }
    static __m512 block_d(const uint8_t* blk, __m512) { return r8_row_scales(blk); }
};
// IQ4_KS_R8: one scale byte per chunk (bits 1-7 the scale + 127, bit 0 the value set, whose
// levels are the first set's + 4: the start -128 + 4 e), float32 row scales at the group's head.
struct Iq4KsR8Scales {
    static constexpr int kBytes = quant::kIQ4KSR8Bytes, kMeta = quant::kIQ4KSMetaBytes;
    __m512i sc[4], mul[4];
    void begin(const uint8_t* blk) {
        for (int j = 0; j < 4; ++j) {
            const __m512i s = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * j)));
            sc[j] = _mm512_sub_epi32(_mm512_and_si512(s, _mm512_set1_epi32(254)), _mm512_set1_epi32(127));
            mul[j] = _mm512_mask_blend_epi32(_mm512_test_epi32_mask(s, _mm512_set1_epi32(1)), _mm512_set1_epi32(-128),
                                             _mm512_set1_epi32(-124));
        }
    }
    __m512i scale(int j) const { return sc[j]; }
    __m512i start(int j, int bs0, int bs1) const { return _mm512_mullo_epi32(iq4kr8_pair_i32(bs0, bs1), mul[j]); }
    static __m512 block_d(const uint8_t*, __m512 drow) { return drow; }
};
inline __m512 r8_row_scales_f32(const uint8_t* p) {
    const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    return _mm512_insertf32x8(_mm512_castps256_ps512(d), d, 1);
}

template <class Scales, int T>
void iq4x8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) {
    const __m512i table = iq4r8_table();
    const __m512i ones = _mm512_set1_epi16(1);
    [[maybe_unused]] const __m512 drow = Scales::kMeta ? r8_row_scales_f32(g) : _mm512_setzero_ps();
    g += 8 * Scales::kMeta;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ix[8];  // activation dwords: lanes 0-7 dword j of chunk 2j', 8-15 dword 8 + j (chunk 2j' + 1)
    for (int j = 0; j < 8; ++j) ix[j] = iq4kr8_pair_i32(j, 8 + j);
    Scales scl;
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + Scales::kBytes * b;
        prefetch_weights<Scales::kBytes>(blk);
        scl.begin(blk);
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
            __m512i lo[4], hi[4];
            iq4r8_levels(table, blk + 64 + 256 * j, lo, hi);
            for (int t = 0; t < T; ++t) {
                const uint8_t* ab = a[t] + quant::kQ8KBlockBytes * b;
                int16_t bs[4];  // per-16 code sums: chunk 2j (low, high half), chunk 2j + 1
                std::memcpy(bs, ab + quant::kQ8KOffBsums + 8 * j, 8);
                const __m512i av = _mm512_loadu_si512(ab + quant::kQ8KOffQs + 64 * j);
                __m512i s0 = scl.start(j, bs[0] + bs[1], bs[2] + bs[3]);
                __m512i s1 = _mm512_setzero_si512();
                for (int gq = 0; gq < 4; ++gq) {
                    s0 = _mm512_dpwssd_epi32(s0, _mm512_maddubs_epi16(lo[gq], _mm512_permutexvar_epi32(ix[gq], av)), ones);
                    s1 = _mm512_dpwssd_epi32(s1, _mm512_maddubs_epi16(hi[gq], _mm512_permutexvar_epi32(ix[4 + gq], av)), ones);
                }
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(_mm512_add_epi32(s0, s1), scl.scale(j)));
            }
        }
        r8_block_scale<T>(Scales::block_d(blk, drow), a, b, isum, acc);
    }
    r8_store_rows<T>(acc, y, ys);
}

// ---- IQ5_KS_R8 ----------------------------------------------------------------------------------
// The plain IQ5_KS kernel's integers: the 5-bit codes through one vpermb to the first value set's
// levels + 128 (unsigned), saturating vpmaddubsw pair sums as the reference's (pairs of adjacent
// columns, which a 4-column granule keeps), each 16 columns started at (2 e - 128) x their code
// sum (the second set is the first plus 2), times the chunk's scale (s & 254) - 127; then
// rowd d_a in float. A qs register holds chunk 2g (low nibbles) and 2g + 1 (high) of all 8 rows,
// columns 4k.. in lanes 0-7 and 16 + 4k.. in lanes 8-15, so both halves of a sum share one scale.
template <int T>
void iq5ksr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) {
    alignas(64) uint8_t tb[64];
    for (int i = 0; i < 64; ++i) tb[i] = (uint8_t)(quant::tables::kIq5nl[i & 31] + 128);
    const __m512i table = _mm512_load_si512(tb), m15 = _mm512_set1_epi8(15), k16 = _mm512_set1_epi8(16);
    const __m512i ones = _mm512_set1_epi16(1);
    const __m512 drow = r8_row_scales_f32(g);
    g += 8 * quant::kIQ4KSMetaBytes;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ixl[4], ixh[4];  // activation dwords of chunk 2g (low nibbles), 2g + 1 (high)
    for (int k = 0; k < 4; ++k) {
        ixl[k] = iq4kr8_pair_i32(k, 4 + k);
        ixh[k] = iq4kr8_pair_i32(8 + k, 12 + k);
    }
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + quant::kIQ5KSR8Bytes * b;
        prefetch_weights<quant::kIQ5KSR8Bytes>(blk);
        __m512i sc[8], mul[8], h[4];
        for (int c = 0; c < 8; ++c) {
            const __m512i sb = ksr8_row_bytes(blk + 8 * c);
            sc[c] = _mm512_sub_epi32(_mm512_and_si512(sb, _mm512_set1_epi32(254)), _mm512_set1_epi32(127));
            mul[c] = _mm512_mask_blend_epi32(_mm512_test_epi32_mask(sb, _mm512_set1_epi32(1)), _mm512_set1_epi32(-128),
                                             _mm512_set1_epi32(-126));
        }
        for (int k = 0; k < 4; ++k) h[k] = _mm512_loadu_si512(blk + 1088 + 64 * k);
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int gp = 0; gp < 4; ++gp) {
            // the fifth bits as byte masks, added as 16 to the nibbles
            const __m512i b0 = _mm512_set1_epi8((char)(1 << (2 * gp))), b1 = _mm512_set1_epi8((char)(2 << (2 * gp)));
            __m512i lo[4], hi[4];
            for (int k = 0; k < 4; ++k) {
                const __m512i q = _mm512_loadu_si512(blk + 64 + 256 * gp + 64 * k);
                const __m512i ql = _mm512_and_si512(q, m15), qh = _mm512_and_si512(_mm512_srli_epi16(q, 4), m15);
                lo[k] = _mm512_permutexvar_epi8(_mm512_mask_add_epi8(ql, _mm512_test_epi8_mask(h[k], b0), ql, k16), table);
                hi[k] = _mm512_permutexvar_epi8(_mm512_mask_add_epi8(qh, _mm512_test_epi8_mask(h[k], b1), qh, k16), table);
            }
            for (int t = 0; t < T; ++t) {
                const uint8_t* ab = a[t] + quant::kQ8KBlockBytes * b;
                int16_t bs[4];  // per-16 code sums of chunks 2g, 2g + 1
                std::memcpy(bs, ab + quant::kQ8KOffBsums + 8 * gp, 8);
                const __m512i av = _mm512_loadu_si512(ab + quant::kQ8KOffQs + 64 * gp);
                __m512i x0 = _mm512_mullo_epi32(iq4kr8_pair_i32(bs[0], bs[1]), mul[2 * gp]);
                __m512i x1 = _mm512_mullo_epi32(iq4kr8_pair_i32(bs[2], bs[3]), mul[2 * gp + 1]);
                for (int k = 0; k < 4; ++k) {
                    x0 = _mm512_dpwssd_epi32(x0, _mm512_maddubs_epi16(lo[k], _mm512_permutexvar_epi32(ixl[k], av)), ones);
                    x1 = _mm512_dpwssd_epi32(x1, _mm512_maddubs_epi16(hi[k], _mm512_permutexvar_epi32(ixh[k], av)), ones);
                }
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(x0, sc[2 * gp]),
                                                                     _mm512_mullo_epi32(x1, sc[2 * gp + 1])));
            }
        }
        r8_block_scale<T>(drow, a, b, isum, acc);
    }
    r8_store_rows<T>(acc, y, ys);
}

// quant::iq5ks_r8_unpack_group for the prompt-batch slabs: as IQ4_KS_R8's, plus the qh bytes.
inline void iq5ksr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    constexpr int kMeta = quant::kIQ4KSMetaBytes;
    for (int r = 0; r < 8; ++r) std::memcpy(rows + rb * (size_t)r, group + kMeta * r, kMeta);
    const uint8_t* blocks = group + 8 * kMeta;
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = blocks + quant::kIQ5KSR8Bytes * blk;
        uint8_t* x0 = rows + kMeta + quant::kIQ5KSBlockBytes * (size_t)blk;
        for (int r = 0; r < 8; ++r)
            for (int c = 0; c < 8; ++c) x0[rb * (size_t)r + c] = src[8 * c + r];
        for (int j = 0; j < 4; ++j) iq4r8_put_codes(src + 64 + 256 * j, x0 + 8 + 32 * j, rb);
        iq4r8_put_codes(src + 1088, x0 + 136, rb);
    }
}

// ---- IQ2_KL_R8 ----------------------------------------------------------------------------------
// The plain IQ2_KL kernel's integers: each 5-bit pair code through two vpermb (the codebook's first
// and second weights, + 64: unsigned 1..111), interleaved so that a dword holds 4 columns of one
// row (rows 0-3 from unpacklo, 4-7 from unpackhi; 128-bit lane i columns 4i.. of a 16-column
// half), vpdpbusd against the activation dword broadcast per lane, each chunk's sum started at
// -64 x its code sum (lanes of i = 0), times its 6-bit scale ls - 32 in int32; then rowd d_a in
// float. A row's four lanes (one per 128-bit lane) are added at the end.
template <int T>
void iq2klr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) {
    alignas(64) uint8_t tf[64], ts[64];
    for (int i = 0; i < 64; ++i) {
        const uint16_t v = quant::tables::kIq2kl[i & 31];
        tf[i] = (uint8_t)((int8_t)(v & 255) + 64);
        ts[i] = (uint8_t)((int8_t)(v >> 8) + 64);
    }
    const __m512i tfirst = _mm512_load_si512(tf), tsecond = _mm512_load_si512(ts);
    const __m512i m15 = _mm512_set1_epi8(15), k16 = _mm512_set1_epi8(16), m3 = _mm512_set1_epi32(3);
    const __m512i ixd = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);  // lane 4i + r: dword i
    const __m256 d8 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
    const __m512 d03 = _mm512_broadcast_f32x4(_mm256_castps256_ps128(d8)), d47 = _mm512_broadcast_f32x4(_mm256_extractf128_ps(d8, 1));
    g += 8 * quant::kIQ23KSMetaBytes;
    __m512 acc03[T], acc47[T];
    for (int t = 0; t < T; ++t) acc03[t] = acc47[t] = _mm512_setzero_ps();
    alignas(64) uint8_t scb[64];  // scale nibbles of chunk c (byte r: row r) at 8c
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + quant::kIQ2KLR8Bytes * b;
        prefetch_weights<quant::kIQ2KLR8Bytes>(blk);
        const __m512i shw = _mm512_cvtepu16_epi32(_mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk))));
        const __m256i sl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16)), n15 = _mm256_set1_epi8(15);
        _mm256_store_si256(reinterpret_cast<__m256i*>(scb), _mm256_and_si256(sl, n15));
        _mm256_store_si256(reinterpret_cast<__m256i*>(scb + 32), _mm256_and_si256(_mm256_srli_epi16(sl, 4), n15));
        __m512i sc03[8], sc47[8];  // chunk c's scales, rows 0-3 / 4-7 in every 128-bit lane
        for (int c = 0; c < 8; ++c) {
            const __m512i hi2 = _mm512_and_si512(_mm512_srli_epi32(shw, 2 * c), m3);
            const __m512i nib = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scb + 8 * c)));
            const __m512i sc = _mm512_sub_epi32(_mm512_or_si512(nib, _mm512_slli_epi32(hi2, 4)), _mm512_set1_epi32(32));
            sc03[c] = _mm512_broadcast_i32x4(_mm512_castsi512_si128(sc));
            sc47[c] = _mm512_broadcast_i32x4(_mm512_extracti32x4_epi32(sc, 1));
        }
        const __m512i hq[2] = {_mm512_loadu_si512(blk + 560), _mm512_loadu_si512(blk + 624)};
        __m512i is03[T], is47[T];
        for (int t = 0; t < T; ++t) is03[t] = is47[t] = _mm512_setzero_si512();
        for (int c = 0; c < 4; ++c) {
            const __m512i b0 = _mm512_set1_epi8((char)(1 << (2 * c))), b1 = _mm512_set1_epi8((char)(2 << (2 * c)));
            __m512i L[2][2], H[2][2];  // [half][rows 0-3, 4-7]: chunk 2c (low nibbles), 2c + 1 (high)
            for (int h = 0; h < 2; ++h) {
                const __m512i q = _mm512_loadu_si512(blk + 48 + 128 * c + 64 * h);
                const __m512i ql = _mm512_and_si512(q, m15), qh = _mm512_and_si512(_mm512_srli_epi16(q, 4), m15);
                const __m512i il = _mm512_mask_add_epi8(ql, _mm512_test_epi8_mask(hq[h], b0), ql, k16);
                const __m512i ih = _mm512_mask_add_epi8(qh, _mm512_test_epi8_mask(hq[h], b1), qh, k16);
                const __m512i lf = _mm512_permutexvar_epi8(il, tfirst), ls = _mm512_permutexvar_epi8(il, tsecond);
                const __m512i hf = _mm512_permutexvar_epi8(ih, tfirst), hs = _mm512_permutexvar_epi8(ih, tsecond);
                L[h][0] = _mm512_unpacklo_epi8(lf, ls);
                L[h][1] = _mm512_unpackhi_epi8(lf, ls);
                H[h][0] = _mm512_unpacklo_epi8(hf, hs);
                H[h][1] = _mm512_unpackhi_epi8(hf, hs);
            }
            for (int t = 0; t < T; ++t) {
                const uint8_t* ab = a[t] + quant::kQ8KBlockBytes * b;
                int16_t bs[4];  // per-16 code sums of chunks 2c, 2c + 1
                std::memcpy(bs, ab + quant::kQ8KOffBsums + 8 * c, 8);
                const uint8_t* aq = ab + quant::kQ8KOffQs + 64 * c;
                __m512i av[4];  // the chunks' 16-column halves, dword i in 128-bit lane i
                for (int k = 0; k < 4; ++k)
                    av[k] = _mm512_permutexvar_epi32(ixd, _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(aq + 16 * k))));
                const __m512i st0 = _mm512_maskz_set1_epi32(0x000F, -64 * (bs[0] + bs[1]));
                const __m512i st1 = _mm512_maskz_set1_epi32(0x000F, -64 * (bs[2] + bs[3]));
                const __m512i x03 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(st0, L[0][0], av[0]), L[1][0], av[1]);
                const __m512i x47 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(st0, L[0][1], av[0]), L[1][1], av[1]);
                const __m512i y03 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(st1, H[0][0], av[2]), H[1][0], av[3]);
                const __m512i y47 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(st1, H[0][1], av[2]), H[1][1], av[3]);
                is03[t] = _mm512_add_epi32(is03[t], _mm512_add_epi32(_mm512_mullo_epi32(x03, sc03[2 * c]),
                                                                     _mm512_mullo_epi32(y03, sc03[2 * c + 1])));
                is47[t] = _mm512_add_epi32(is47[t], _mm512_add_epi32(_mm512_mullo_epi32(x47, sc47[2 * c]),
                                                                     _mm512_mullo_epi32(y47, sc47[2 * c + 1])));
            }
        }
        for (int t = 0; t < T; ++t) {
            float da;
            std::memcpy(&da, a[t] + quant::kQ8KBlockBytes * b + quant::kQ8KOffD, 4);
            const __m512 vda = _mm512_set1_ps(da);
            acc03[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is03[t]), _mm512_mul_ps(d03, vda), acc03[t]);
            acc47[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is47[t]), _mm512_mul_ps(d47, vda), acc47[t]);
        }
    }
    for (int t = 0; t < T; ++t) {
        const __m256 s03 = _mm256_add_ps(_mm512_castps512_ps256(acc03[t]), _mm512_extractf32x8_ps(acc03[t], 1));
        const __m256 s47 = _mm256_add_ps(_mm512_castps512_ps256(acc47[t]), _mm512_extractf32x8_ps(acc47[t], 1));
        const __m128 r03 = _mm_add_ps(_mm256_castps256_ps128(s03), _mm256_extractf128_ps(s03, 1));
        const __m128 r47 = _mm_add_ps(_mm256_castps256_ps128(s47), _mm256_extractf128_ps(s47, 1));
        _mm_storeu_ps(y + t * ys, r03);
        _mm_storeu_ps(y + t * ys + 4, r47);
    }
}

// quant::iq2kl_r8_unpack_group for the prompt-batch slabs: per 64 code bytes one vpermw transposes
// the 4 x 8 pair-byte couples (element 8i + r -> 4r + i), so each row's 8 plain bytes are adjacent.
inline void iq2klr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    constexpr int kMeta = quant::kIQ23KSMetaBytes;
    for (int r = 0; r < 8; ++r) std::memcpy(rows + rb * (size_t)r, group + kMeta * r, kMeta);
    const uint8_t* blocks = group + 8 * kMeta;
    alignas(64) uint16_t ix[32];
    for (int r = 0; r < 8; ++r)
        for (int i = 0; i < 4; ++i) ix[4 * r + i] = (uint16_t)(8 * i + r);
    const __m512i idx = _mm512_load_si512(ix);
    alignas(64) uint8_t t[64];
    auto put = [&](const uint8_t* src, uint8_t* x0) {  // 64 group bytes -> 8 plain bytes of each row
        _mm512_store_si512(t, _mm512_permutexvar_epi16(idx, _mm512_loadu_si512(src)));
        for (int r = 0; r < 8; ++r) std::memcpy(x0 + rb * (size_t)r, t + 8 * r, 8);
    };
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = blocks + quant::kIQ2KLR8Bytes * blk;
        uint8_t* x0 = rows + kMeta + quant::kIQ2KLBlockBytes * (size_t)blk;
        for (int r = 0; r < 8; ++r) {
            uint8_t* x = x0 + rb * (size_t)r;
            std::memcpy(x, src + 2 * r, 2);
            for (int q = 0; q < 4; ++q) x[2 + q] = src[16 + 8 * q + r];
        }
        for (int c = 0; c < 4; ++c)
            for (int h = 0; h < 2; ++h) put(src + 48 + 128 * c + 64 * h, x0 + 6 + 16 * c + 8 * h);
        for (int h = 0; h < 2; ++h) put(src + 560 + 64 * h, x0 + 70 + 8 * h);
    }
}

// quant::iq4xs_x8_unpack_group for the prompt-batch slabs: value i = 8c + r, so the 8 bytes at 8c
// are chunk c's scales of rows 0-7 and the plain scale nibbles and bit pairs come out of 64-bit
// words; the codes as IQ4_K_R8's.
inline void iq4xsx8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    constexpr uint64_t kLow4 = 0x0F0F0F0F0F0F0F0FULL, kLow2 = 0x0303030303030303ULL;
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = group + quant::kIQ4XSX8Bytes * blk;
        uint8_t* x0 = rows + quant::kIQ4XSBlockBytes * (size_t)blk;
        alignas(64) uint8_t ls[64];
        _mm512_store_si512(ls, iq4xsx8_scale_bytes(src));
        uint64_t v[8];  // v[c]: byte r = ls of chunk c of row r
        std::memcpy(v, ls, 64);
        uint64_t sl[4], sh[2] = {0, 0};
        for (int k = 0; k < 4; ++k) sl[k] = (v[2 * k] & kLow4) | (v[2 * k + 1] & kLow4) << 4;
        for (int c = 0; c < 8; ++c) sh[c >> 2] |= ((v[c] >> 4) & kLow2) << (2 * (c & 3));
        for (int r = 0; r < 8; ++r) {
            uint8_t* x = x0 + rb * (size_t)r;
            std::memcpy(x, src + 2 * r, 2);
            x[2] = (uint8_t)(sh[0] >> (8 * r));
            x[3] = (uint8_t)(sh[1] >> (8 * r));
            for (int k = 0; k < 4; ++k) x[4 + k] = (uint8_t)(sl[k] >> (8 * r));
        }
        for (int j = 0; j < 4; ++j) iq4r8_put_codes(src + 64 + 256 * j, x0 + 8 + 32 * j, rb);
    }
}

// quant::iq4ks_r8_unpack_group for the prompt-batch slabs: the scale bytes transposed (64-bit
// words), the codes as IQ4_XS_X8's.
inline void iq4ksr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    constexpr int kMeta = quant::kIQ4KSMetaBytes;
    for (int r = 0; r < 8; ++r) std::memcpy(rows + rb * (size_t)r, group + kMeta * r, kMeta);
    const uint8_t* blocks = group + 8 * kMeta;
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = blocks + quant::kIQ4KSR8Bytes * blk;
        uint8_t* x0 = rows + kMeta + quant::kIQ4KSBlockBytes * (size_t)blk;
        for (int r = 0; r < 8; ++r)
            for (int c = 0; c < 8; ++c) x0[rb * (size_t)r + c] = src[8 * c + r];
        for (int j = 0; j < 4; ++j) iq4r8_put_codes(src + 64 + 256 * j, x0 + 8 + 32 * j, rb);
    }
}

// ---- Q2_K_R8 -----------------------------------------------------------------------------------
// The plain Q2_K kernel's integers per 256 weights (kquant_unpack.h KQ2K): per 16-weight
// sub-block sc * sum q a (codes 0..3 as vpdpbusd's unsigned operand) and m * bsum, summed over
// the block in int32, then d_a * (d * isum - dmin * imin) in float. Per shift j a granule register
// gives 4 columns of sub-blocks 2p (lanes 0-7) and 2p + 1 (lanes 8-15), p = 4n + j.
template <int T>
void q2kr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) {
    const __m512i m3 = _mm512_set1_epi8(3), m15 = _mm512_set1_epi32(15);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ix[4];  // dwords of a 32-column activation chunk: lanes 0-7 dword k, 8-15 dword 4 + k
    for (int k = 0; k < 4; ++k) ix[k] = iq4kr8_pair_i32(k, 4 + k);
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + quant::kQ2KR8Bytes * b;
        prefetch_weights<quant::kQ2KR8Bytes>(blk);
        __m512i isum[T], imin[T];
        for (int t = 0; t < T; ++t) isum[t] = imin[t] = _mm512_setzero_si512();
        for (int n = 0; n < 2; ++n) {
            __m512i q[4];
            for (int k = 0; k < 4; ++k) q[k] = _mm512_loadu_si512(blk + 160 + 256 * n + 64 * k);
            for (int j = 0; j < 4; ++j) {
                const int p = 4 * n + j;
                const __m512i sb = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 32 + 16 * p)));
                const __m512i sc = _mm512_and_si512(sb, m15), mn = _mm512_srli_epi32(sb, 4);
                const __m128i shift = _mm_cvtsi32_si128(2 * j);
                __m512i u[4];
                for (int k = 0; k < 4; ++k) u[k] = _mm512_and_si512(_mm512_srl_epi16(q[k], shift), m3);
                for (int t = 0; t < T; ++t) {
                    const uint8_t* ab = a[t] + quant::kQ8KBlockBytes * b;
                    const __m512i sum = r8_pair_dot(u, ix, ab, n, j, _mm512_setzero_si512());
                    int16_t bs[2];  // code sums of sub-blocks 2p, 2p + 1
                    std::memcpy(bs, ab + quant::kQ8KOffBsums + 4 * p, 4);
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(sum, sc));
                    imin[t] = _mm512_add_epi32(imin[t], _mm512_mullo_epi32(iq4kr8_pair_i32(bs[0], bs[1]), mn));
                }
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk))));
        const __m512 dm = _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16))));
        for (int t = 0; t < T; ++t) {
            float da;
            std::memcpy(&da, a[t] + quant::kQ8KBlockBytes * b + quant::kQ8KOffD, 4);
            const __m512 vda = _mm512_set1_ps(da);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, vda), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin[t]), _mm512_mul_ps(dm, vda), acc[t]);
        }
    }
    r8_store_rows<T>(acc, y, ys);
}

// quant::q2k_r8_unpack_group for the prompt-batch slabs: the scale bytes transposed, the codes as
// IQ4_K_R8's.
inline void q2kr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = group + quant::kQ2KR8Bytes * blk;
        uint8_t* x0 = rows + quant::kQ2KBlockBytes * (size_t)blk;
        for (int r = 0; r < 8; ++r) {
            uint8_t* x = x0 + rb * (size_t)r;
            std::memcpy(x + 80, src + 2 * r, 2);
            std::memcpy(x + 82, src + 16 + 2 * r, 2);
            for (int sb = 0; sb < 16; ++sb) x[sb] = src[32 + 8 * sb + r];
        }
        for (int n = 0; n < 2; ++n) iq4r8_put_codes(src + 160 + 256 * n, x0 + 16 + 32 * n, rb);
    }
}

// ---- Q3_K_R8 -----------------------------------------------------------------------------------
// The plain Q3_K kernel's integers (KQ3K: v = q + 4 in 0..7, the -4 as a correction): per
// sub-block sc * (sum v a - 4 bsum), the correction as the start of each sum, summed over the
// block in int32, times d * d_a in float. Codes as Q2_K_R8's plus the high bit at 4n + j.
template <int T>
void q3kr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) {
    const __m512i m3 = _mm512_set1_epi8(3), m1 = _mm512_set1_epi8(1);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ix[4];
    for (int k = 0; k < 4; ++k) ix[k] = iq4kr8_pair_i32(k, 4 + k);
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + quant::kQ3KR8Bytes * b;
        prefetch_weights<quant::kQ3KR8Bytes>(blk);
        __m512i sc[8];
        iq4kr8_scales(blk + 16, sc);
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        __m512i h[4];
        for (int k = 0; k < 4; ++k) h[k] = _mm512_loadu_si512(blk + 112 + 64 * k);
        for (int n = 0; n < 2; ++n) {
            __m512i q[4];
            for (int k = 0; k < 4; ++k) q[k] = _mm512_loadu_si512(blk + 368 + 256 * n + 64 * k);
            for (int j = 0; j < 4; ++j) {
                const int p = 4 * n + j;
                const __m128i qshift = _mm_cvtsi32_si128(2 * j), hshift = _mm_cvtsi32_si128(p);
                __m512i u[4];
                for (int k = 0; k < 4; ++k)
                    u[k] = _mm512_or_si512(_mm512_and_si512(_mm512_srl_epi16(q[k], qshift), m3),
                                           _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(h[k], hshift), m1), 2));
                for (int t = 0; t < T; ++t) {
                    const uint8_t* ab = a[t] + quant::kQ8KBlockBytes * b;
                    int16_t bs[2];  // code sums of sub-blocks 2p, 2p + 1
                    std::memcpy(bs, ab + quant::kQ8KOffBsums + 4 * p, 4);
                    const __m512i sum = r8_pair_dot(u, ix, ab, n, j, iq4kr8_pair_i32(-4 * bs[0], -4 * bs[1]));
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(sum, sc[p]));
                }
            }
        }
        r8_block_scale<T>(r8_row_scales(blk), a, b, isum, acc);
    }
    r8_store_rows<T>(acc, y, ys);
}

// quant::q3k_r8_unpack_group for the prompt-batch slabs: codes and high bits as IQ4_K_R8's
// codes, the scales repacked per row.
inline void q3kr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = group + quant::kQ3KR8Bytes * blk;
        uint8_t* x0 = rows + quant::kQ3KBlockBytes * (size_t)blk;
        // value 8s + r: the 8 bytes at ls + 8s are sub-block s of rows 0-7, so the plain scale
        // bytes of all 8 rows come out of 64-bit words
        alignas(64) uint8_t ls[128];
        iq4r8_scale_bytes(src + 16, ls);
        uint64_t v[16], S[12];
        std::memcpy(v, ls, 128);
        for (int k = 0; k < 8; ++k) S[k] = (v[k] & 0x0F0F0F0F0F0F0F0FULL) | (v[k + 8] & 0x0F0F0F0F0F0F0F0FULL) << 4;
        for (int m = 0; m < 4; ++m) {
            uint64_t h = 0;
            for (int q = 0; q < 4; ++q) h |= ((v[m + 4 * q] >> 4) & 0x0303030303030303ULL) << (2 * q);
            S[8 + m] = h;
        }
        for (int r = 0; r < 8; ++r) {
            uint8_t* x = x0 + rb * (size_t)r;
            std::memcpy(x + 108, src + 2 * r, 2);
            for (int k = 0; k < 12; ++k) x[96 + k] = (uint8_t)(S[k] >> (8 * r));
        }
        iq4r8_put_codes(src + 112, x0, rb);
        for (int n = 0; n < 2; ++n) iq4r8_put_codes(src + 368 + 256 * n, x0 + 32 + 32 * n, rb);
    }
}

// ---- IQ2_K_R8, IQ3_K_R8 -------------------------------------------------------------------------
// The plain IQ2_K / IQ3_K kernels' integers (kquant_unpack.h KIq2K, KIq3K: levels of the first
// value set, sc * sum v a + f sc e bsum per 16-weight sub-block, e the value-set bit, f = 5 / 4).
// Their levels are signed and non-linear, so the codes go through one vpshufb to the levels + o
// (o = 32 / 64: 1..49 / 1..111), vpdpbusd's unsigned operand (exact, no pair sums to saturate),
// and each sub-block's sum gets sc (f e - o) bsum. Every sum is an exact integer, so the block's
// int32 per row is the plain kernel's; then d * d_a in float. Lanes as Q2_K_R8's.

// The value-set (or sign) bits of the 8 rows (u16 at p16) in a dword vector, lanes 8-15 shifted
// down by one: bit 2p is sub-block 2p in lanes 0-7 and 2p + 1 in lanes 8-15.
inline __m512i iqkr8_pair_bits(const uint8_t* p16) {
    const __m256i e8 = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p16)));
    return _mm512_inserti64x4(_mm512_castsi256_si512(e8), _mm256_srli_epi32(e8, 1), 1);
}

// IQ2_K_R8: 2-bit codes, scales nibble - 8, f = 5, o = 32.
struct Iq2KR8Codes {
    static constexpr int kBytes = quant::kIQ2KR8Bytes, kQs = 96, kMeta = 0;
    __m512i ex;
    static __m512i levels() {  // -31, -13, 1, 17 plus 32
        return _mm512_broadcast_i32x4(_mm_setr_epi8(1, 19, 33, 49, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    }
    // 128-bit lane L of the unpacked low / high nibbles: p = 2L (first 64 bytes), 2L + 1 (last 64)
    void begin(const uint8_t* blk, int8_t* scb) {
        ex = iqkr8_pair_bits(blk + 16);
        const __m512i m15 = _mm512_set1_epi8(15), k8 = _mm512_set1_epi8(8), sb = _mm512_loadu_si512(blk + 32);
        const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(sb, m15), k8);
        const __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(sb, 4), m15), k8);
        _mm512_store_si512(scb, _mm512_unpacklo_epi64(lo, hi));
        _mm512_store_si512(scb + 64, _mm512_unpackhi_epi64(lo, hi));
    }
    // sc and sc (f e - o) of sub-blocks 2p, 2p + 1
    void scales(const int8_t* scb, int p, __m512i& sc, __m512i& sce) const {
        sc = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(scb + 64 * (p & 1) + 16 * (p >> 1))));
        const __mmask16 e = _mm512_test_epi32_mask(ex, _mm512_set1_epi32(1 << (2 * p)));
        sce = _mm512_mullo_epi32(sc, _mm512_mask_blend_epi32(e, _mm512_set1_epi32(-32), _mm512_set1_epi32(-27)));
    }
    // codes of shift j (sub-block pair p) of the 4 granule vectors q
    static void codes_of(const __m512i (&q)[4], int j, int, __m512i (&c)[4]) {
        const __m128i shift = _mm_cvtsi32_si128(2 * j);
        for (int k = 0; k < 4; ++k) c[k] = _mm512_and_si512(_mm512_srl_epi16(q[k], shift), _mm512_set1_epi8(3));
    }
    void codes(const __m512i (&q)[4], int j, int p, __m512i (&c)[4]) const { codes_of(q, j, p, c); }
};

// IQ3_K_R8: 2-bit codes plus the qh plane bit (Q3_K_R8's granules), scales +-(2 n + 1), f = 4, o = 64.
struct Iq3KR8Codes {
    static constexpr int kBytes = quant::kIQ3KR8Bytes, kQs = 368, kMeta = 0;
    __m512i ex, sx, h[4];
    static __m512i levels() {  // -63, -40, -23, -10, 1, 13, 28, 47 plus 64
        return _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 41, 54, 65, 77, 92, 111, 0, 0, 0, 0, 0, 0, 0, 0));
    }
    void begin(const uint8_t* blk, int8_t* scb) {  // the scale magnitudes as Iq2KR8Codes's scales
        ex = iqkr8_pair_bits(blk + 16);
        sx = iqkr8_pair_bits(blk + 32);
        for (int k = 0; k < 4; ++k) h[k] = _mm512_loadu_si512(blk + 112 + 64 * k);
        const __m512i m15 = _mm512_set1_epi8(15), m1 = _mm512_set1_epi8(1), sb = _mm512_loadu_si512(blk + 48);
        const __m512i lo = _mm512_and_si512(sb, m15), hi = _mm512_and_si512(_mm512_srli_epi16(sb, 4), m15);
        const __m512i mlo = _mm512_add_epi8(_mm512_add_epi8(lo, lo), m1), mhi = _mm512_add_epi8(_mm512_add_epi8(hi, hi), m1);
        _mm512_store_si512(scb, _mm512_unpacklo_epi64(mlo, mhi));
        _mm512_store_si512(scb + 64, _mm512_unpackhi_epi64(mlo, mhi));
    }
    void scales(const int8_t* scb, int p, __m512i& sc, __m512i& sce) const {
        const __m512i bit = _mm512_set1_epi32(1 << (2 * p));
        const __m512i mag =
            _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(scb + 64 * (p & 1) + 16 * (p >> 1))));
        sc = _mm512_mask_sub_epi32(mag, _mm512_test_epi32_mask(sx, bit), _mm512_setzero_si512(), mag);
        sce = _mm512_mullo_epi32(
            sc, _mm512_mask_blend_epi32(_mm512_test_epi32_mask(ex, bit), _mm512_set1_epi32(-64), _mm512_set1_epi32(-60)));
    }
    // h: the qh granule vectors (bit p: sub-block pair p)
    static void codes_of(const __m512i (&q)[4], const __m512i (&h)[4], int j, int p, __m512i (&c)[4]) {
        const __m128i qshift = _mm_cvtsi32_si128(2 * j), hshift = _mm_cvtsi32_si128(p);
        const __m512i m3 = _mm512_set1_epi8(3), m1 = _mm512_set1_epi8(1);
        for (int k = 0; k < 4; ++k)
            c[k] = _mm512_or_si512(_mm512_and_si512(_mm512_srl_epi16(q[k], qshift), m3),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(h[k], hshift), m1), 2));
    }
    void codes(const __m512i (&q)[4], int j, int p, __m512i (&c)[4]) const { codes_of(q, h, j, p, c); }
};

// IQ2_KS_R8 / IQ3_KS_R8: one 5-bit scale (ls - 16) and value-set bit per 32-weight chunk, so
// both halves of a register (sub-blocks 2p, 2p + 1 = chunk p) share them; the fp16 row scales
// at the group's start (kMeta bytes per row) take the place of the block scales. The plain
// kernels' integers as IQ2_K_R8's / IQ3_K_R8's.
template <int Off, int Base>
struct KsR8Scales {
    __m512i ex, hb;
    // scb: the scale nibbles of chunk c (byte r: row r) at 8 x Chunk8(c)
    void begin(const uint8_t* blk) {
        ex = ksr8_row_bytes(blk);
        hb = ksr8_row_bytes(blk + 8);
    }
    // sc = ls - 16 and sc (f e - o) of chunk p (Base: f - o and -o for e = 1, 0)
    void scales(const uint8_t* nib8, int p, __m512i& sc, __m512i& sce) const {
        const __m512i bit = _mm512_set1_epi32(1 << p);
        const __m512i n = _mm512_sub_epi32(ksr8_row_bytes(nib8), _mm512_set1_epi32(16));
        sc = _mm512_mask_add_epi32(n, _mm512_test_epi32_mask(hb, bit), n, _mm512_set1_epi32(16));
        sce = _mm512_mullo_epi32(
            sc, _mm512_mask_blend_epi32(_mm512_test_epi32_mask(ex, bit), _mm512_set1_epi32(-Off), _mm512_set1_epi32(Base)));
    }
};

// IQ2_KS_R8: nibble byte q holds chunks 2q (low) and 2q + 1 (high); levels and f, o as IQ2_K's.
struct Iq2KsR8Codes {
    static constexpr int kBytes = quant::kIQ2KSR8Bytes, kQs = 48, kMeta = quant::kIQ23KSMetaBytes;
    KsR8Scales<32, -27> ks;
    static __m512i levels() { return Iq2KR8Codes::levels(); }
    // scb: the chunks' nibbles, chunk c at 8 c
    void begin(const uint8_t* blk, int8_t* scb) {
        ks.begin(blk);
        const __m256i sb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16)), m15 = _mm256_set1_epi8(15);
        const __m256i lo = _mm256_and_si256(sb, m15), hi = _mm256_and_si256(_mm256_srli_epi16(sb, 4), m15);
        // lo: chunks 0, 2 | 4, 6 (8 bytes each), hi: 1, 3 | 5, 7
        const __m256i x = _mm256_unpacklo_epi64(lo, hi), z = _mm256_unpackhi_epi64(lo, hi);  // 0 1 | 4 5, 2 3 | 6 7
        _mm256_store_si256(reinterpret_cast<__m256i*>(scb), _mm256_permute2x128_si256(x, z, 0x20));
        _mm256_store_si256(reinterpret_cast<__m256i*>(scb + 32), _mm256_permute2x128_si256(x, z, 0x31));
    }
    void scales(const int8_t* scb, int p, __m512i& sc, __m512i& sce) const {
        ks.scales(reinterpret_cast<const uint8_t*>(scb) + 8 * p, p, sc, sce);
    }
    void codes(const __m512i (&q)[4], int j, int p, __m512i (&c)[4]) const {
        Iq2KR8Codes::codes_of(q, j, p, c);
    }
};

// IQ3_KS_R8: nibble byte q holds chunks q (low) and q + 4 (high); levels and f, o as IQ3_K's.
struct Iq3KsR8Codes {
    static constexpr int kBytes = quant::kIQ3KSR8Bytes, kQs = 304, kMeta = quant::kIQ23KSMetaBytes;
    KsR8Scales<64, -60> ks;
    __m512i h[4];
    static __m512i levels() { return Iq3KR8Codes::levels(); }
    void begin(const uint8_t* blk, int8_t* scb) {
        ks.begin(blk);
        for (int k = 0; k < 4; ++k) h[k] = _mm512_loadu_si512(blk + 48 + 64 * k);
        const __m256i sb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16)), m15 = _mm256_set1_epi8(15);
        _mm256_store_si256(reinterpret_cast<__m256i*>(scb), _mm256_and_si256(sb, m15));
        _mm256_store_si256(reinterpret_cast<__m256i*>(scb + 32), _mm256_and_si256(_mm256_srli_epi16(sb, 4), m15));
    }
    void scales(const int8_t* scb, int p, __m512i& sc, __m512i& sce) const {
        ks.scales(reinterpret_cast<const uint8_t*>(scb) + 8 * p, p, sc, sce);
    }
    void codes(const __m512i (&q)[4], int j, int p, __m512i (&c)[4]) const { Iq3KR8Codes::codes_of(q, h, j, p, c); }
};

template <class Codes, int T>
void iqkr8_tile(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) {
    const __m512i levels = Codes::levels();
    [[maybe_unused]] const __m512 drow = Codes::kMeta ? r8_row_scales(g) : _mm512_setzero_ps();
    g += 8 * Codes::kMeta;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512i ix[4];
    for (int k = 0; k < 4; ++k) ix[k] = iq4kr8_pair_i32(k, 4 + k);
    alignas(64) int8_t scb[128];  // scales of sub-blocks 2p (bytes 0-7, row r at r), 2p + 1 (8-15)
    Codes cd;
    for (int64_t b = 0; b < nbk; ++b) {
        const uint8_t* blk = g + Codes::kBytes * b;
        prefetch_weights<Codes::kBytes>(blk);
        cd.begin(blk, scb);
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int n = 0; n < 2; ++n) {
            __m512i q[4];
            for (int k = 0; k < 4; ++k) q[k] = _mm512_loadu_si512(blk + Codes::kQs + 256 * n + 64 * k);
            for (int j = 0; j < 4; ++j) {
                const int p = 4 * n + j;
                __m512i sc, sce, u[4];
                cd.scales(scb, p, sc, sce);
                cd.codes(q, j, p, u);
                for (int k = 0; k < 4; ++k) u[k] = _mm512_shuffle_epi8(levels, u[k]);
                for (int t = 0; t < T; ++t) {
                    const uint8_t* ab = a[t] + quant::kQ8KBlockBytes * b;
                    const __m512i sum = r8_pair_dot(u, ix, ab, n, j, _mm512_setzero_si512());
                    int16_t bs[2];  // code sums of sub-blocks 2p, 2p + 1
                    std::memcpy(bs, ab + quant::kQ8KOffBsums + 4 * p, 4);
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(sum, sc));
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(iq4kr8_pair_i32(bs[0], bs[1]), sce));
                }
            }
        }
        r8_block_scale<T>(Codes::kMeta ? drow : r8_row_scales(blk), a, b, isum, acc);
    }
    r8_store_rows<T>(acc, y, ys);
}

// quant::iq2k_r8_unpack_group for the prompt-batch slabs: the codes as Q2_K_R8's.
inline void iq2kr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = group + quant::kIQ2KR8Bytes * blk;
        uint8_t* x0 = rows + quant::kIQ2KBlockBytes * (size_t)blk;
        for (int r = 0; r < 8; ++r) quant::iq2k_r8_get_meta(src, x0 + rb * (size_t)r, r);
        for (int n = 0; n < 2; ++n) iq4r8_put_codes(src + 96 + 256 * n, x0 + 12 + 32 * n, rb);
    }
}

// quant::iq3k_r8_unpack_group for the prompt-batch slabs: qh and qs as Q3_K_R8's.
inline void iq3kr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = group + quant::kIQ3KR8Bytes * blk;
        uint8_t* x0 = rows + quant::kIQ3KBlockBytes * (size_t)blk;
        for (int r = 0; r < 8; ++r) quant::iq3k_r8_get_meta(src, x0 + rb * (size_t)r, r);
        iq4r8_put_codes(src + 112, x0 + 78, rb);
        for (int n = 0; n < 2; ++n) iq4r8_put_codes(src + 368 + 256 * n, x0 + 14 + 32 * n, rb);
    }
}

// quant::iq2ks_r8_unpack_group / iq3ks_r8_unpack_group for the prompt-batch slabs: the row scales,
// each block's extra and scale bytes per row, the codes (IQ3: and qh) as Q2_K_R8's.
template <bool Iq3>
inline void ksr8_unpack_group_fast(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    constexpr int kMeta = quant::kIQ23KSMetaBytes;
    constexpr int kGroup = Iq3 ? quant::kIQ3KSR8Bytes : quant::kIQ2KSR8Bytes;
    constexpr int kPlain = Iq3 ? quant::kIQ3KSBlockBytes : quant::kIQ2KSBlockBytes;
    for (int r = 0; r < 8; ++r) std::memcpy(rows + rb * (size_t)r, group + kMeta * r, kMeta);
    const uint8_t* blocks = group + 8 * kMeta;
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        const uint8_t* src = blocks + kGroup * blk;
        uint8_t* x0 = rows + kMeta + kPlain * (size_t)blk;
        for (int r = 0; r < 8; ++r) quant::ks_r8_get_meta<!Iq3>(src, x0 + rb * (size_t)r, r);
        if constexpr (Iq3) iq4r8_put_codes(src + 48, x0 + 70, rb);
        for (int n = 0; n < 2; ++n) iq4r8_put_codes(src + (Iq3 ? 304 : 48) + 256 * n, x0 + 6 + 32 * n, rb);
    }
}

// The driver of these layouts: the tiles below kIq4KR8PlainMinTokens tokens (= the plain kernels'
// re-encoding threshold, kConvMinTokens), then unpacked slabs for the plain kernel.
struct Iq4KR8Tiles {
    template <int T>
    static void run(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) { iq4kr8_tile<T>(g, nbk, a, y, ys); }
};
template <class Codes>
struct IqkR8Tiles {
    template <int T>
    static void run(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) { iqkr8_tile<Codes, T>(g, nbk, a, y, ys); }
};
struct Q2KR8Tiles {
    template <int T>
    static void run(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) { q2kr8_tile<T>(g, nbk, a, y, ys); }
};
struct Q3KR8Tiles {
    template <int T>
    static void run(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) { q3kr8_tile<T>(g, nbk, a, y, ys); }
};
struct Iq2KlR8Tiles {
    template <int T>
    static void run(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) { iq2klr8_tile<T>(g, nbk, a, y, ys); }
};
struct Iq5KsR8Tiles {
    template <int T>
    static void run(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) { iq5ksr8_tile<T>(g, nbk, a, y, ys); }
};
template <class Scales>
struct Iq4X8Tiles {
    template <int T>
    static void run(const uint8_t* g, int64_t nbk, const uint8_t* const* a, float* y, int64_t ys) { iq4x8_tile<Scales, T>(g, nbk, a, y, ys); }
};
template <class Tiles, R8UnpackGroupFn Unpack, MatmulFn Plain>
void iq4r8_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    if (nt >= kIq4KR8PlainMinTokens) return r8_plain_slabs(Unpack, Plain, w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    r8_token_tiles(r0, r1, nt, [&](auto tiles, int64_t r, int64_t t0) {
        constexpr int T = decltype(tiles)::value;
        const uint8_t* a[T];
        for (int t = 0; t < T; ++t) a[t] = act + (size_t)(t0 + t) * arb;
        Tiles::template run<T>(w + (size_t)r * wrb, ne0 / 256, a, y + t0 * ys + r, ys);
    });
}

}  // namespace
}  // namespace ikllm::cpu
