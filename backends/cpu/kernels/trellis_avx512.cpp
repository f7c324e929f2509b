// AVX-512 kernels of the trellis types (quant-formats.md §10) against Q8_2_X4 activations (§15),
// in three forms by the number of tokens of a call:
//  * 1-3 tokens (IQ1/2/4_KT): the generator's masked state dotted straight with the activations
//    (dot_direct), no decoded block;
//  * up to 15: each 256-weight block decoded to bytes (16 values per zmm: two codes, lane j
//    multiplies the seed by MULT^(j+1); the byte sum of the masked state is one VNNI dot product
//    with 0x01010101), as magnitudes and sign masks, then dotted with every token of the tile
//    (dot_block_signs);
//  * 16 and more: rows decoded into panels of the Q8_0 family's GEMM, as the reference repacks
//    them to Q8_0_R8 from 32 (fill_kt_panel).
// Sub-block scales follow trellis_kt.h.
#include "kernels/interleaved_common.h"

#include <cstring>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"
#include "kernels/trellis_kt.h"
#include "kernels/trellis_direct.h"
#include "kernels/legacy_panel_avx512.h"

namespace ikllm::cpu {
namespace {

using namespace quant;

// Byte sums (0..252) of (x0 * mpow) & mask per 32-bit lane, narrowed to 16 bytes.
inline __m128i kt_lanes16(__m512i x0, __m512i mpow) {
    const __m512i x = _mm512_and_si512(_mm512_mullo_epi32(x0, mpow), _mm512_set1_epi32((int)kKtMask));
    return _mm512_cvtepi32_epi8(_mm512_dpbusd_epi32(_mm512_setzero_si512(), x, _mm512_set1_epi32(0x01010101)));
}
inline __m256i join(__m128i lo, __m128i hi) { return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1); }

inline __m512i mpow_pattern(int G) {  // lanes j: MULT^((j mod G) + 1)
    alignas(64) uint32_t m[16];
    for (int j = 0; j < 16; ++j) m[j] = kt_mult_pow(j % G);
    return _mm512_load_si512(m);
}
// Decoded block: u = v + 128 (unsigned bytes) and float scales per 32 weights; or (IQ3_KT's
// tiles, decode_iq3_kt_signs) u = |v| with neg: per 64 weights, the lanes where v < 0.
struct Block {
    alignas(64) uint8_t u[256];
    float s[8];
    uint64_t neg[4];
};

// IQ2_KT / IQ3_KT: 32 codes of 8 weights; out[i] = byte sums of code i's lanes, in order.
inline void gen8(const uint8_t* codes, uint8_t* out) {
    const __m512i mp = mpow_pattern(8), off = _mm512_set1_epi32((int)kKtOffset);
    for (int h = 0; h < 2; ++h) {
        const __m512i c = _mm512_add_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(codes + 32 * h))), off);
        for (int p = 0; p < 8; ++p) {
            const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * p), _mm256_set1_epi32(2 * p + 1), 1);
            _mm_store_si128((__m128i*)(out + 128 * h + 16 * p), kt_lanes16(_mm512_permutexvar_epi32(idx, c), mp));
        }
    }
}

// IQ1_KT's 13-bit codes of chunk c (sub-blocks 2c, 2c+1; groups i = 0..7 of the chunk):
// ql byte 8 + 8c + i, nibble c / 2 of qh byte 40 + 4 (2c mod 4) + i, bit 4 + i mod 4 of sh[2c + i / 4].
inline __m256i iq1_kt_codes(const uint8_t* b, int c) {
    const __m256i ql = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 8 + 8 * c)));
    const __m256i qh = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 40 + 4 * ((2 * c) % 4))));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * (c / 2)), _mm256_set1_epi32(15));
    const __m256i sh = _mm256_setr_epi32(b[2 * c], b[2 * c], b[2 * c], b[2 * c], b[2 * c + 1], b[2 * c + 1], b[2 * c + 1], b[2 * c + 1]);
    const __m256i top = _mm256_and_si256(_mm256_srlv_epi32(sh, _mm256_setr_epi32(4, 5, 6, 7, 4, 5, 6, 7)), _mm256_set1_epi32(1));
    return _mm256_or_si256(ql, _mm256_or_si256(_mm256_slli_epi32(hi, 8), _mm256_slli_epi32(top, 12)));
}

void decode_iq1_kt(const uint8_t* b, float d, Block& o) {
    alignas(64) uint16_t c[32];  // code of 8-weight group 4 ib + g
    for (int ch = 0; ch < 4; ++ch) _mm_store_si128((__m128i*)(c + 8 * ch), _mm256_cvtepi32_epi16(iq1_kt_codes(b, ch)));
    gen8((const uint8_t*)c, o.u);
    const __m512i two = _mm512_set1_epi8(2);  // byte sum - 126 + 128
    for (int i = 0; i < 4; ++i)
        _mm512_store_si512(o.u + 64 * i, _mm512_add_epi8(_mm512_load_si512(o.u + 64 * i), two));
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
}

void decode_iq2_kt(const uint8_t* b, float d, Block& o) {
    gen8(b + 4, o.u);
    const __m512i two = _mm512_set1_epi8(2);  // byte sum - 126 + 128
    for (int i = 0; i < 4; ++i)
        _mm512_store_si512(o.u + 64 * i, _mm512_add_epi8(_mm512_load_si512(o.u + 64 * i), two));
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
}

void decode_iq3_kt(const uint8_t* b, float d, Block& o) {
    gen8(b + 4, o.u);
    const __m256i qh = _mm256_loadu_si256((const __m256i*)(b + 68));
    const __m256i bias = _mm256_set1_epi8((char)kKtBias), zero = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ3_KT>(d, nib(b[ib % 4], ib / 4));
        const __m256i a = _mm256_abs_epi8(_mm256_sub_epi8(_mm256_load_si256((const __m256i*)(o.u + 32 * ib)), bias));
        const __mmask32 neg = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(1 << ib)));
        const __m256i v = _mm256_mask_sub_epi8(a, neg, zero, a);
        _mm256_store_si256((__m256i*)(o.u + 32 * ib), _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)));
    }
}

// IQ3_KT for the tiles: magnitudes |v| and the sign masks, so a token's dot is one vpdpbusd on
// its codes negated under the masks (the same 4-weight integer sums as v + 128 against the
// codes less 128 x their sum, without the second vpdpbusd).
void decode_iq3_kt_signs(const uint8_t* b, float d, Block& o) {
    gen8(b + 4, o.u);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(b + 68)));
    const __m512i bias = _mm512_set1_epi8((char)kKtBias);
    for (int c = 0; c < 4; ++c) {  // 64 weights: sub-blocks 2c (bytes 0-31), 2c + 1 (32-63)
        const __m512i v = _mm512_sub_epi8(_mm512_load_si512(o.u + 64 * c), bias);
        _mm512_store_si512(o.u + 64 * c, _mm512_abs_epi8(v));
        const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * c))), _mm256_set1_epi8((char)(1 << (2 * c + 1))), 1);
        o.neg[c] = _mm512_test_epi8_mask(qh, bit);
    }
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ3_KT>(d, nib(b[ib % 4], ib / 4));
}

// The 8 IQ4_KT codes of sub-block ib (§10.5), offset included, one per lane.
inline __m256i kt4_codes(const uint8_t* b, int ib, uint32_t S, uint32_t offset) {
    const __m256i ql = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 32 + 8 * ib)));
    const __m256i qh = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 96 + 8 * (ib % 4))));
    const __m256i hi4 = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * (ib / 4)), _mm256_set1_epi32(15));
    const __m256i top = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)S), _mm256_setr_epi32(8, 11, 14, 17, 20, 23, 26, 29)),
                                         _mm256_set1_epi32(7));
    const __m256i c = _mm256_or_si256(ql, _mm256_or_si256(_mm256_slli_epi32(hi4, 8), _mm256_slli_epi32(top, 12)));
    return _mm256_add_epi32(c, _mm256_set1_epi32((int)offset));
}

void decode_iq4_kt(const uint8_t* b, float d, Block& o) {
    const __m512i mp = mpow_pattern(4);
    const __m512i two = _mm512_set1_epi8(2);
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t S = rd_u32(b + 4 * ib);
        o.s[ib] = kt_scale<T_IQ4_KT>(d, (int)((S & 255) >> 1) - 64);
        const uint32_t offset = (S & 1) ? kKtOffsetIq4Odd : kKtOffset;
        const __m512i cv = _mm512_zextsi256_si512(kt4_codes(b, ib, S, offset));
        // lanes 4q..4q+3 take code 4h + q (h = half of the sub-block)
        const __m512i i0 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        const __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(4));
        const __m256i v = join(kt_lanes16(_mm512_permutexvar_epi32(i0, cv), mp),
                               kt_lanes16(_mm512_permutexvar_epi32(i1, cv), mp));
        _mm256_store_si256((__m256i*)(o.u + 32 * ib), _mm256_add_epi8(v, _mm512_castsi512_si256(two)));
    }
}

// A decoded block (u = v + 128) in the sign form of decode_iq3_kt_signs.
inline void to_signs(Block& o) {
    for (int c = 0; c < 4; ++c) {
        const __m512i v = _mm512_xor_si512(_mm512_load_si512(o.u + 64 * c), _mm512_set1_epi8((char)0x80));
        o.neg[c] = _mm512_movepi8_mask(v);
        _mm512_store_si512(o.u + 64 * c, _mm512_abs_epi8(v));
    }
}

// acc += Σ_ib (s_ib * d_act) * dot(v_ib, a_ib) for a block in the sign form: every 4-weight dot
// exact (|v| against the codes negated under the sign masks, one vpdpbusd per 64 weights).
inline void dot_block_signs(const Block& o, const uint8_t* a, __m512& acc) {
    const __m512i zero = _mm512_setzero_si512();
    for (int grp = 0; grp < 2; ++grp) {
        const uint8_t* G = a + 144 * grp;
        const __m128 da = _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i*)G)), 16));
        const __m512 c = _mm512_castps128_ps512(_mm_mul_ps(_mm_loadu_ps(o.s + 4 * grp), da));
        for (int h = 0; h < 2; ++h) {
            const __m512i q = _mm512_loadu_si512(G + 16 + 64 * h);
            const __m512i qs = _mm512_mask_sub_epi8(q, o.neg[2 * grp + h], zero, q);
            const __m512i p = _mm512_dpbusd_epi32(zero, _mm512_load_si512(o.u + 128 * grp + 64 * h), qs);
            const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * h), _mm256_set1_epi32(2 * h + 1), 1);
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(idx, c), acc);
        }
    }
}

// ---- Direct form for a few tokens: no decoded block ------------------------------------------
// For IQ1_KT / IQ2_KT / IQ4_KT a weight is (byte sum of t) - 126 with t = (seed * MULT^(j+1)) & mask,
// so a * v = vpdpbusd(t, a in all four bytes) - 126 a: the masked state goes straight into the
// dot product, against activations rearranged once per call (direct_act). Lane l of chunk part k
// (k = 0..3) holds weight 4 l + k of the 64-weight chunk, so the four parts summed give lane l
// the same 4-weight integer sums as dot_block_signs' lanes, and the same float operations follow.

// The seeds (code + offset) of a 64-weight chunk, lane l taking the code of weight 4 l (+ k),
// and the multipliers of the four parts.
struct Seeds {
    __m512i x[4];  // chunk c = 0..3 of the block
    float s[8];
};

// G = 8 (IQ1_KT, IQ2_KT): lane l in code group l / 2, position 4 (l mod 2) + k.
inline __m512i seeds8(__m256i codes8) {  // 8 codes (offset added) of one chunk, one per 32-bit lane
    const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_epi32(idx, _mm512_zextsi256_si512(codes8));
}
struct Mult8Table {
    alignas(64) uint32_t m[4][16];
    constexpr Mult8Table() : m{} {
        for (int k = 0; k < 4; ++k)
            for (int l = 0; l < 16; ++l) m[k][l] = kt_mult_pow(4 * (l % 2) + k);
    }
};
inline constexpr Mult8Table kMult8{};
inline __m512i mult8(int k) { return _mm512_load_si512(kMult8.m[k]); }

void seeds_iq2_kt(const uint8_t* b, float d, Seeds& o) {
    const __m256i off = _mm256_set1_epi32((int)kKtOffset);
    for (int c = 0; c < 4; ++c)
        o.x[c] = seeds8(_mm256_add_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(b + 4 + 16 * c))), off));
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
}

void seeds_iq1_kt(const uint8_t* b, float d, Seeds& o) {
    const __m256i off = _mm256_set1_epi32((int)kKtOffset);
    for (int c = 0; c < 4; ++c) o.x[c] = seeds8(_mm256_add_epi32(iq1_kt_codes(b, c), off));
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
}

// G = 4 (IQ4_KT): lane l is code group l of the chunk (sub-block 2c + l / 8), position k.
inline __m512i mult4(int k) {
    static constexpr uint32_t kPow[4] = {kt_mult_pow(0), kt_mult_pow(1), kt_mult_pow(2), kt_mult_pow(3)};
    return _mm512_set1_epi32((int)kPow[k]);
}

// IQ4_KT per 64-weight chunk c (sub-blocks 2c, 2c+1; lane i = group jj = 16c + i): ql byte 32 + jj,
// nibble c / 2 of qh byte 96 + jj mod 32, bits 8 + 3 (i mod 8) of S_(2c + i / 8), offset by S & 1.
void seeds_iq4_kt(const uint8_t* b, float d, Seeds& o) {
    const __m256i S = _mm256_loadu_si256((const __m256i*)b);
    const __m256i ls = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_and_si256(S, _mm256_set1_epi32(255)), 1), _mm256_set1_epi32(64));
    _mm256_storeu_ps(o.s, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(ls)));  // kt_scale<IQ4_KT>: d * s
    const __m512i S2 = _mm512_castsi256_si512(S);
    const __m512i shift = _mm512_setr_epi32(8, 11, 14, 17, 20, 23, 26, 29, 8, 11, 14, 17, 20, 23, 26, 29);
    const __m512i seven = _mm512_set1_epi32(7), fifteen = _mm512_set1_epi32(15), one = _mm512_set1_epi32(1);
    for (int c = 0; c < 4; ++c) {
        const __m512i Sl = _mm512_permutexvar_epi32(_mm512_inserti64x4(_mm512_set1_epi32(2 * c), _mm256_set1_epi32(2 * c + 1), 1), S2);
        const __m512i ql = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(b + 32 + 16 * c)));
        const __m512i qh = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(b + 96 + 16 * (c % 2))));
        const __m512i hi4 = _mm512_and_si512(_mm512_srli_epi32(qh, 4 * (c / 2)), fifteen);
        const __m512i top = _mm512_and_si512(_mm512_srlv_epi32(Sl, shift), seven);
        // code | (S & 1) << 15, offset 4096 (quant-formats.md §10.5)
        const __m512i code = _mm512_or_si512(_mm512_or_si512(ql, _mm512_slli_epi32(hi4, 8)),
                                             _mm512_or_si512(_mm512_slli_epi32(top, 12), _mm512_slli_epi32(_mm512_and_si512(Sl, one), 15)));
        o.x[c] = _mm512_add_epi32(code, _mm512_set1_epi32((int)kKtOffset));
    }
}

// One token's activations for the direct form: per 64 codes, four parts (part k lane l: code
// 4 l + k in all four bytes) and -126 x the lane's 4-code sum; the Q8_2_X4 headers stay in act.
constexpr size_t kDirectChunkBytes = 5 * 64;
inline void direct_act(const uint8_t* act, int64_t nb, uint8_t* out) {
    const __m512i bias = _mm512_set1_epi8((char)kKtBias);
    for (int64_t b = 0; b < nb; ++b)
        for (int c = 0; c < 4; ++c) {
            const __m512i q = _mm512_loadu_si512(act + 288 * b + 144 * (c / 2) + 16 + 64 * (c % 2));
            uint8_t* o = out + ((size_t)b * 4 + c) * kDirectChunkBytes;
            const __m512i lanes = _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C));
            for (int k = 0; k < 4; ++k)  // in-lane shuffle: code 4 l + k stays in l's 128-bit lane
                _mm512_store_si512(o + 64 * k, _mm512_shuffle_epi8(q, _mm512_add_epi8(lanes, _mm512_set1_epi8((char)k))));
            _mm512_store_si512(o + 256, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, q)));
        }
}

// acc[t] += the block's products for tokens t < tn: dot_block_signs' integer lane sums (4-weight
// groups, each exact) and float operations. pa: token 0's DirectAct data of this block.
template <int G, int TN>
inline void dot_direct(const Seeds& o, const uint8_t* pa, size_t pstride, const uint8_t* a, size_t arb, __m512* acc) {
    const __m512i mask = _mm512_set1_epi32((int)kKtMask);
    __m512i m[4];
    for (int k = 0; k < 4; ++k) m[k] = G == 8 ? mult8(k) : mult4(k);
    for (int grp = 0; grp < 2; ++grp) {  // 128 weights: chunks 2 grp + h, one Q8_2_X4 group
        __m512i t[2][4];
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 4; ++k) t[h][k] = _mm512_and_si512(_mm512_mullo_epi32(o.x[2 * grp + h], m[k]), mask);
        const __m128 s4 = _mm_loadu_ps(o.s + 4 * grp);
        for (int i = 0; i < TN; ++i) {
            const uint8_t* G0 = a + (size_t)i * arb + 144 * grp;
            const __m128 da = _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i*)G0)), 16));
            const __m512 c = _mm512_castps128_ps512(_mm_mul_ps(s4, da));
            for (int h = 0; h < 2; ++h) {
                const uint8_t* P = pa + (size_t)i * pstride + (size_t)(2 * grp + h) * kDirectChunkBytes;
                __m512i p = _mm512_load_si512(P + 256);
                for (int k = 0; k < 4; ++k) p = _mm512_dpbusd_epi32(p, t[h][k], _mm512_load_si512(P + 64 * k));
                const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * h), _mm256_set1_epi32(2 * h + 1), 1);
                acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(idx, c), acc[i]);
            }
        }
    }
}

// The direct form's pieces for trellis_direct.h.
template <void (*SeedsOf)(const uint8_t*, float, Seeds&), int G>
struct Direct {
    using Acc = __m512;
    using Seeds = ::ikllm::cpu::Seeds;
    static constexpr size_t kPrepBytes = 4 * kDirectChunkBytes;
    static Acc zero() { return _mm512_setzero_ps(); }
    static float hsum(Acc v) { return gti_hsum512(v); }
    static void prep(const uint8_t* act, int64_t nb, uint8_t* out) { direct_act(act, nb, out); }
    static void seeds(const uint8_t* b, float d, Seeds& s) { SeedsOf(b, d, s); }
    template <int TN>
    static void dot(const Seeds& o, const uint8_t* pa, size_t pstride, const uint8_t* a, size_t arb, Acc* acc) {
        dot_direct<G, TN>(o, pa, pstride, a, arb, acc);
    }
};

template <void (*Decode)(const uint8_t*, float, Block&)>
void fill_kt_panel(const uint8_t* w, size_t wrb, size_t bb, int64_t r0, int rows, int64_t nb, bool fp16, LegacyPanel& pn) {
    alignas(64) uint8_t tmp[kP32Rows * 256];
    Block blk;
    for (int64_t b = 0; b < nb; ++b) {
        for (int k = 0; k < kP32Rows; ++k) {
            float* d = pn.d.data() + (size_t)b * 8 * kP32Rows + k;  // scale of 32-block 8b + i at d[16 i]
            if (k >= rows) {  // padding rows: value 0, scale 0
                std::memset(tmp + 256 * k, 0x80, 256);
                for (int i = 0; i < 8; ++i) d[kP32Rows * i] = 0.0f;
                continue;
            }
            const uint8_t* row = w + (size_t)(r0 + k) * wrb;
            Decode(row + 4 + (size_t)b * bb, rd_f32(row), blk);
            std::memcpy(tmp + 256 * k, blk.u, 256);
            for (int i = 0; i < 8; ++i)
                d[kP32Rows * i] = fp16 ? _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(blk.s[i]), 0))) : blk.s[i];
        }
        simd512::panel_put_codes(tmp, 256, pn.q.data() + (size_t)b * 256 * kP32Rows, 64);
    }
}

template <void (*Decode)(const uint8_t*, float, Block&), void (*SeedsOf)(const uint8_t*, float, Seeds&) = nullptr, int G = 8,
          void (*SignsDecode)(const uint8_t*, float, Block&) = nullptr>
void run_kt(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
            int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const size_t bb = (wrb - 4) / (size_t)nb;
    if (nt >= kKtBatchMinTokens) {
        const bool fp16 = nt >= kKtConvMinTokens;  // the reference's repack; exact scales below
        if (r1 > r0)
            panel_gemm<false>([&](int64_t r, int rows, LegacyPanel& pn) { fill_kt_panel<Decode>(w, wrb, bb, r, rows, nb, fp16, pn); },
                              nb * 8, act, arb, nt, r0, r1, y, ys);
        return;
    }
    const int64_t tile = std::clamp<int64_t>((int64_t)(196608 / std::max<size_t>(arb, 1)), 1, kKtBatchMinTokens - 1);
    Block blk;
    __m512 acc[kKtBatchMinTokens - 1];
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t tn = std::min(tile, nt - t0);
        const uint8_t* a0 = act + (size_t)t0 * arb;
        if constexpr (SeedsOf != nullptr)
            if (kt_direct_tile<Direct<SeedsOf, G>>(tn, w, wrb, nb, bb, r0, r1, a0, arb, y + t0 * ys, ys)) continue;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * wrb;
            const float d = rd_f32(row);
            for (int64_t t = 0; t < tn; ++t) acc[t] = _mm512_setzero_ps();
            for (int64_t b = 0; b < nb; ++b) {
                if constexpr (SignsDecode != nullptr) {
                    SignsDecode(row + 4 + (size_t)b * bb, d, blk);
                    for (int64_t t = 0; t < tn; ++t) dot_block_signs(blk, a0 + (size_t)t * arb + 288 * b, acc[t]);
                } else {
                    Decode(row + 4 + (size_t)b * bb, d, blk);
                    to_signs(blk);
                    for (int64_t t = 0; t < tn; ++t) dot_block_signs(blk, a0 + (size_t)t * arb + 288 * b, acc[t]);
                }
            }
            for (int64_t t = 0; t < tn; ++t) y[(t0 + t) * ys + r] = gti_hsum512(acc[t]);
        }
    }
}

}  // namespace

KernelTable trellis_kernels_avx512() {
    static const MatmulKernel kKernels[] = {
        {T_IQ1_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq1_kt, seeds_iq1_kt, 8>, true},
        {T_IQ2_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq2_kt, seeds_iq2_kt, 8>, true},
        {T_IQ3_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq3_kt, nullptr, 8, decode_iq3_kt_signs>, true},
        {T_IQ4_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq4_kt, seeds_iq4_kt, 4>, true},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable trellis_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
