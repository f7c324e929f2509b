// Q6_K's 16-row panel fills (kquant_panel_avx512.h) computed with one row per 32-bit lane.
// The fills used to re-encode each row's 32-weight chunk on its own (a horizontal maximum, two
// scalar divisions, a scalar fp16 rounding) and then transpose the rows into the panel: at 64
// tokens that was 60 % of a Q6_K prompt product. Here the codes arrive already in the panel's
// layout -- vector k of a chunk holds columns 4k..4k+3 of all 16 rows, row r in dword lane r --
// so every per-row quantity (the chunk maximum, 127 / m, the new fp16 scale) is one lane of a
// vector and sixteen rows are re-encoded by the same instructions. Same operations per value as
// the scalar q6k_convert (kquant_q6k_conv.h): the same bits.
//
// Sits in an anonymous namespace like kquant_unpack.h: every kernel file compiles its own copy.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace ikllm::cpu {
namespace {

// One 32-weight chunk of 16 panel rows: q[k] columns 4k..4k+3 (codes 0..63, row r in dword lane
// r), sc0 / sc1 the rows' int8 scales of the chunk's 16-weight halves as int32 lanes, d the
// rows' scale. Padding rows: codes 32, scales 0, d 0 (they then encode as the fills' zeros).
struct Q6LaneChunk {
    __m512i q[8];
    __m512i sc0, sc1;
    __m512 d;
};

// Byte i (0..3) of every dword lane as a signed int32.
template <int I>
inline __m512i q6_lane_byte(__m512i v) {
    return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * I), 24);
}

// Per dword lane, the largest of its four unsigned bytes.
inline __m512i q6_lane_max_u8(__m512i v) {
    const __m512i t = _mm512_max_epu8(v, _mm512_srli_epi32(v, 16));
    return _mm512_and_si512(_mm512_max_epu8(t, _mm512_srli_epi32(t, 8)), _mm512_set1_epi32(0xff));
}

// Four int32 vectors of codes -128..127 (column i of every row in r[i]) back into the panel's
// byte order: per 128-bit lane the packs give column-major 4 x 4 bytes, one shuffle transposes.
inline __m512i q6_lane_pack(__m512i r0, __m512i r1, __m512i r2, __m512i r3) {
    const __m512i p = _mm512_packs_epi16(_mm512_packs_epi32(r0, r1), _mm512_packs_epi32(r2, r3));
    const __m512i tr = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    return _mm512_shuffle_epi8(p, tr);
}

// The re-encoded chunk (q6k_convert): P = sc * (q - 32), m = max |P| per row; codes P and scale
// d where m <= 127, else codes RNE(P * (127 / m)) and scale fp16(d * m / 127). Writes the 8 code
// vectors + 128 (the symmetric panel's unsigned codes) to oq and the 16 scales to od.
inline void q6_lane_conv_chunk(const Q6LaneChunk& c, uint8_t* oq, float* od) {
    const __m512i m32 = _mm512_set1_epi8(32);
    __m512i v[8];
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    for (int k = 0; k < 8; ++k) {
        v[k] = _mm512_sub_epi8(c.q[k], m32);
        const __m512i a = _mm512_abs_epi8(v[k]);
        if (k < 4) a0 = _mm512_max_epu8(a0, a);
        else a1 = _mm512_max_epu8(a1, a);
    }
    const __m512i m = _mm512_max_epi32(_mm512_mullo_epi32(q6_lane_max_u8(a0), _mm512_abs_epi32(c.sc0)),
                                       _mm512_mullo_epi32(q6_lane_max_u8(a1), _mm512_abs_epi32(c.sc1)));
    const __mmask16 big = _mm512_cmpgt_epi32_mask(m, _mm512_set1_epi32(127));
    const __m512 mf = _mm512_cvtepi32_ps(m), k127 = _mm512_set1_ps(127.0f);
    const __m512 id = _mm512_maskz_div_ps(big, k127, mf);
    const __m512 dn = _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_div_ps(_mm512_mul_ps(c.d, mf), k127), _MM_FROUND_TO_NEAREST_INT));
    _mm512_storeu_ps(od, _mm512_mask_blend_ps(big, c.d, dn));
    const __m512 s0 = _mm512_cvtepi32_ps(c.sc0), s1 = _mm512_cvtepi32_ps(c.sc1);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int k = 0; k < 8; ++k) {
        const __m512 s = k < 4 ? s0 : s1;
        auto code = [&](__m512i x) {  // P exact in float (|P| <= 4096); scaled where m > 127; RNE
            const __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(x), s);
            return _mm512_cvtps_epi32(_mm512_mask_mul_ps(p, big, p, id));
        };
        const __m512i r = q6_lane_pack(code(q6_lane_byte<0>(v[k])), code(q6_lane_byte<1>(v[k])),
                                       code(q6_lane_byte<2>(v[k])), code(q6_lane_byte<3>(v[k])));
        _mm512_storeu_si512(oq + 64 * k, _mm512_xor_si512(r, flip));
    }
}

// The exact panel's chunk (Q6Panel): codes q - 32, per half the scale d * sc and 128 x the sum
// of the half's codes.
inline void q6_lane_exact_chunk(const Q6LaneChunk& c, uint8_t* oq, float* s0, float* s1, int32_t* c0, int32_t* c1) {
    const __m512i m32 = _mm512_set1_epi8(32), ones = _mm512_set1_epi8(1);
    __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int k = 0; k < 8; ++k) {
        _mm512_storeu_si512(oq + 64 * k, _mm512_sub_epi8(c.q[k], m32));
        sum[k / 4] = _mm512_dpbusd_epi32(sum[k / 4], c.q[k], ones);
    }
    const __m512i off = _mm512_set1_epi32(16 * 32);
    _mm512_storeu_si512(c0, _mm512_slli_epi32(_mm512_sub_epi32(sum[0], off), 7));
    _mm512_storeu_si512(c1, _mm512_slli_epi32(_mm512_sub_epi32(sum[1], off), 7));
    _mm512_storeu_ps(s0, _mm512_mul_ps(c.d, _mm512_cvtepi32_ps(c.sc0)));
    _mm512_storeu_ps(s1, _mm512_mul_ps(c.d, _mm512_cvtepi32_ps(c.sc1)));
}

}  // namespace
}  // namespace ikllm::cpu
