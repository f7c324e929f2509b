// Integer products of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M;
// quant-formats.md §9) against Q8_K activations. Each 256-weight block is decoded once per row into
// int8 codes with one float scale per 16 weights, weight = scale * code exactly (the IQ2/IQ3 grid
// magnitudes with their signs; IQ1: codes 8g +- 1 with scale dl/8, since dl * (g +- 1/8) is
// exact both ways), and every token's product is then integer per 4 weights (vpdpbusd or maddubs,
// |code| <= 127) and float per lane. The generic path (dequantize to floats, float
// dot) spent ~10x longer. Batches of kGridConvMinTokens or more take the reference's re-encoding
// (grid_conv_block) of the same codes.
// Anonymous namespace like the other kernel headers: each ISA file compiles its own copy.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/interleaved_common.h"
#include "quant/act_q8_k.h"
#include "quant/grid_tables.h"
#include "quant/grid_util.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>
#endif
#include "kernels/grid_vec512.h"
#if defined(__AVX2__) && defined(__FMA__) && !(defined(__AVX512F__) && defined(__AVX512BW__))
#define IKLLM_GRID_AVX2 1
#include "kernels/kquant_simd.h"  // ConvRow, conv_tile: the re-encoded rows' exact AVX2 GEMM
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define IKLLM_GRID_PANELS 1
#include "kernels/conv_panel_avx512.h"
#endif

namespace ikllm::cpu {
namespace {

// Integer multiplier of a 16-weight group in the re-encoding: its scale over the block unit u (an
// exact small integer for finite scales). A corrupt block's inf / NaN scale gives 0, as the scalar
// re-encoding's lround does (no undefined float-to-int conversion).
inline int16_t grid_group_mult(float scale, float u) {
    if (u == 0.0f) return 0;
    const float r = scale / u;
    return std::fabs(r) < 32768.0f ? (int16_t)r : 0;
}

struct GridCodes {
    int8_t q[256];
    float sc[16];  // scale of each 16 codes
};

template <class Codes>
inline void set_scale(Codes& o, int k, float s) { o.sc[k] = s; }  // 16-weight group k

// Bit k of b -> byte k of the result 0xff (k < 8).
inline uint64_t grid_byte_mask(uint32_t b) {
    const uint64_t x = ((uint64_t)(b & 255u) * 0x0101010101010101ull) & 0x8040201008040201ull;
    return (((x + 0x7F7F7F7F7F7F7F7Full) & 0x8080808080808080ull) >> 7) * 0xFF;
}

// Decoding in two passes. Pass 1 (grid_raw): the grid entries (IQ2 / IQ3: magnitudes) and every
// weight's sign as one bit (IQ2 / IQ3: the sign bytes, stored or looked up; IQ1: the delta's sign
// per 8 weights), and 16 scales -- scalar table loads, or with AVX-512 VBMI vectors
// (grid_vec512.h, the same bytes). Pass 2: the dot takes the magnitudes with the activations
// negated under the masks (AVX-512, AVX2; IQ1 forms its codes 8 g +- 1 there), or
// grid_decode_codes writes signed codes per 8 weights in 64-bit words (scalar, NEON, the
// re-encoding). The kernels run pass 1 over a chunk of rows before pass 2 reads them back: wide
// loads right after the scalar pass's narrow stores to the same bytes would stall on store
// forwarding.
struct GridRaw {
    alignas(64) uint64_t g[32];  // entry of weights 8k .. 8k + 7
    uint64_t neg[4];             // bit i of neg[z]: weight 64 z + i negated (IQ1: its delta is -1)
    float sc[16];                // scale of each 16 weights
};

// Pass 1 helper (VBMI): the 8-bit sign masks (kKsignsIq2xs: bit 7 = the parity of the 7 bits)
// of 32 7-bit sign indices, in bytes 0-3 of each qword of f (spread) or in bytes 0-31, written as
// the 4 negation masks.
#ifdef __AVX512VBMI__
inline void grid_signs_512(__m512i f, uint64_t* neg, bool spread = true) {
    const __m512i s7 = _mm512_and_si512(f, _mm512_set1_epi8(0x7F));
    const __m512i par = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0));
    const __m512i m15 = _mm512_set1_epi8(15);
    const __m512i p = _mm512_xor_si512(_mm512_shuffle_epi8(par, _mm512_and_si512(s7, m15)),
                                       _mm512_shuffle_epi8(par, _mm512_and_si512(_mm512_srli_epi16(s7, 4), m15)));
    __m512i s8 = _mm512_or_si512(s7, _mm512_slli_epi16(p, 7));
    if (spread)  // bytes 8q + l (l < 4) -> 4q + l
        s8 = _mm512_permutexvar_epi8(_mm512_set_epi64(0, 0, 0, 0, 0x3B3A393833323130ll, 0x2B2A292823222120ll,
                                                      0x1B1A191813121110ll, 0x0B0A090803020100ll),
                                     s8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(neg), _mm512_castsi512_si256(s8));
}
#endif

#ifdef IKLLM_GRID_VEC512
// IQ2 pass 1 in pieces: a block's 32 grid indices (low bytes; bits 8 and 9 as masks), the tables
// they index, and the signs and scales.
template <uint32_t Type>
constexpr int grid_iq2_banks() { return Type == quant::T_IQ2_XXS ? 2 : Type == quant::T_IQ2_XS ? 4 : 8; }
template <uint32_t Type>
inline const uint8_t (&grid_iq2_planes(const GridPackedTables& t))[2][128 * grid_iq2_banks<Type>()] {
    if constexpr (Type == quant::T_IQ2_XXS) return t.iq2xxs;
    else if constexpr (Type == quant::T_IQ2_XS) return t.iq2xs;
    else return t.iq2s;
}
template <uint32_t Type>
inline void grid_iq2_indices(const uint8_t* src, __m256i& idx, uint32_t& b8, uint32_t& b9) {
    using namespace quant;
    b8 = b9 = 0;
    if constexpr (Type == T_IQ2_XXS) {
        // 8 groups of 8 bytes: 4 grid indices, then the sign-and-scale word.
        alignas(64) static const uint8_t compact[64] = {0,  1,  2,  3,  8,  9,  10, 11, 16, 17, 18, 19, 24, 25, 26, 27,
                                                        32, 33, 34, 35, 40, 41, 42, 43, 48, 49, 50, 51, 56, 57, 58, 59};
        idx = _mm512_castsi512_si256(_mm512_permutexvar_epi8(_mm512_load_si512(compact), _mm512_loadu_si512(src + 2)));
    } else if constexpr (Type == T_IQ2_XS) {
        // 32 16-bit entries: grid index in bits 0-8, the 7-bit sign index in bits 9-15.
        const __m512i q = _mm512_loadu_si512(src + 2);
        idx = _mm512_cvtepi16_epi8(q);
        b8 = (uint32_t)_mm512_test_epi16_mask(q, _mm512_set1_epi16(0x100));
    } else {
        // index k: byte 2 + k, bits 8-9 at bits 2k, 2k + 1 of the 8 high-bit bytes.
        const uint64_t qh = grid_rd_u64(src + 66);
        idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2));
        b8 = (uint32_t)_pext_u64(qh, 0x5555555555555555ull);
        b9 = (uint32_t)_pext_u64(qh, 0xAAAAAAAAAAAAAAAAull);
    }
}
template <uint32_t Type>
inline void grid_iq2_signs_scales(const uint8_t* src, float d, GridRaw& o) {
    using namespace quant;
    if constexpr (Type == T_IQ2_XXS) {
        const __m512i words = _mm512_srli_epi64(_mm512_loadu_si512(src + 2), 32);
        grid_signs_512(_mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x00000000150E0700ll), words), o.neg);
        const __m256 s8 = _mm512_cvtepi64_ps(_mm512_srli_epi64(words, 28));
        grid_scales_dup(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(d), _mm256_add_ps(_mm256_set1_ps(0.5f), s8)), _mm256_set1_ps(0.25f)), o.sc);
    } else if constexpr (Type == T_IQ2_XS) {
        const __m512i q = _mm512_loadu_si512(src + 2);
        grid_signs_512(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(_mm512_srli_epi16(q, 9))), o.neg, false);
        grid_scales_nib16(src + 66, d, o.sc);
    } else {
        std::memcpy(o.neg, src + 34, 32);
        grid_scales_nib16(src + 74, d, o.sc);
    }
}

// Two IQ2 blocks at once: their 64 indices through each byte plane's banks in one pass (one block
// alone fills half the lanes twice), then each block's halves into the grid_lookup32 layout. The
// same GridRaw as grid_raw_vec.
template <uint32_t Type>
inline void grid_raw_iq2_pair(const uint8_t* s0, const uint8_t* s1, GridRaw& o0, GridRaw& o1) {
    constexpr int kBanks = grid_iq2_banks<Type>();
    const auto& planes = grid_iq2_planes<Type>(grid_packed_tables());
    __m256i i0, i1;
    uint32_t b8a, b9a, b8b, b9b;
    grid_iq2_indices<Type>(s0, i0, b8a, b9a);
    grid_iq2_indices<Type>(s1, i1, b8b, b9b);
    const __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(i0), i1, 1);
    const __mmask64 m8 = (uint64_t)b8a | (uint64_t)b8b << 32, m9 = (uint64_t)b9a | (uint64_t)b9b << 32;
    const __m512i lo = grid_lut8<kBanks>(planes[0], idx, m8, m9), hi = grid_lut8<kBanks>(planes[1], idx, m8, m9);
    const __m512i lh0 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0)), lh1 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
    for (int z = 0; z < 4; ++z) {
        _mm512_store_si512(o0.g + 8 * z, grid_expand_iq2(lh0, z));
        _mm512_store_si512(o1.g + 8 * z, grid_expand_iq2(lh1, z));
    }
    grid_iq2_signs_scales<Type>(s0, quant::rd_f16(s0), o0);
    grid_iq2_signs_scales<Type>(s1, quant::rd_f16(s1), o1);
}
#endif

#ifdef IKLLM_GRID_VEC512
// Pass 1 in vectors (grid_vec512.h) for the IQ2 / IQ3 types: the same GridRaw as the scalar pass.
template <uint32_t Type>
inline void grid_raw_vec(const uint8_t* src, GridRaw& o) {
    using namespace quant;
    const GridPackedTables& tabs = grid_packed_tables();
    const float d = rd_f16(src);
    if constexpr (Type == T_IQ2_XXS || Type == T_IQ2_XS || Type == T_IQ2_S) {
        __m256i idx;
        uint32_t b8, b9;
        grid_iq2_indices<Type>(src, idx, b8, b9);
        const __m512i lh = grid_lookup32<grid_iq2_banks<Type>()>(grid_iq2_planes<Type>(tabs), idx, b8, b9);
        for (int z = 0; z < 4; ++z) _mm512_store_si512(o.g + 8 * z, grid_expand_iq2(lh, z));
        grid_iq2_signs_scales<Type>(src, d, o);
    } else {
        static_assert(Type == T_IQ3_XXS || Type == T_IQ3_S);
        const __m512i idx = _mm512_loadu_si512(src + 2);
        const __mmask64 b8 = Type == T_IQ3_S ? (__mmask64)grid_rd_u64(src + 66) : 0;  // bit 8 of index k: bit k
        constexpr int kBanks = Type == T_IQ3_S ? 4 : 2;
        const auto& planes = [&]() -> const uint8_t(&)[2][128 * kBanks] {
            if constexpr (Type == T_IQ3_S) return tabs.iq3s; else return tabs.iq3xxs;
        }();
        const __m512i lo = grid_lut8<kBanks>(planes[0], idx, b8, 0), hi = grid_lut8<kBanks>(planes[1], idx, b8, 0);
        const __m512i mags = grid_iq3_mags(Type);
        for (int z = 0; z < 4; ++z) _mm512_store_si512(o.g + 8 * z, grid_expand_iq3(lo, hi, z, mags));
        if constexpr (Type == T_IQ3_XXS) {
            // The 8 sign-and-scale words in the low halves of 8 qwords: 7-bit sign indices at
            // bits 0, 7, 14, 21, the scale at 28.
            const __m512i words = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 66)));
            grid_signs_512(_mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x00000000150E0700ll), words), o.neg);
            const __m256 s8 = _mm512_cvtepi64_ps(_mm512_srli_epi64(words, 28));
            grid_scales_dup(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(d), _mm256_add_ps(_mm256_set1_ps(0.5f), s8)), _mm256_set1_ps(0.5f)), o.sc);
        } else {
            std::memcpy(o.neg, src + 74, 32);
            const __m128i b = _mm_cvtsi32_si128((int)rd_u32(src + 106)), m15 = _mm_set1_epi8(15);
            const __m256i s = _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(_mm_and_si128(b, m15), _mm_and_si128(_mm_srli_epi16(b, 4), m15)));
            const __m256i odd = _mm256_add_epi32(_mm256_set1_epi32(1), _mm256_slli_epi32(s, 1));
            grid_scales_dup(_mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(odd)), o.sc);
        }
    }
}
#endif

#ifdef IKLLM_GRID_VEC512
// IQ1_S / IQ1_M pass 1: the scales and the delta signs by vector arithmetic (the same GridRaw as
// the scalar pass).
template <uint32_t Type>
inline void grid_iq1_scales_neg(const uint8_t* src, GridRaw& o) {
    using namespace quant;
    uint32_t neg1;  // bit k: the delta of weights 8k .. 8k + 7 is -1
    if constexpr (Type == T_IQ1_S) {
        // The high word h[ib]: the scale in bits 12-14, the delta's sign in bit 15.
        const float d = rd_f16(src);
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 34));
        const __m256i sc = _mm256_cvtepu16_epi32(_mm_and_si128(_mm_srli_epi16(h, 12), _mm_set1_epi16(7)));
        const __m256 odd = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_slli_epi32(sc, 1), _mm256_set1_epi32(1)));
        grid_scales_dup(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(d), odd), _mm256_set1_ps(0.125f)), o.sc);
        neg1 = _pdep_u32((uint32_t)_mm_movepi16_mask(h), 0x11111111u) * 15u;
    } else {
        static_assert(Type == T_IQ1_M);
        // Bit 4 (k % 2) + 3 of qh[k / 2]: the delta's sign of entry k. Scale of 16-weight group g:
        // bits 3 (g % 4) .. + 2 of the scale word g / 4, whose top nibbles hold the fp16 block scale.
        uint16_t sw[4];
        std::memcpy(sw, src + 48, 8);
        const float d = f16_to_f32((uint16_t)((sw[0] >> 12) | ((sw[1] >> 8) & 0x00F0) | ((sw[2] >> 4) & 0x0F00) | (sw[3] & 0xF000)));
        const __m256i lane = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __m256i sg = _mm256_permutexvar_epi16(_mm256_srli_epi16(lane, 2), _mm256_castsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 48))));
        const __m256i s3 = _mm256_and_si256(_mm256_srlv_epi16(sg, _mm256_mullo_epi16(_mm256_and_si256(lane, _mm256_set1_epi16(3)), _mm256_set1_epi16(3))),
                                            _mm256_set1_epi16(7));
        const __m512 odd = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_slli_epi32(_mm512_cvtepu16_epi32(s3), 1), _mm512_set1_epi32(1)));
        _mm512_storeu_ps(o.sc, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(d), odd), _mm512_set1_ps(0.125f)));
        neg1 = (uint32_t)_pext_u64(grid_rd_u64(src + 32), 0x8888888888888888ull) |
               (uint32_t)_pext_u64(grid_rd_u64(src + 40), 0x8888888888888888ull) << 16;
    }
    for (int z = 0; z < 4; ++z) o.neg[z] = _pdep_u64(neg1 >> (8 * z), 0x0101010101010101ull) * 0xFF;
}

// One block: the 2048 entries are loaded one by one, their 11-bit indices built 4 at a time by
// pdep in general registers (indices stored from a vector and loaded back one by one stall store
// forwarding). Used for a row's odd last block; pairs of blocks take grid_raw_iq1_pair.
template <uint32_t Type>
inline void grid_raw_iq1_vec(const uint8_t* src, GridRaw& o) {
    using namespace quant;
    uint64_t ix4[8];  // the 4 indices of 32-weight group ib in 16-bit fields
    for (int ib = 0; ib < 8; ++ib)
        if constexpr (Type == T_IQ1_S)  // index 4 ib + l: qs[4 ib + l] | bits 3l .. 3l + 2 of h[ib] << 8
            ix4[ib] = _pdep_u64(rd_u32(src + 2 + 4 * ib), 0x00FF00FF00FF00FFull) | _pdep_u64(rd_u16(src + 34 + 2 * ib), 0x0700070007000700ull);
        else  // index k: qs[k] | bits 4 (k % 2) .. + 2 of qh[k / 2] << 8
            ix4[ib] = _pdep_u64(rd_u32(src + 4 * ib), 0x00FF00FF00FF00FFull) |
                      _pdep_u64(_pext_u32(rd_u16(src + 32 + 2 * ib), 0x7777u), 0x0700070007000700ull);
    for (int ib = 0; ib < 8; ++ib)
        for (int l = 0; l < 4; ++l) o.g[4 * ib + l] = kIq1sGrid[(ix4[ib] >> (16 * l)) & 0xFFFF];
    grid_iq1_scales_neg<Type>(src, o);
}

// Two blocks at once: their 64 indices look up the grid packed 2 bits a weight in register
// tables (grid_lookup_iq1: 19 vpermt2b for 64 entries; one block alone would waste half of
// each), then grid_expand_iq1. The same GridRaw bytes as the scalar pass.
template <uint32_t Type>
inline void grid_raw_iq1_pair(const uint8_t* s0, const uint8_t* s1, GridRaw& o0, GridRaw& o1) {
    using namespace quant;
    constexpr int kQs = Type == T_IQ1_S ? 2 : 0, kQh = Type == T_IQ1_S ? 34 : 32;
    const __m512i lo8 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s0 + kQs))),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s1 + kQs)), 1);
    // qword q of a block: the high bits of indices 8q .. 8q + 7 in its low 32 bits (IQ1_S: h[2q],
    // h[2q + 1], 3 bits an index at 0, 3, 6, 9; IQ1_M: qh[4q .. 4q + 3], at 0, 4, 8, ..., 28).
    const __m512i hw = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + kQh)))),
                                          _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s1 + kQh))), 1);
    const __m512i cut = _mm512_set1_epi64(Type == T_IQ1_S ? 0x1916131009060300ll : 0x1C1814100C080400ll);
    const __m512i hi3 = _mm512_and_si512(_mm512_multishift_epi64_epi8(cut, hw), _mm512_set1_epi8(7));
    __m512i lo, hi;
    grid_lookup_iq1(grid_packed_tables(), lo8, hi3, lo, hi);
    for (int z = 0; z < 4; ++z) {
        _mm512_store_si512(o0.g + 8 * z, grid_expand_iq1(lo, hi, 0, z));
        _mm512_store_si512(o1.g + 8 * z, grid_expand_iq1(lo, hi, 1, z));
    }
    grid_iq1_scales_neg<Type>(s0, o0);
    grid_iq1_scales_neg<Type>(s1, o1);
}
#endif

#if defined(__AVX2__) && defined(__BMI2__) && !defined(IKLLM_GRID_VEC512)
#define IKLLM_GRID_RAW_AVX2 1
// Pass 1 helpers without VBMI (AVX2 builds): the 8-bit sign masks kKsignsIq2xs[s] = s |
// parity(s) << 7 of 32 7-bit sign indices held in bytes (4 ib + l of `s7`), computed instead of
// looked up one by one.
inline void grid_signs_avx2(__m256i s7, uint64_t* neg) {
    const __m256i par = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0));
    const __m256i m15 = _mm256_set1_epi8(15);
    const __m256i p = _mm256_xor_si256(_mm256_shuffle_epi8(par, _mm256_and_si256(s7, m15)),
                                       _mm256_shuffle_epi8(par, _mm256_and_si256(_mm256_srli_epi16(s7, 4), m15)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(neg), _mm256_or_si256(s7, p));
}
// The 4 7-bit sign indices at bits 0, 7, 14, 21 of each of 8 words, into bytes 4 ib + l.
inline __m256i grid_sign_fields_avx2(__m256i a) {
    const __m256i f0 = _mm256_and_si256(a, _mm256_set1_epi32(0x7F));
    const __m256i f1 = _mm256_and_si256(_mm256_slli_epi32(a, 1), _mm256_set1_epi32(0x7F00));
    const __m256i f2 = _mm256_and_si256(_mm256_slli_epi32(a, 2), _mm256_set1_epi32(0x7F0000));
    const __m256i f3 = _mm256_and_si256(_mm256_slli_epi32(a, 3), _mm256_set1_epi32(0x7F000000));
    return _mm256_or_si256(_mm256_or_si256(f0, f1), _mm256_or_si256(f2, f3));
}
#endif

template <uint32_t Type>
void grid_raw(const uint8_t* src, GridRaw& o) {
    using namespace quant;
#ifdef IKLLM_GRID_VEC512
    if constexpr (grid_has_vec512<Type>()) return grid_raw_vec<Type>(src, o);
    if constexpr (Type == T_IQ1_S || Type == T_IQ1_M) return grid_raw_iq1_vec<Type>(src, o);
#endif
    uint64_t* g = o.g;
    uint64_t* sg = o.neg;
    uint32_t neg1 = 0;  // IQ1: bit k = delta of weights 8k .. 8k + 7 is -1
    if constexpr (Type == T_IQ2_XXS || Type == T_IQ3_XXS) {
        const float d = rd_f16(src);
        const uint8_t* qs = src + 2;
#ifdef IKLLM_GRID_RAW_AVX2
        __m256i words;  // the 8 sign-and-scale words
        if constexpr (Type == T_IQ2_XXS) {  // the odd dwords of the 64 bytes at qs
            const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
            const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32));
            const __m256i odd = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7);
            words = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(lo, odd), _mm256_permutevar8x32_epi32(hi, odd), 0xF0);
        } else {
            words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 66));
        }
        grid_signs_avx2(grid_sign_fields_avx2(words), sg);
#else
        uint8_t s8[32];
#endif
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t a = Type == T_IQ2_XXS ? rd_u32(qs + 8 * ib + 4) : rd_u32(src + 66 + 4 * ib);
            const float db = Type == T_IQ2_XXS ? (d * (0.5f + (float)(a >> 28))) * 0.25f : (d * (0.5f + (float)(a >> 28))) * 0.5f;
            set_scale(o, 2 * ib, db);
            set_scale(o, 2 * ib + 1, db);
            for (int l = 0; l < 4; ++l) {
                if constexpr (Type == T_IQ2_XXS)
                    g[4 * ib + l] = kIq2xxsGrid[qs[8 * ib + l]];
                else
                    g[4 * ib + l] = (uint64_t)kIq3xxsGrid[qs[8 * ib + 2 * l]] | (uint64_t)kIq3xxsGrid[qs[8 * ib + 2 * l + 1]] << 32;
#ifndef IKLLM_GRID_RAW_AVX2
                s8[4 * ib + l] = kKsignsIq2xs[bits(a, 7 * l, 7)];
#endif
            }
        }
#ifndef IKLLM_GRID_RAW_AVX2
        std::memcpy(sg, s8, 32);
#endif
    } else if constexpr (Type == T_IQ2_XS) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t sc = src[66 + ib];
            for (int h = 0; h < 2; ++h) set_scale(o, 2 * ib + h, (d * (0.5f + (float)nib(sc, h))) * 0.25f);
        }
#ifdef IKLLM_GRID_RAW_AVX2
        // sign indices: the top 7 bits of the 32 16-bit entries, packed to bytes in order
        const __m256i v0 = _mm256_srli_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2)), 9);
        const __m256i v1 = _mm256_srli_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 34)), 9);
        grid_signs_avx2(_mm256_permute4x64_epi64(_mm256_packus_epi16(v0, v1), 0xD8), sg);
        for (int k = 0; k < 32; ++k) g[k] = kIq2xsGrid[rd_u16(src + 2 + 2 * k) & 511];
#else
        uint8_t s8[32];
        for (int k = 0; k < 32; ++k) {
            const uint16_t v = rd_u16(src + 2 + 2 * k);
            g[k] = kIq2xsGrid[v & 511];
            s8[k] = kKsignsIq2xs[v >> 9];
        }
        std::memcpy(sg, s8, 32);
#endif
    } else if constexpr (Type == T_IQ2_S) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t sc = src[74 + ib];
            for (int h = 0; h < 2; ++h) set_scale(o, 2 * ib + h, (d * (0.5f + (float)nib(sc, h))) * 0.25f);
            for (int l = 0; l < 4; ++l) g[4 * ib + l] = kIq2sGrid[src[2 + 4 * ib + l] | bits(src[66 + ib], 2 * l, 2) << 8];
        }
        std::memcpy(sg, src + 34, 32);  // sign byte of weights 8k.. at 34 + k
    } else if constexpr (Type == T_IQ3_S) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const float db = d * (float)(1 + 2 * nib(src[106 + ib / 2], ib % 2));
            set_scale(o, 2 * ib, db);
            set_scale(o, 2 * ib + 1, db);
            for (int p = 0; p < 4; ++p) {
                const int i0 = src[2 + 8 * ib + 2 * p] | bit(src[66 + ib], 2 * p) << 8;
                const int i1 = src[2 + 8 * ib + 2 * p + 1] | bit(src[66 + ib], 2 * p + 1) << 8;
                g[4 * ib + p] = (uint64_t)kIq3sGrid[i0] | (uint64_t)kIq3sGrid[i1] << 32;
            }
        }
        std::memcpy(sg, src + 74, 32);
    } else if constexpr (Type == T_IQ1_S) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t h = rd_u16(src + 34 + 2 * ib);
            const float sc = (d * (float)(2 * bits(h, 12, 3) + 1)) * 0.125f;
            set_scale(o, 2 * ib, sc);
            set_scale(o, 2 * ib + 1, sc);
            if (bit(h, 15)) neg1 |= 15u << (4 * ib);
#ifdef IKLLM_GRID_RAW_AVX2  // the 4 11-bit indices at once in 16-bit fields (pdep)
            const uint64_t ix4 = _pdep_u64(rd_u32(src + 2 + 4 * ib), 0x00FF00FF00FF00FFull) | _pdep_u64(h, 0x0700070007000700ull);
            for (int l = 0; l < 4; ++l) g[4 * ib + l] = kIq1sGrid[(ix4 >> (16 * l)) & 0xFFFF];
#else
            for (int l = 0; l < 4; ++l) g[4 * ib + l] = kIq1sGrid[src[2 + 4 * ib + l] | bits(h, 3 * l, 3) << 8];
#endif
        }
    } else if constexpr (Type == T_IQ1_M) {
        uint16_t sc[4];
        for (int i = 0; i < 4; ++i) sc[i] = rd_u16(src + 48 + 2 * i);
        const uint16_t u = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        const float d = f16_to_f32(u);
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t t = sc[ib / 2];
            const int off = 6 * (ib % 2);
            set_scale(o, 2 * ib, (d * (float)(2 * bits(t, off, 3) + 1)) * 0.125f);
            set_scale(o, 2 * ib + 1, (d * (float)(2 * bits(t, off + 3, 3) + 1)) * 0.125f);
#ifdef IKLLM_GRID_RAW_AVX2  // the 4 11-bit indices at once in 16-bit fields (pdep)
            const uint16_t hh = rd_u16(src + 32 + 2 * ib);
            const uint64_t ix4 = _pdep_u64(rd_u32(src + 4 * ib), 0x00FF00FF00FF00FFull) | _pdep_u64(_pext_u32(hh, 0x7777u), 0x0700070007000700ull);
            for (int l = 0; l < 4; ++l) g[4 * ib + l] = kIq1sGrid[(ix4 >> (16 * l)) & 0xFFFF];
            neg1 |= _pext_u32(hh, 0x8888u) << (4 * ib);
#else
            const uint8_t h0 = src[32 + 2 * ib], h1 = src[33 + 2 * ib];
            g[4 * ib] = kIq1sGrid[src[4 * ib] | bits(h0, 0, 3) << 8];
            g[4 * ib + 1] = kIq1sGrid[src[4 * ib + 1] | bits(h0, 4, 3) << 8];
            g[4 * ib + 2] = kIq1sGrid[src[4 * ib + 2] | bits(h1, 0, 3) << 8];
            g[4 * ib + 3] = kIq1sGrid[src[4 * ib + 3] | bits(h1, 4, 3) << 8];
            neg1 |= (uint32_t)(bit(h0, 3) | bit(h0, 7) << 1 | bit(h1, 3) << 2 | bit(h1, 7) << 3) << (4 * ib);
#endif
        }
    }
    if constexpr (Type == T_IQ1_S || Type == T_IQ1_M)
        for (int z = 0; z < 4; ++z) sg[z] = grid_byte_mask(neg1 >> (8 * z));
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define IKLLM_GRID_DECODE512 1
// Pass 2: codes 64 z .. 64 z + 63.
template <uint32_t Type>
inline __m512i grid_codes_512(const GridRaw& o, int z) {
    const __m512i v = _mm512_load_si512(o.g + 8 * z);
    if constexpr (Type == quant::T_IQ1_S || Type == quant::T_IQ1_M) {  // 8 g +- 1, g in {-1, 0, 1}
        const __m512i g8 = _mm512_and_si512(_mm512_slli_epi16(v, 3), _mm512_set1_epi8((char)0xF8));
        return _mm512_add_epi8(g8, _mm512_mask_blend_epi8((__mmask64)o.neg[z], _mm512_set1_epi8(1), _mm512_set1_epi8(-1)));
    } else {
        return _mm512_mask_sub_epi8(v, (__mmask64)o.neg[z], _mm512_setzero_si512(), v);
    }
}
#endif

// Pass 2 in 64-bit words (AVX2 and scalar kernels, and the re-encoding below): 8 codes at a time.
template <uint32_t Type>
void grid_codes_of_raw(const GridRaw& r, GridCodes& o) {
    constexpr uint64_t kOne = 0x0101010101010101ull, kLow5 = 0x1F1F1F1F1F1F1F1Full;
    for (int k = 0; k < 32; ++k) {
        const uint64_t g = r.g[k], m = grid_byte_mask((uint32_t)(r.neg[k >> 3] >> (8 * (k & 7))));
        uint64_t v;
        if constexpr (Type == quant::T_IQ1_S || Type == quant::T_IQ1_M) {
            // 8 g + 1, or 8 g - 1 = ~(8 (-g)) with -g = g ^ 0xfe where g != 0 (bytes -1, 0, 1)
            const uint64_t plus = ((g & kLow5) << 3) | kOne;
            const uint64_t minus = ~((((g ^ ((g & kOne) * 0xFE)) & kLow5) << 3));
            v = (plus & ~m) | (minus & m);
        } else {  // magnitudes (never 0) negated where m: (g ^ m) + 1, no carries
            v = (g ^ m) + (m & kOne);
        }
        std::memcpy(o.q + 8 * k, &v, 8);
    }
    std::memcpy(o.sc, r.sc, sizeof o.sc);
}
// Pass 1 of a row's nb blocks (IQ1 with VBMI: blocks in pairs).
template <uint32_t Type>
void grid_raw_row(const uint8_t* row, int64_t nb, GridRaw* o) {
    constexpr int kBlockBytes = grid_conv(Type).block_bytes;
    int64_t b = 0;
#ifdef IKLLM_GRID_VEC512
    if constexpr (Type == quant::T_IQ1_S || Type == quant::T_IQ1_M) {
        if (grid_packed_tables().iq1_ok)
            for (; b + 2 <= nb; b += 2) grid_raw_iq1_pair<Type>(row + b * kBlockBytes, row + (b + 1) * kBlockBytes, o[b], o[b + 1]);
    } else if constexpr (Type == quant::T_IQ2_XXS || Type == quant::T_IQ2_XS || Type == quant::T_IQ2_S) {
        for (; b + 2 <= nb; b += 2) grid_raw_iq2_pair<Type>(row + b * kBlockBytes, row + (b + 1) * kBlockBytes, o[b], o[b + 1]);
    }
#endif
    for (; b < nb; ++b) grid_raw<Type>(row + b * kBlockBytes, o[b]);
}

template <uint32_t Type>
void grid_decode_codes(const uint8_t* src, GridCodes& o) {
    GridRaw r;
    grid_raw<Type>(src, r);
    grid_codes_of_raw<Type>(r, o);
}

// One decoded row (nb blocks) against one token's Q8_K row.
#if defined(__AVX512F__) && defined(__AVX512BW__)
// acc + d_a * (one block . one token's Q8_K block), per lane: codes from memory (GridCodes) or
// from the first pass (GridRaw, grid_codes_512).
inline __m512i grid_codes_of(const GridCodes& c, int z) { return _mm512_loadu_si512(c.q + 64 * z); }
template <class Codes, class CodesOf>
inline __m512 grid_block_dot512(const Codes& c, CodesOf codes_of, const uint8_t* ab, __m512 acc) {
    const __m512i ones = _mm512_set1_epi16(1);
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);  // lane i: 4 codes of group i / 4
    float da;
    std::memcpy(&da, ab + quant::kQ8KOffD, 4);
    __m512 blk = _mm512_setzero_ps();
    for (int z = 0; z < 4; ++z) {
        const __m512i q = codes_of(c, z);
        const __m512i a = _mm512_loadu_si512(ab + quant::kQ8KOffQs + 64 * z);
        // |q| * (a with q's sign): AVX-512 has no sign_epi8, so negate a where q < 0 (where
        // q == 0 the product is 0 anyway).
        const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(q), _mm512_setzero_si512(), a);
        const __m512i p = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(q), sa), ones);
        const __m512 sc = _mm512_permutexvar_ps(quad, _mm512_castps128_ps512(_mm_loadu_ps(c.sc + 4 * z)));
        blk = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(p), blk);
    }
    return _mm512_fmadd_ps(_mm512_set1_ps(da), blk, acc);
}

// Tokens taken together against one decoded row (grid_int_run's steps of 2..31 tokens, and single
// tokens): each block's magnitudes, sign masks and scale lanes are loaded once for all of them,
// and every token gets grid_raw_dot512's float operations (the same sums, so the same bits).
constexpr int kGridTileTokens = 4;
template <uint32_t Type, int T>
inline void grid_row_tile512_n(const GridRaw* c, int64_t nb, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 acc[T];
    for (int j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        __m512i mag[4];
        __mmask64 neg[4];
        __m512 sc[4];
        for (int z = 0; z < 4; ++z) {
            if constexpr (Type == quant::T_IQ1_S || Type == quant::T_IQ1_M) {  // codes 8g +- 1: |code| <= 9
                const __m512i q = grid_codes_512<Type>(c[b], z);
                mag[z] = _mm512_abs_epi8(q);
                neg[z] = _mm512_movepi8_mask(q);
            } else {
                mag[z] = _mm512_load_si512(c[b].g + 8 * z);
                neg[z] = (__mmask64)c[b].neg[z];
            }
            sc[z] = _mm512_permutexvar_ps(quad, _mm512_castps128_ps512(_mm_loadu_ps(c[b].sc + 4 * z)));
        }
        for (int j = 0; j < T; ++j) {
            const uint8_t* ab = act + (size_t)j * arb + (size_t)b * quant::kQ8KBlockBytes;
            float da;
            std::memcpy(&da, ab + quant::kQ8KOffD, 4);
            __m512 blk = _mm512_setzero_ps();
            for (int z = 0; z < 4; ++z) {
                const __m512i a = _mm512_loadu_si512(ab + quant::kQ8KOffQs + 64 * z);
                const __m512i sa = _mm512_mask_sub_epi8(a, neg[z], _mm512_setzero_si512(), a);
#ifdef __AVX512VNNI__
                const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), mag[z], sa);
#else
                const __m512i p = _mm512_madd_epi16(_mm512_maddubs_epi16(mag[z], sa), _mm512_set1_epi16(1));
#endif
                blk = _mm512_fmadd_ps(sc[z], _mm512_cvtepi32_ps(p), blk);
            }
            acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(da), blk, acc[j]);
        }
    }
    for (int j = 0; j < T; ++j) y[j * ys] = _mm512_reduce_add_ps(acc[j]);
}
// IQ1 against a single token (VNNI): with p = g + 1 in {0, 1, 2} the lane sum of codes 8g + delta
// is 8 (p . a) + (delta - 8) s4, s4 the lane's four activations' sum: one vpdpbusd on the grid
// bytes plus 1, a shift and a per-token term (-7 s4 or -9 s4, by the lane's delta sign) instead
// of forming codes, magnitudes and negated activations. The same int32 lanes as
// grid_row_tile512_n and the same float operations after them, so the same bits.
#if defined(__AVX512VNNI__) && defined(__BMI2__)
#define IKLLM_GRID_IQ1_TOKEN 1
struct Iq1TokenSums {
    __m512i s7, s9;  // -7 s4 and -9 s4 of the 16 lanes of 64 activations
};
inline void grid_iq1_token_sums(const uint8_t* act, int64_t nb, Iq1TokenSums* o) {
    for (int64_t b = 0; b < nb; ++b)
        for (int z = 0; z < 4; ++z) {
            const __m512i a = _mm512_loadu_si512(act + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffQs + 64 * z);
            const __m512i s4 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), a);
            const __m512i s8 = _mm512_slli_epi32(s4, 3);
            o[4 * b + z].s7 = _mm512_sub_epi32(s4, s8);
            o[4 * b + z].s9 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_add_epi32(s8, s4));
        }
}
inline void grid_row_iq1_token(const GridRaw* c, int64_t nb, const uint8_t* act, const Iq1TokenSums* ts, float* y) {
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i one = _mm512_set1_epi8(1);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* ab = act + (size_t)b * quant::kQ8KBlockBytes;
        float da;
        std::memcpy(&da, ab + quant::kQ8KOffD, 4);
        __m512 blk = _mm512_setzero_ps();
        for (int z = 0; z < 4; ++z) {
            const __m512i p = _mm512_add_epi8(_mm512_load_si512(c[b].g + 8 * z), one);
            const __m512i l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p, _mm512_loadu_si512(ab + quant::kQ8KOffQs + 64 * z));
            const __mmask16 neg = (__mmask16)_pext_u64(c[b].neg[z], 0x1111111111111111ull);  // lane i: weights 4i .. 4i + 3
            const __m512i lane = _mm512_add_epi32(_mm512_slli_epi32(l, 3), _mm512_mask_blend_epi32(neg, ts[4 * b + z].s7, ts[4 * b + z].s9));
            const __m512 sc = _mm512_permutexvar_ps(quad, _mm512_castps128_ps512(_mm_loadu_ps(c[b].sc + 4 * z)));
            blk = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(lane), blk);
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(da), blk, acc);
    }
    *y = _mm512_reduce_add_ps(acc);
}
#endif

template <uint32_t Type>
inline void grid_row_tile(const GridRaw* c, int64_t nb, const uint8_t* act, size_t arb, int tokens, float* y, int64_t ys) {
    static_assert(kGridTileTokens == 4);
    switch (tokens) {
        case 1: return grid_row_tile512_n<Type, 1>(c, nb, act, arb, y, ys);
        case 2: return grid_row_tile512_n<Type, 2>(c, nb, act, arb, y, ys);
        case 3: return grid_row_tile512_n<Type, 3>(c, nb, act, arb, y, ys);
        default: return grid_row_tile512_n<Type, 4>(c, nb, act, arb, y, ys);
    }
}
#endif

#ifdef IKLLM_GRID_AVX2
// AVX2 twin of grid_row_tile512: tokens taken together against one decoded row, 32 weights a step
// (magnitudes loaded from pass 1 and the activations negated under the sign masks; IQ1: the
// codes 8g +- 1 formed here), per token the float operations of the AVX2 kernel before it: each
// 32 weights' 8 four-weight sums times their scale lanes into the block sum, then d_a times
// that.
// Byte i of the result: 0xFF where bit i of m is set.
inline __m256i grid_mask32_256(uint32_t m) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x(0x8040201008040201ll);
    return _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)m), spread), bits), bits);
}
template <uint32_t Type, int T>
inline void grid_row_tile256_n(const GridRaw* c, int64_t nb, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i pair = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);  // lane i: 4 codes of group i / 4
    __m256 acc[T];
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const GridRaw& r = c[b];
        __m256 blk[T];
        for (int j = 0; j < T; ++j) blk[j] = _mm256_setzero_ps();
        for (int z = 0; z < 8; ++z) {
            const __m256i m = grid_mask32_256((uint32_t)(r.neg[z >> 1] >> (32 * (z & 1))));
            const __m256i g = _mm256_load_si256(reinterpret_cast<const __m256i*>(r.g + 4 * z));
            __m256i u = g;
            if constexpr (Type == quant::T_IQ1_S || Type == quant::T_IQ1_M) {  // 8g + 1, or 8g - 1 under m
                const __m256i q = _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(g, 3), _mm256_set1_epi8((char)0xF8)),
                                                  _mm256_or_si256(m, _mm256_set1_epi8(1)));
                u = _mm256_sign_epi8(q, q);
                // the sign of the product is the code's: negate the activation where q < 0
                const __m256i qneg = _mm256_cmpgt_epi8(_mm256_setzero_si256(), q);
                const __m256 sc = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r.sc + 2 * z)))), pair);
                for (int j = 0; j < T; ++j) {
                    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act + (size_t)j * arb + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffQs + 32 * z));
                    const __m256i sa = _mm256_sub_epi8(_mm256_xor_si256(a, qneg), qneg);
                    blk[j] = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, sa), ones)), blk[j]);
                }
                continue;
            }
            const __m256 sc = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r.sc + 2 * z)))), pair);
            for (int j = 0; j < T; ++j) {
                const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act + (size_t)j * arb + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffQs + 32 * z));
                const __m256i sa = _mm256_sub_epi8(_mm256_xor_si256(a, m), m);
                blk[j] = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, sa), ones)), blk[j]);
            }
        }
        for (int j = 0; j < T; ++j) {
            float da;
            std::memcpy(&da, act + (size_t)j * arb + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffD, 4);
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(da), blk[j], acc[j]);
        }
    }
    for (int j = 0; j < T; ++j) {
        const __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[j]), _mm256_extractf128_ps(acc[j], 1));
        const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
        y[j * ys] = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
    }
}
constexpr int kGridTileTokens = 4;
template <uint32_t Type>
inline void grid_row_tile(const GridRaw* c, int64_t nb, const uint8_t* act, size_t arb, int tokens, float* y, int64_t ys) {
    switch (tokens) {
        case 1: return grid_row_tile256_n<Type, 1>(c, nb, act, arb, y, ys);
        case 2: return grid_row_tile256_n<Type, 2>(c, nb, act, arb, y, ys);
        case 3: return grid_row_tile256_n<Type, 3>(c, nb, act, arb, y, ys);
        default: return grid_row_tile256_n<Type, 4>(c, nb, act, arb, y, ys);
    }
}

// grid_decode_conv in AVX2 vectors, the same integers (as grid_reencode_block for AVX-512): the
// codes times each 16-weight group's integer multiplier scale / u are the block's P; dnew =
// max|P| * d0; P kept when dnew < 1, else RNE(float(P) * (1 / dnew)). Writes the codes and their
// magnitudes, returns the block scale.
template <uint32_t Type>
inline float grid_reencode_avx2(const uint8_t* src, int8_t* q, uint8_t* aq) {
    constexpr GridConv gc = grid_conv(Type);
    GridCodes c;
    grid_decode_codes<Type>(src, c);
    const float u = grid_block_d(Type, src) * gc.unit;
    __m256i P[16], mx = _mm256_setzero_si256();
    for (int k = 0; k < 16; ++k) {
        const int16_t m = grid_group_mult(c.sc[k], u);
        P[k] = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c.q + 16 * k))), _mm256_set1_epi16(m));
        mx = _mm256_max_epi16(mx, _mm256_abs_epi16(P[k]));
    }
    __m128i m8 = _mm_max_epi16(_mm256_castsi256_si128(mx), _mm256_extracti128_si256(mx, 1));
    m8 = _mm_max_epi16(m8, _mm_srli_si128(m8, 8));
    m8 = _mm_max_epi16(m8, _mm_srli_si128(m8, 4));
    m8 = _mm_max_epi16(m8, _mm_srli_si128(m8, 2));
    float dnew = (float)(_mm_cvtsi128_si32(m8) & 0xFFFF) * gc.d0;
    const bool keep = dnew < 1.0f;
    if (keep) dnew = 1.0f;
    const __m256 inv = _mm256_set1_ps(1.0f / dnew);
    auto requant = [&](__m256i p) {  // 16 int16 -> RNE(p / dnew) as int16, in order
        const __m256i lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(p))), inv));
        const __m256i hi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(p, 1))), inv));
        return _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8);
    };
    for (int i = 0; i < 8; ++i) {
        const __m256i a = keep ? P[2 * i] : requant(P[2 * i]), b = keep ? P[2 * i + 1] : requant(P[2 * i + 1]);
        const __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi16(a, b), 0xD8);  // |v| <= 127
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), v);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(aq + 32 * i), _mm256_abs_epi8(v));
    }
    return gti_round_half(u * dnew);
}

// Batches of kGridConvMinTokens or more: each row re-encoded once (grid_reencode_avx2), then the
// K-quants' exact AVX2 GEMM of re-encoded rows (kquant_simd.h: integer block sums, one float
// scale per block and token).
template <uint32_t Type>
void grid_conv_avx2(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                    int64_t nt, float* y, int64_t ys) {
    constexpr int kBlockBytes = grid_conv(Type).block_bytes;
    const int64_t nb = ne0 / 256;
    ConvRow cr(ne0);
    for (int64_t r = r0; r < r1; ++r) {
        for (int64_t b = 0; b < nb; ++b)
            cr.d[b] = grid_reencode_avx2<Type>(w + (size_t)r * wrb + (size_t)b * kBlockBytes, cr.q + 256 * b, cr.aq + 256 * b);
        int64_t t = 0;
        for (; t + 4 <= nt; t += 4) conv_tile<4>(cr, nb, act + (size_t)t * arb, arb, y + t * ys + r, ys);
        for (; t < nt; ++t) conv_tile<1>(cr, nb, act + (size_t)t * arb, arb, y + t * ys + r, ys);
    }
}
#endif

inline float grid_row_dot(const GridCodes* c, const uint8_t* act, int64_t nb) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b)
        acc = grid_block_dot512(c[b], [](const GridCodes& x, int z) { return grid_codes_of(x, z); }, act + b * quant::kQ8KBlockBytes, acc);
    return _mm512_reduce_add_ps(acc);
#else
    // Portable, and NEON with the 16-weight integer sums from sdot: the same float operations.
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* ab = act + b * quant::kQ8KBlockBytes;
        float da;
        std::memcpy(&da, ab + quant::kQ8KOffD, 4);
        const int8_t* a = reinterpret_cast<const int8_t*>(ab + quant::kQ8KOffQs);
        float blk = 0.0f;
        for (int k = 0; k < 16; ++k) {
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
            const int32_t s = vaddvq_s32(vdotq_s32(vdupq_n_s32(0), vld1q_s8(c[b].q + 16 * k), vld1q_s8(a + 16 * k)));
#else
            int32_t s = 0;
            for (int i = 0; i < 16; ++i) s += (int32_t)c[b].q[16 * k + i] * a[16 * k + i];
#endif
            blk += c[b].sc[k] * (float)s;
        }
        acc += da * blk;
    }
    return acc;
#endif
}

// Batches of kGridConvMinTokens or more: the reference's re-encoding (grid_conv_block: 8-bit codes,
// one fp16 scale per 256) applied to the decoded block, bit-identical to grid_conv_row.
template <uint32_t Type>
void grid_decode_conv(const uint8_t* src, GridCodes& o) {
    GridCodes c;
    grid_decode_codes<Type>(src, c);
    float yb[256];
    for (int j = 0; j < 256; ++j) yb[j] = c.sc[j / 16] * (float)c.q[j];
    int q[256];
    const float scale = grid_conv_block<Type>(grid_block_d(Type, src) * grid_conv(Type).unit, yb, q);
    for (int j = 0; j < 256; ++j) o.q[j] = (int8_t)q[j];  // |q| <= 1 / d0 <= 127
    for (float& s : o.sc) s = scale;
}

#ifdef IKLLM_GRID_PANELS
// grid_decode_conv in vectors, the same integers: the decoded codes times each 16-weight group's
// integer multiplier m = scale / u (2s + 1 for the IQ2 / IQ3_XXS / IQ1 scales, 1 + 2s for IQ3_S:
// exact in float) are the block's P (int16); dnew = max|P| * d0; P kept when dnew < 1, else
// RNE(float(P) * (1 / dnew)) (the product rounded to float first, as the scalar code does).
// Writes the 256 codes as q + 128 and returns the block scale.
template <uint32_t Type>
inline float grid_reencode_block(const uint8_t* src, uint8_t* out) {
    constexpr GridConv gc = grid_conv(Type);
    GridRaw c;
    grid_raw<Type>(src, c);
    const float u = grid_block_d(Type, src) * gc.unit;
    __m512i P[8];  // 32 int16 each: weights 32i .. 32i + 31
    for (int i = 0; i < 8; ++i) {
        const int16_t m0 = grid_group_mult(c.sc[2 * i], u), m1 = grid_group_mult(c.sc[2 * i + 1], u);
        const __m512i m = _mm512_inserti64x4(_mm512_set1_epi16(m0), _mm256_set1_epi16(m1), 1);
        const __m512i q = grid_codes_512<Type>(c, i / 2);
        P[i] = _mm512_mullo_epi16(_mm512_cvtepi8_epi16(i % 2 ? _mm512_extracti64x4_epi64(q, 1) : _mm512_castsi512_si256(q)), m);
    }
    const float dnew = requant_block_512(P, gc.d0, out);
    return gti_round_half(u * dnew);
}

// A panel of rows [r, r + rows) re-encoded for the VNNI panel GEMM.
template <uint32_t Type>
void grid_fill_panel(const uint8_t* w, size_t wrb, int64_t r, int rows, int64_t nb, ConvPanelRows& pr, ConvPanel& pn) {
    constexpr int kBlockBytes = grid_conv(Type).block_bytes;
    for (int k = 0; k < kPanelRows; ++k) {
        if (k >= rows) {
            pr.pad(k);
            for (int64_t b = 0; b < nb; ++b) pn.d[(size_t)b * kPanelRows + k] = 0.0f;
            continue;
        }
        for (int64_t b = 0; b < nb; ++b)
            pn.d[(size_t)b * kPanelRows + k] =
                grid_reencode_block<Type>(w + (size_t)(r + k) * wrb + (size_t)b * kBlockBytes, pr.row(k) + 256 * b);
    }
    pr.put(pn, nb);
}
#endif

// The kernel: rows r0..r1 of grid type Type against nt Q8_K activation rows. Rows are decoded 16
// at a time, so each token's activation row is read once per 16 rows, from cache. With AVX-512
// VNNI, batches of kGridConvMinTokens or more run the re-encoded rows through the panel GEMM of
// conv_panel_avx512.h (the same exact integers per block; ~10x the speed of one row at a time).
// IQ1 single tokens with VBMI: pass 1 stores whole vectors (grid_raw_iq1_pair), so pass 2 can read
// a row's blocks right after them, while they are still in L1 (a 16-row chunk of a 4096-wide
// matrix is 90 KB of GridRaw).
template <uint32_t Type>
constexpr bool iq1_token_rows_possible() {
#if defined(IKLLM_GRID_IQ1_TOKEN) && defined(IKLLM_GRID_VEC512)
    return Type == quant::T_IQ1_S || Type == quant::T_IQ1_M;
#else
    return false;
#endif
}
template <uint32_t Type>
inline bool iq1_token_rows(int64_t nt) { return iq1_token_rows_possible<Type>() && nt == 1; }

template <uint32_t Type>
void grid_int_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    constexpr int64_t kRowChunk = 16;
    constexpr int kBlockBytes = grid_conv(Type).block_bytes;
    const int64_t nb = ne0 / 256;
    const bool conv = nt >= kGridConvMinTokens;
#ifdef IKLLM_GRID_PANELS
    if (conv) {
        ConvPanelRows pr(nb);
        conv_panel_gemm([&](int64_t r, int rows, ConvPanel& pn) { grid_fill_panel<Type>(w, wrb, r, rows, nb, pr, pn); }, nb, r0,
                        r1, act, arb, nt, y, ys);
        return;
    }
#endif
#ifdef IKLLM_GRID_AVX2
    if (conv) return grid_conv_avx2<Type>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
#endif
#if defined(IKLLM_GRID_DECODE512) || defined(IKLLM_GRID_AVX2)
    if (!conv) {
        std::vector<GridRaw> raw((size_t)(nb * kRowChunk));
#ifdef IKLLM_GRID_IQ1_TOKEN
        std::vector<Iq1TokenSums> sums;  // single token: its lane sums, once per call
#endif
        const int64_t chunk = iq1_token_rows<Type>(nt) ? 1 : kRowChunk;
        for (int64_t rc = r0; rc < r1; rc += chunk) {
            const int64_t re = std::min(r1, rc + chunk);
            for (int64_t r = rc; r < re; ++r)
                grid_raw_row<Type>(w + (size_t)r * wrb, nb, raw.data() + (r - rc) * nb);
#ifdef IKLLM_GRID_IQ1_TOKEN
            if constexpr (Type == quant::T_IQ1_S || Type == quant::T_IQ1_M)
                if (nt == 1) {
                    if (sums.empty()) {
                        sums.resize((size_t)(4 * nb));
                        grid_iq1_token_sums(act, nb, sums.data());
                    }
                    for (int64_t r = rc; r < re; ++r) grid_row_iq1_token(raw.data() + (r - rc) * nb, nb, act, sums.data(), y + r);
                    continue;
                }
#endif
            for (int64_t t0 = 0; t0 < nt; t0 += kGridTileTokens) {
                const int tile = (int)std::min<int64_t>(kGridTileTokens, nt - t0);
                for (int64_t r = rc; r < re; ++r)
                    grid_row_tile<Type>(raw.data() + (r - rc) * nb, nb, act + (size_t)t0 * arb, arb, tile, y + t0 * ys + r, ys);
            }
        }
        return;
    }
#endif
    std::vector<GridCodes> codes((size_t)(nb * kRowChunk));
    for (int64_t rc = r0; rc < r1; rc += kRowChunk) {
        const int64_t re = std::min(r1, rc + kRowChunk);
        for (int64_t r = rc; r < re; ++r)
            for (int64_t b = 0; b < nb; ++b) {
                const uint8_t* blk = w + (size_t)r * wrb + (size_t)b * kBlockBytes;
                GridCodes& o = codes[(size_t)((r - rc) * nb + b)];
                if (conv) grid_decode_conv<Type>(blk, o);
                else grid_decode_codes<Type>(blk, o);
            }
        for (int64_t t = 0; t < nt; ++t)
            for (int64_t r = rc; r < re; ++r)
                y[t * ys + r] = grid_row_dot(codes.data() + (r - rc) * nb, act + (size_t)t * arb, nb);
    }
}


// ---- the reference's 4-row grid forms (quant-formats.md §12.7) -----------------------------------
// IQ2_XXS_R4, IQ2_XS_R4 and IQ3_XXS_R4 cannot be converted back to their plain types by run-time
// repack (their repack transforms the sign indices, unpack_interleaved.h); IQ2_S_R4 and IQ3_S_R4
// could be, but the plain types' kernels re-encode prompt batches (grid_conv_block, as the
// reference does for the plain types) where the reference multiplies these forms exactly, so
// converted files gave other logits (refdata llama-q-IQ2_M_R4: rms 2e-2 from the reference's).
// All five get the grid kernel itself at every batch size: pass 1 decodes row k of a 4-row
// group block into the GridRaw of the plain types (scrambled sign index tau: mask
// (tau ^ (tau << 1)) & 0xff), pass 2 and the dot are shared.
template <uint32_t Type>
constexpr int grid_r4_bytes() {
    using namespace quant;
    return Type == T_IQ2_XXS_R4 ? 264 : Type == T_IQ2_XS_R4 ? 296 : Type == T_IQ2_S_R4 ? 328 : Type == T_IQ3_S_R4 ? 440 : 392;
}

// IQ3_S_R4's sign bytes: bit m of byte j (j < 4) is the sign of weight 4m + j; returned in weight
// order (bit 4m + j).
inline uint32_t grid_iq3s_r4_signs(const uint8_t* s) {
    uint32_t w = 0;
#ifdef __BMI2__
    for (int j = 0; j < 4; ++j) w |= _pdep_u32(s[j], 0x11111111u << j);
#else
    for (int j = 0; j < 4; ++j)
        for (int m = 0; m < 8; ++m) w |= (uint32_t)((s[j] >> m) & 1) << (4 * m + j);
#endif
    return w;
}

#ifdef IKLLM_GRID_VEC512
// Pass 1 of the R4 forms in vectors (AVX-512 VBMI): row k's grid indices gathered from the group
// block by byte / word permutes, then the plain types' register-table lookups (grid_vec512.h);
// scrambled sign indices unscrambled in vectors. The same GridRaw as the scalar pass below.
// Bytes 4 ib + l of the result: byte 16 ib + 4 k + l of the 128 at p (rows' 4-byte groups per ib).
inline __m256i grid_r4_rows16(const uint8_t* p, int k) {
    const __m512i i = _mm512_setr_epi32(0x03020100, 0x13121110, 0x23222120, 0x33323130, 0x43424140, 0x53525150, 0x63626160,
                                        0x73727170, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i idx = _mm512_add_epi8(i, _mm512_set1_epi8((char)(4 * k)));
    return _mm512_castsi512_si256(_mm512_permutex2var_epi8(_mm512_loadu_si512(p), idx, _mm512_loadu_si512(p + 64)));
}
// Byte l of each result dword: the 8-bit sign mask of the scrambled index in bits 1-7 of byte l
// of row k's sign-and-scale word ib (at p + 16 ib + 4 k): tau ^ (tau << 1).
inline __m256i grid_r4_unscramble(__m256i words) {
    const __m256i t = _mm256_and_si256(_mm256_srli_epi16(words, 1), _mm256_set1_epi8(0x7F));
    return _mm256_xor_si256(t, _mm256_add_epi8(t, t));
}
// (u d) (2 s + 1) for the 4-bit scale s in bit 0 of each byte of the 8 words.
inline void grid_r4_word_scales(__m256i words, float ud, float* out) {
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i s = _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(words, one), _mm256_and_si256(_mm256_srli_epi32(words, 7), _mm256_set1_epi32(2))),
                                      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(words, 14), _mm256_set1_epi32(4)),
                                                      _mm256_and_si256(_mm256_srli_epi32(words, 21), _mm256_set1_epi32(8))));
    grid_scales_dup(_mm256_mul_ps(_mm256_set1_ps(ud), _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_slli_epi32(s, 1), one))), out);
}
// 64 bytes: byte 8 ib + m = byte p[32 ib + base[8 (ib % 4) + m] - 32 (ib % 4) + kofs] of 256, i.e.
// base[i] = 32 ((i / 8) % 4) + the type's offset of index m = i % 8 within a 32-byte group.
struct GridR4Base64 {
    alignas(64) uint8_t b[64];
};
inline GridR4Base64 grid_r4_base64(const uint8_t (&off)[8]) {
    GridR4Base64 r{};
    for (int i = 0; i < 64; ++i) r.b[i] = (uint8_t)(32 * ((i / 8) % 4) + off[i % 8]);
    return r;
}
inline __m512i grid_r4_rows64(const uint8_t* p, int kofs, const GridR4Base64& base) {
    const __m512i idx = _mm512_add_epi8(_mm512_load_si512(base.b), _mm512_set1_epi8((char)kofs));
    const __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(p), idx, _mm512_loadu_si512(p + 64));
    const __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(p + 128), idx, _mm512_loadu_si512(p + 192));
    return _mm512_mask_blend_epi8((__mmask64)0xFFFFFFFF00000000ull, lo, hi);
}
inline uint64_t grid_r4_stride4_bytes(const uint8_t* p, int k) {  // bytes p[4 ib + k], ib < 8
    uint64_t v = 0;
    for (int ib = 0; ib < 8; ++ib) v |= (uint64_t)p[4 * ib + k] << (8 * ib);
    return v;
}
inline void grid_r4_nib_scales(const uint8_t* p, int k, float ud, float* out) {  // (u d) (2 nib + 1), 2 per byte
    for (int ib = 0; ib < 8; ++ib)
        for (int h = 0; h < 2; ++h) out[2 * ib + h] = ud * (float)(2 * ((p[4 * ib + k] >> (4 * h)) & 15) + 1);
}

template <uint32_t Type>
inline void grid_raw_r4_vec(const uint8_t* b, int k, GridRaw& o) {
    using namespace quant;
    const GridPackedTables& tabs = grid_packed_tables();
    const float d = rd_f16(b + 2 * k);
    if constexpr (Type == T_IQ2_XXS_R4 || Type == T_IQ3_XXS_R4) {
        const __m512i wi = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
        const __m256i words = _mm512_castsi512_si256(_mm512_permutex2var_epi32(
            _mm512_loadu_si512(b + 8), _mm512_add_epi32(wi, _mm512_set1_epi32(k)), _mm512_loadu_si512(b + 72)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.neg), grid_r4_unscramble(words));
        grid_r4_word_scales(words, (Type == T_IQ2_XXS_R4 ? 0.125f : 0.25f) * d, o.sc);
        if constexpr (Type == T_IQ2_XXS_R4) {
            const __m512i lh = grid_lookup32<2>(tabs.iq2xxs, grid_r4_rows16(b + 136, k), 0, 0);
            for (int z = 0; z < 4; ++z) _mm512_store_si512(o.g + 8 * z, grid_expand_iq2(lh, z));
        } else {
            static const GridR4Base64 base = grid_r4_base64({0, 1, 2, 3, 4, 5, 6, 7});  // index m of row k at 32 ib + 8 k + m
            const __m512i idx = grid_r4_rows64(b + 136, 8 * k, base);
            const __m512i lo = grid_lut8<2>(tabs.iq3xxs[0], idx, 0, 0), hi = grid_lut8<2>(tabs.iq3xxs[1], idx, 0, 0);
            const __m512i mags = grid_iq3_mags(T_IQ3_XXS);
            for (int z = 0; z < 4; ++z) _mm512_store_si512(o.g + 8 * z, grid_expand_iq3(lo, hi, z, mags));
        }
    } else if constexpr (Type == T_IQ2_XS_R4) {
        // 16-bit entries 16 ib + 4 k + l: grid index in bits 0-8, scrambled sign index in 9-15
        alignas(64) static const uint16_t wi[32] = {0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51,
                                                    0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51};
        const __m512i idx = _mm512_add_epi16(_mm512_load_si512(wi), _mm512_set1_epi16((short)(4 * k)));
        const __m512i v = _mm512_mask_blend_epi16(
            (__mmask32)0xFFFF0000u, _mm512_permutex2var_epi16(_mm512_loadu_si512(b + 8), idx, _mm512_loadu_si512(b + 72)),
            _mm512_permutex2var_epi16(_mm512_loadu_si512(b + 136), idx, _mm512_loadu_si512(b + 200)));
        const __m512i lh = grid_lookup32<4>(tabs.iq2xs, _mm512_cvtepi16_epi8(v), (uint32_t)_mm512_test_epi16_mask(v, _mm512_set1_epi16(0x100)), 0);
        for (int z = 0; z < 4; ++z) _mm512_store_si512(o.g + 8 * z, grid_expand_iq2(lh, z));
        const __m256i t = _mm512_cvtepi16_epi8(_mm512_srli_epi16(v, 9));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.neg), _mm256_xor_si256(t, _mm256_add_epi8(t, t)));
        grid_r4_nib_scales(b + 264, k, 0.125f * d, o.sc);
    } else if constexpr (Type == T_IQ2_S_R4) {
        const uint64_t qh = grid_r4_stride4_bytes(b + 136, k);  // bits 2l, 2l + 1 of byte ib: index bits 8, 9
        const __m512i lh = grid_lookup32<8>(tabs.iq2s, grid_r4_rows16(b + 8, k), (uint32_t)_pext_u64(qh, 0x5555555555555555ull),
                                            (uint32_t)_pext_u64(qh, 0xAAAAAAAAAAAAAAAAull));
        for (int z = 0; z < 4; ++z) _mm512_store_si512(o.g + 8 * z, grid_expand_iq2(lh, z));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.neg), grid_r4_rows16(b + 168, k));
        grid_r4_nib_scales(b + 296, k, 0.125f * d, o.sc);
    } else {
        static_assert(Type == T_IQ3_S_R4);
        static const GridR4Base64 base = grid_r4_base64({0, 8, 16, 24, 4, 12, 20, 28});  // index m at 32 ib + 8 (m % 4) + 4 (m / 4) + k
        const __m512i idx = grid_r4_rows64(b + 8, k, base);
        const __mmask64 b8 = (__mmask64)grid_r4_stride4_bytes(b + 264, k);  // bit m of byte ib: index 8 ib + m
        const __m512i lo = grid_lut8<4>(tabs.iq3s[0], idx, b8, 0), hi = grid_lut8<4>(tabs.iq3s[1], idx, b8, 0);
        const __m512i mags = grid_iq3_mags(T_IQ3_S);
        for (int z = 0; z < 4; ++z) _mm512_store_si512(o.g + 8 * z, grid_expand_iq3(lo, hi, z, mags));
        uint32_t sw[8];
        for (int ib = 0; ib < 8; ++ib) sw[ib] = grid_iq3s_r4_signs(b + 296 + 16 * ib + 4 * k);
        std::memcpy(o.neg, sw, 32);
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = 4 * ib + k;
            const float dl = d * (float)(1 + 2 * nib(b[424 + ls % 16], ls / 16));
            set_scale(o, 2 * ib, dl);
            set_scale(o, 2 * ib + 1, dl);
        }
    }
}
#endif

template <uint32_t Type>
void grid_raw_r4(const uint8_t* b, int k, GridRaw& o) {
    using namespace quant;
#ifdef IKLLM_GRID_VEC512
    return grid_raw_r4_vec<Type>(b, k, o);
#endif
    const float d = rd_f16(b + 2 * k);
    uint8_t s8[32];
    for (int ib = 0; ib < 8; ++ib) {
        if constexpr (Type == T_IQ2_S_R4) {  // index low bytes at 8, qh at 136, signs at 168, scales at 296
            const uint8_t sc = b[296 + 4 * ib + k], qh = b[136 + 4 * ib + k];
            for (int h = 0; h < 2; ++h) set_scale(o, 2 * ib + h, (0.125f * d) * (float)(2 * nib(sc, h) + 1));
            for (int l = 0; l < 4; ++l) {
                o.g[4 * ib + l] = kIq2sGrid[b[8 + 16 * ib + 4 * k + l] | bits(qh, 2 * l, 2) << 8];
                s8[4 * ib + l] = b[168 + 16 * ib + 4 * k + l];
            }
        } else if constexpr (Type == T_IQ3_S_R4) {  // index low bytes at 8, qh at 264, signs at 296, scales at 424
            const int ls = 4 * ib + k;
            const float dl = d * (float)(1 + 2 * nib(b[424 + ls % 16], ls / 16));
            set_scale(o, 2 * ib, dl);
            set_scale(o, 2 * ib + 1, dl);
            const uint8_t qh = b[264 + 4 * ib + k];
            auto idx = [&](int m) { return b[8 + 32 * ib + 8 * (m % 4) + 4 * (m / 4) + k] | bit(qh, m) << 8; };
            for (int l = 0; l < 4; ++l) o.g[4 * ib + l] = (uint64_t)kIq3sGrid[idx(2 * l)] | (uint64_t)kIq3sGrid[idx(2 * l + 1)] << 32;
            const uint32_t sw = grid_iq3s_r4_signs(b + 296 + 16 * ib + 4 * k);
            std::memcpy(s8 + 4 * ib, &sw, 4);
        } else if constexpr (Type == T_IQ2_XS_R4) {
            const uint8_t sc = b[264 + 4 * ib + k];
            for (int h = 0; h < 2; ++h) set_scale(o, 2 * ib + h, (0.125f * d) * (float)(2 * nib(sc, h) + 1));
            for (int l = 0; l < 4; ++l) {
                const uint16_t v = rd_u16(b + 8 + 2 * (16 * ib + 4 * k + l));
                o.g[4 * ib + l] = kIq2xsGrid[v & 511];
                s8[4 * ib + l] = unscramble_sign((uint8_t)(v >> 9));
            }
        } else {  // sign-and-scale word: byte l = (tau_l << 1) | bit l of the 4-bit scale
            const uint32_t a = rd_u32(b + 8 + 4 * (4 * ib + k));
            const int sc = (int)((a & 1) | ((a >> 7) & 2) | ((a >> 14) & 4) | ((a >> 21) & 8));
            const float dl = (Type == T_IQ2_XXS_R4 ? 0.125f * d : 0.25f * d) * (float)(2 * sc + 1);
            set_scale(o, 2 * ib, dl);
            set_scale(o, 2 * ib + 1, dl);
            for (int l = 0; l < 4; ++l) {
                s8[4 * ib + l] = unscramble_sign((uint8_t)((a >> (8 * l + 1)) & 127));
                if constexpr (Type == T_IQ2_XXS_R4)
                    o.g[4 * ib + l] = kIq2xxsGrid[b[136 + 16 * ib + 4 * k + l]];
                else
                    o.g[4 * ib + l] = (uint64_t)kIq3xxsGrid[b[136 + 32 * ib + 8 * k + 2 * l]] |
                                      (uint64_t)kIq3xxsGrid[b[136 + 32 * ib + 8 * k + 2 * l + 1]] << 32;
            }
        }
    }
    std::memcpy(o.neg, s8, 32);
}

template <uint32_t Type>
void grid_r4_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                 int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
#if !defined(IKLLM_GRID_DECODE512) && !defined(IKLLM_GRID_AVX2)
    // Portable (scalar, NEON): the decoded rows' signed codes, the plain types' row dot.
    std::vector<GridCodes> codes((size_t)(4 * nb));
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* grp = w + (size_t)r * wrb;
        for (int k = 0; k < 4; ++k)
            for (int64_t b = 0; b < nb; ++b) {
                GridRaw raw;
                grid_raw_r4<Type>(grp + (size_t)grid_r4_bytes<Type>() * b, k, raw);
                grid_codes_of_raw<quant::T_IQ2_XXS>(raw, codes[(size_t)(k * nb + b)]);  // magnitudes and signs
            }
        for (int64_t t = 0; t < nt; ++t)
            for (int k = 0; k < 4; ++k) y[t * ys + r + k] = grid_row_dot(codes.data() + k * nb, act + (size_t)t * arb, nb);
    }
#else
    std::vector<GridRaw> raw((size_t)(4 * nb));
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* grp = w + (size_t)r * wrb;
        for (int64_t b = 0; b < nb; ++b)
            for (int k = 0; k < 4; ++k) grid_raw_r4<Type>(grp + (size_t)grid_r4_bytes<Type>() * b, k, raw[(size_t)(k * nb + b)]);
        for (int64_t t0 = 0; t0 < nt; t0 += kGridTileTokens) {
            const int tile = (int)std::min<int64_t>(kGridTileTokens, nt - t0);
            for (int k = 0; k < 4; ++k)  // (the plain IQ2 / IQ3 types' dot: magnitudes and sign masks)
                grid_row_tile<quant::T_IQ2_XXS>(raw.data() + k * nb, nb, act + (size_t)t0 * arb, arb, tile, y + t0 * ys + r + k, ys);
        }
    }
#endif
}

}  // namespace
}  // namespace ikllm::cpu
