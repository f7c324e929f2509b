// AVX-512 VNNI kernels for the 32-weight block types against Q8_2_X4 activations. Two blocks
// per 512-bit register; tiles of up to 3 weight rows x 6 tokens (one row at a time for a single
// token, which streams fastest): each group of 4 blocks is unpacked once per tile. Symmetric
// types take the token-pair form (tile_sym_pairs) from 2 tokens on. Prompt
// batches (>= 64 tokens) take the 16-row panel GEMM of legacy_panel_avx512.h.
// vpdpbusd wants unsigned x signed bytes: for signed weight values v the activation codes are
// flipped to a+128 (XOR 0x80) and the accumulator starts at -128*sum(v) per lane, which makes
// every lane an exact partial of sum(v*a). Affine types use their unsigned codes directly.
#include "kernels/matmul.h"
#include "quant/type_traits.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
// GCC 12 reports its own AVX-512 intrinsic headers (_mm512_undefined_*) as uninitialized.
#if defined(__GNUC__) && !defined(__clang__)  // GCC's own intrinsics (_mm512_undefined_*)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/act_q8_2_x4_simd.h"
#include "kernels/legacy_simd.h"
#include "kernels/legacy_sym_accum.h"
#include "kernels/legacy_panel_avx512.h"
#include "kernels/legacy_r8_avx512.h"
#include "kernels/prefetch.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

template <class P>
inline __m512i values2(const uint8_t* b) {  // blocks b and b + kBytes
    return _mm512_inserti64x4(_mm512_castsi256_si512(P::values(b)), P::values(b + P::kBytes), 1);
}

// Q5_0 / Q5_1 / Q4_0 have cheaper two-block unpacks with 512-bit ops.
inline __m512i nl4_nibbles2(const uint8_t* qs0, const uint8_t* qs1) {
    const __m256i x = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)), 1);
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(x), _mm256_srli_epi16(x, 4), 1);
    z = _mm512_and_si512(z, _mm512_set1_epi8(15));
    // [lo0 lo1 hi0 hi1] -> [lo0 hi0 lo1 hi1]
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7), z);
}
template <>
inline __m512i values2<Q4_0P>(const uint8_t* b) {
    return _mm512_sub_epi8(nl4_nibbles2(b + 2, b + 2 + Q4_0P::kBytes), _mm512_set1_epi8(8));
}
template <>
inline __m512i values2<Q4_1P>(const uint8_t* b) {
    return nl4_nibbles2(b + 4, b + 4 + Q4_1P::kBytes);
}
inline __m512i bit5_bytes2(const uint8_t* qh0, const uint8_t* qh1) {
    const __mmask64 m = (__mmask64)lq::rd32(qh0) | (__mmask64)lq::rd32(qh1) << 32;
    return _mm512_maskz_mov_epi8(m, _mm512_set1_epi8(0x10));
}
template <>
inline __m512i values2<Q5_0P>(const uint8_t* b) {
    constexpr int B = Q5_0P::kBytes;
    const __m512i q = _mm512_or_si512(nl4_nibbles2(b + 6, b + 6 + B), bit5_bytes2(b + 2, b + 2 + B));
    return _mm512_sub_epi8(q, _mm512_set1_epi8(16));
}
template <>
inline __m512i values2<Q5_1P>(const uint8_t* b) {
    constexpr int B = Q5_1P::kBytes;
    return _mm512_or_si512(nl4_nibbles2(b + 8, b + 8 + B), bit5_bytes2(b + 4, b + 4 + B));
}
template <>
inline __m512i values2<IQ4_NLP>(const uint8_t* b) {
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lq::kIq4nlValues)));
    return _mm512_shuffle_epi8(table, nl4_nibbles2(b + 2, b + 2 + IQ4_NLP::kBytes));
}
template <>
inline __m512i values2<MXFP4P>(const uint8_t* b) {
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lq::kMxfp4Values)));
    return _mm512_shuffle_epi8(table, nl4_nibbles2(b + 1, b + 1 + MXFP4P::kBytes));
}

// R weight rows (rows apart by wrb) against T tokens: activation loads and scale conversions are
// shared by the rows, weight unpacking by the tokens.
template <class P, int R, int T>
void tile(const uint8_t* wr, size_t wrb, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i rep4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 acc[R][T];
    __m128 accm[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            acc[r][t] = _mm512_setzero_ps();
            accm[r][t] = _mm_setzero_ps();
        }
    for (int64_t g = 0; g < ng; ++g) {
        if constexpr (R == 1 && T <= 2) prefetch_weights<4 * P::kBytes>(wr + 4 * g * P::kBytes);
        __m512i v0[R], v1[R], c0[R], c1[R];
        __m128 dw[R], mw[R];
        for (int r = 0; r < R; ++r) {
            const uint8_t* wb = wr + r * wrb + 4 * g * P::kBytes;
            v0[r] = values2<P>(wb);
            v1[r] = values2<P>(wb + 2 * P::kBytes);
            c0[r] = c1[r] = _mm512_setzero_si512();
            if constexpr (!P::kAffine) {  // -128 * (sum of 4 values) per lane
                c0[r] = _mm512_sub_epi32(c0[r], _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, v0[r]));
                c1[r] = _mm512_sub_epi32(c1[r], _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, v1[r]));
            }
            dw[r] = P::scales4(wb);
            mw[r] = _mm_setzero_ps();
            if constexpr (P::kAffine) mw[r] = P::mins4(wb);
        }
        for (int t = 0; t < T; ++t) {
            const uint8_t* ag = act + t * arb + 144 * g;
            __m512i a0 = _mm512_loadu_si512(ag + 16), a1 = _mm512_loadu_si512(ag + 80);
            if constexpr (!P::kAffine) {
                a0 = _mm512_xor_si512(a0, flip);
                a1 = _mm512_xor_si512(a1, flip);
            }
            const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ag));
            const __m128 da = act_scales4(head);
            for (int r = 0; r < R; ++r) {
                __m512i d0, d1;
                if constexpr (P::kAffine) {
                    d0 = _mm512_dpbusd_epi32(c0[r], v0[r], a0);
                    d1 = _mm512_dpbusd_epi32(c1[r], v1[r], a1);
                } else {
                    d0 = _mm512_dpbusd_epi32(c0[r], a0, v0[r]);
                    d1 = _mm512_dpbusd_epi32(c1[r], a1, v1[r]);
                }
                // 128-bit lane j of u holds 4 exact partial sums of block j.
                const __m512i u =
                    _mm512_add_epi32(_mm512_shuffle_i64x2(d0, d1, 0x88), _mm512_shuffle_i64x2(d0, d1, 0xDD));
                const __m512 p = _mm512_permutexvar_ps(rep4, _mm512_castps128_ps512(_mm_mul_ps(dw[r], da)));
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(u), p, acc[r][t]);
                if constexpr (P::kAffine) accm[r][t] = _mm_fmadd_ps(_mm_mul_ps(mw[r], da), act_sums4(head), accm[r][t]);
            }
        }
    }
    float tail[R][T] = {};
    const __m256i flip8 = _mm256_set1_epi8((char)0x80);
    for (int64_t ib = 4 * ng; ib < nb; ++ib) {  // leftover blocks: 36-byte activation blocks
        for (int r = 0; r < R; ++r) {
            const uint8_t* wb = wr + r * wrb + ib * P::kBytes;
            const __m256i v = P::values(wb);
            __m256i c = _mm256_setzero_si256();
            if constexpr (!P::kAffine) c = _mm256_sub_epi32(c, _mm256_dpbusd_epi32(_mm256_setzero_si256(), flip8, v));
            const float dw = P::scale(wb);
            for (int t = 0; t < T; ++t) {
                const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act + t * arb, ne0, ib);
                const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs));
                __m256i d;
                if constexpr (P::kAffine) d = _mm256_dpbusd_epi32(c, v, a);
                else d = _mm256_dpbusd_epi32(c, _mm256_xor_si256(a, flip8), v);
                const float da = bf16_to_f32(ab.d_bf16);
                tail[r][t] += (dw * da) * (float)hsum_epi32(d);
                if constexpr (P::kAffine) tail[r][t] += (P::min(wb) * da) * (float)ab.sum;
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[t * ys + r] = _mm512_reduce_add_ps(acc[r][t]) + hsum128(accm[r][t]) + tail[r][t];
}

// Symmetric types in the reference's float order (legacy_sym_accum.h, SymTileAccum): unsigned
// codes u = v + kOffset, per group of 4 blocks 8 float lanes (block j's first 16 products in lane
// j, its last 16 in lane 4+j) and a 4-lane side sum of the offset terms.
template <class P>
inline __m512i uvalues2(const uint8_t* b) {
    return _mm512_add_epi8(values2<P>(b), _mm512_set1_epi8((char)P::kOffset));
}

// The blocks after the last full group of 4 (one row, one token), in SymTileAccum order: each adds
// its 8 quad sums to the 8 lanes and a quarter of its offset term to each side lane; then the
// final reduction ((lo + hi) + side, summed as (x0 + x2) + (x1 + x3)).
// Always inlined: as a call taking __m256 arguments GCC returns from it without vzeroupper, and the
// generic SSE code after the kernel then pays a state transition on every instruction.
template <class P>
[[gnu::always_inline]] inline float sym_finish(const uint8_t* wr, int64_t ne0, const uint8_t* act_t, __m256 acc, __m128 side) {
    const int64_t nb = ne0 / 32;
    for (int64_t ib = nb / 4 * 4; ib < nb; ++ib) {  // 36-byte activation blocks
        const uint8_t* wb = wr + ib * P::kBytes;
        const __m256i u = _mm256_add_epi8(P::values(wb), _mm256_set1_epi8((char)P::kOffset));
        const float dw = P::scale(wb);
        const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act_t, ne0, ib);
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs));
        const __m256i q = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a);
        const float da = bf16_to_f32(ab.d_bf16);
        const float quarter = ((-dw * (float)P::kOffset) * (da * (float)ab.sum)) * 0.25f;
        side = _mm_add_ps(side, _mm_set1_ps(quarter));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dw * da), _mm256_cvtepi32_ps(q), acc);
    }
    return hsum128(_mm_add_ps(_mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)), side));
}

template <class P, int R, int T>
void tile_sym(const uint8_t* wr, size_t wrb, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    const __m512i gather = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128 neg_off = _mm_set1_ps(-(float)P::kOffset);
    __m256 acc[R][T];
    __m128 side[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            acc[r][t] = _mm256_setzero_ps();
            side[r][t] = _mm_setzero_ps();
        }
    for (int64_t g = 0; g < ng; ++g) {
        __m512i u0[R], u1[R];
        __m128 dw[R], mo[R];
        for (int r = 0; r < R; ++r) {
            const uint8_t* wb = wr + r * wrb + 4 * g * P::kBytes;
            u0[r] = uvalues2<P>(wb);
            u1[r] = uvalues2<P>(wb + 2 * P::kBytes);
            dw[r] = P::scales4(wb);
            mo[r] = _mm_mul_ps(dw[r], neg_off);
        }
        for (int t = 0; t < T; ++t) {
            const uint8_t* ag = act + t * arb + 144 * g;
            const __m512i a0 = _mm512_loadu_si512(ag + 16), a1 = _mm512_loadu_si512(ag + 80);
            const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ag));
            const __m128 da = act_scales4(head);
            const __m128 das = _mm_mul_ps(da, act_sums4(head));
            for (int r = 0; r < R; ++r) {
                const __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u0[r], a0);
                const __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u1[r], a1);
                // 128-bit lane j: block j's 4 quads of bytes 0..15 (lo) / 16..31 (hi).
                const __m512i lo = _mm512_shuffle_i64x2(d0, d1, 0x88), hi = _mm512_shuffle_i64x2(d0, d1, 0xDD);
                __m512i x = _mm512_add_epi32(_mm512_unpacklo_epi32(lo, hi), _mm512_unpackhi_epi32(lo, hi));
                x = _mm512_add_epi32(x, _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0x4E));  // lane j: lo, hi, lo, hi
                const __m256i z = _mm512_castsi512_si256(_mm512_permutexvar_epi32(gather, x));
                const __m128 dd = _mm_mul_ps(dw[r], da);
                acc[r][t] = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), _mm256_cvtepi32_ps(z), acc[r][t]);
                side[r][t] = _mm_add_ps(side[r][t], _mm_mul_ps(mo[r], das));
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[t * ys + r] = sym_finish<P>(wr + r * wrb, ne0, act + t * arb, acc[r][t], side[r][t]);
}

// tile_sym<P, 1, 1> (one row, one token: token generation) two groups of 4 blocks at a time, so
// the horizontal sums of both share one transpose (7 shuffles for 16 block halves instead of 12),
// the 4-bit types unpack without cross-lane permutes and the weights are prefetched (prefetch.h). The float operations are tile_sym's,
// in its order (group g's fma before group g + 1's): bit-identical.
template <class P>
inline __m512i uvalues2_fast(const uint8_t* b) {
    if constexpr (std::is_same_v<P, Q4_0P> || std::is_same_v<P, IQ4_NLP> || std::is_same_v<P, MXFP4P>) {
        constexpr int off = std::is_same_v<P, Q4_0P> ? 2 : std::is_same_v<P, IQ4_NLP> ? 2 : 1;
        // [qs0, qs0, qs1, qs1] as 128-bit lanes, high nibbles of lanes 1 and 3, low of 0 and 2.
        const __m512i x = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + off)))),
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + off + P::kBytes))), 1);
        const __m512i n = _mm512_and_si512(_mm512_mask_srli_epi16(x, (__mmask32)0xFF00FF00u, x, 4), _mm512_set1_epi8(15));
        if constexpr (std::is_same_v<P, Q4_0P>) return _mm512_add_epi8(n, _mm512_set1_epi8((char)(P::kOffset - 8)));
        else {
            const uint8_t* tbl = std::is_same_v<P, IQ4_NLP> ? (const uint8_t*)lq::kIq4nlValues : (const uint8_t*)lq::kMxfp4Values;
            const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tbl)));
            return _mm512_add_epi8(_mm512_shuffle_epi8(table, n), _mm512_set1_epi8((char)P::kOffset));
        }
    } else {
        return uvalues2<P>(b);
    }
}

// Groups of 4 blocks (128 weights) whose activation floats fit tile_sym_row's stack arrays.
constexpr int64_t kRowActGroups = 256;

// Per block of one Q8_2_X4 activation row: its scale da and da * sum (the factors of tile_sym's
// float operations that do not depend on the weights).
inline void row_act_floats(const uint8_t* act, int64_t ng, float* pda, float* ps) {
    for (int64_t g = 0; g < ng; ++g) {
        const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(act + 144 * g));
        const __m128 da = act_scales4(head);
        _mm_store_ps(pda + 4 * g, da);
        _mm_store_ps(ps + 4 * g, _mm_mul_ps(da, act_sums4(head)));
    }
}

// The 4-bit symmetric types with an 18- or 17-byte block (fp16 or e8m0 scale, 16 code bytes):
// 8 blocks unpack with two byte permutes (vpermt2b) when the activation codes come in nibble
// order (row_act_nibbles: per group of 4 blocks their first 16 codes, then their last 16).
template <class P>
constexpr bool kNibbleRow = std::is_same_v<P, Q4_0P> || std::is_same_v<P, IQ4_NLP> || std::is_same_v<P, MXFP4P>;

inline void row_act_nibbles(const uint8_t* act, int64_t ng, uint8_t* an) {
    for (int64_t g = 0; g < ng; ++g) {
        const __m512i x = _mm512_loadu_si512(act + 144 * g + 16), y = _mm512_loadu_si512(act + 144 * g + 80);
        _mm512_store_si512(an + 128 * g, _mm512_shuffle_i64x2(x, y, 0x88));
        _mm512_store_si512(an + 128 * g + 64, _mm512_shuffle_i64x2(x, y, 0xDD));
    }
}

// Byte index (into two 64-byte sources) of the 16 code bytes of 4 blocks starting at block 'first',
// relative to byte 'base' of the 8-block group.
template <class P>
inline __m512i nibble_row_index(int first, int base) {
    constexpr int off = std::is_same_v<P, MXFP4P> ? 1 : 2;
    alignas(64) uint8_t ix[64];
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 16; ++i) ix[16 * j + i] = (uint8_t)((first + j) * P::kBytes + off + i - base);
    return _mm512_load_si512(ix);
}

// Unsigned codes (u = value + kOffset) from the nibbles n of a 4-bit type.
template <class P>
inline __m512i nibble_codes(__m512i n) {
    if constexpr (std::is_same_v<P, Q4_0P>) return n;  // kOffset = 8: u = n
    else {
        const uint8_t* tbl = std::is_same_v<P, IQ4_NLP> ? (const uint8_t*)lq::kIq4nlValues : (const uint8_t*)lq::kMxfp4Values;
        const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tbl)));
        return _mm512_add_epi8(_mm512_shuffle_epi8(table, n), _mm512_set1_epi8((char)P::kOffset));
    }
}

// an: the row's activation codes from row_act_nibbles (kNibbleRow types), else null.
template <class P>
void tile_sym_row(const uint8_t* wr, int64_t ne0, const uint8_t* act, const uint8_t* an, const float* pda, const float* ps,
                  float* y) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    // t (below) holds in 128-bit lane L the sums [d0, d1, d2, d3] of lane L; z_g / z_g+1 pick them
    // as [lo0, lo1, lo2, lo3, hi0, hi1, hi2, hi3] (tile_sym's lane order).
    const __m512i pick = an ? _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)
                            : _mm512_setr_epi32(0, 8, 1, 9, 4, 12, 5, 13, 2, 10, 3, 11, 6, 14, 7, 15);
    const __m128 neg_off = _mm_set1_ps(-(float)P::kOffset);
    const __m256 neg_off8 = _mm256_set1_ps(-(float)P::kOffset);
    __m256 acc = _mm256_setzero_ps();
    __m128 side = _mm_setzero_ps();
    int64_t g = 0;
    [[maybe_unused]] __m512i ix_lo, ix_hi;
    if constexpr (kNibbleRow<P>) {
        ix_lo = nibble_row_index<P>(0, 0);
        ix_hi = nibble_row_index<P>(4, 64);
    }
    for (; g + 2 <= ng; g += 2) {
        const uint8_t* wb = wr + 4 * g * P::kBytes;
        prefetch_weights<8 * P::kBytes>(wb);
        __m512i d0, d1, d2, d3;
        if constexpr (kNibbleRow<P>) {
            if (an) {
                // Group g: blocks 0-3 (their codes lie in bytes 0-127 of the 8 blocks), g + 1: 4-7
                // (bytes 64-143; the load past byte 143 is masked: no read beyond the row).
                const __m512i a = _mm512_loadu_si512(wb), b = _mm512_loadu_si512(wb + 64);
                const __m512i c = _mm512_maskz_loadu_epi8((__mmask64)((1ull << (8 * P::kBytes - 128)) - 1), wb + 128);
                const __m512i q0 = _mm512_permutex2var_epi8(a, ix_lo, b), q1 = _mm512_permutex2var_epi8(b, ix_hi, c);
                const __m512i m = _mm512_set1_epi8(15);
                const uint8_t* ag = an + 128 * g;
                d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibble_codes<P>(_mm512_and_si512(q0, m)), _mm512_load_si512(ag));
                d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibble_codes<P>(_mm512_and_si512(_mm512_srli_epi16(q0, 4), m)),
                                         _mm512_load_si512(ag + 64));
                d2 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibble_codes<P>(_mm512_and_si512(q1, m)), _mm512_load_si512(ag + 128));
                d3 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibble_codes<P>(_mm512_and_si512(_mm512_srli_epi16(q1, 4), m)),
                                         _mm512_load_si512(ag + 192));
            }
        }
        if (!kNibbleRow<P> || !an) {
            const uint8_t* ag = act + 144 * g;
            d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uvalues2_fast<P>(wb), _mm512_loadu_si512(ag + 16));
            d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uvalues2_fast<P>(wb + 2 * P::kBytes), _mm512_loadu_si512(ag + 80));
            d2 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uvalues2_fast<P>(wb + 4 * P::kBytes), _mm512_loadu_si512(ag + 160));
            d3 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uvalues2_fast<P>(wb + 6 * P::kBytes), _mm512_loadu_si512(ag + 224));
        }
        const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(d0, d1), _mm512_unpackhi_epi32(d0, d1));
        const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(d2, d3), _mm512_unpackhi_epi32(d2, d3));
        const __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
        const __m512 z = _mm512_cvtepi32_ps(_mm512_permutexvar_epi32(pick, t));
    __m256 dw8;
        if constexpr (std::is_same_v<P, Q4_0P> || std::is_same_v<P, IQ4_NLP>) {
            // The 8 fp16 scales lie at word 0, 9, ..., 63 of the 128 bytes at wb: one permute.
            const __m512i idx = _mm512_castsi128_si512(_mm_setr_epi16(0, 9, 18, 27, 36, 45, 54, 63));
            const __m512i h = _mm512_permutex2var_epi16(_mm512_loadu_si512(wb), idx, _mm512_loadu_si512(wb + 64));
            dw8 = _mm256_cvtph_ps(_mm512_castsi512_si128(h));
        } else {
            dw8 = _mm256_set_m128(P::scales4(wb + 4 * P::kBytes), P::scales4(wb));
        }
        // Per block: dd = dw * da, side term (dw * -offset) * (da * sum); da and da * sum come
        // precomputed (row_act_floats): the same float operations as tile_sym, so the same bits.
        const __m256 dd8 = _mm256_mul_ps(dw8, _mm256_loadu_ps(pda + 4 * g));
        const __m256 st8 = _mm256_mul_ps(_mm256_mul_ps(dw8, neg_off8), _mm256_loadu_ps(ps + 4 * g));
        acc = _mm256_fmadd_ps(_mm256_permute2f128_ps(dd8, dd8, 0x00), _mm512_castps512_ps256(z), acc);
        side = _mm_add_ps(side, _mm256_castps256_ps128(st8));
        acc = _mm256_fmadd_ps(_mm256_permute2f128_ps(dd8, dd8, 0x11), _mm512_extractf32x8_ps(z, 1), acc);
        side = _mm_add_ps(side, _mm256_extractf128_ps(st8, 1));
    }
    for (; g < ng; ++g) {  // an odd last group: tile_sym's steps
        const __m512i gather = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
        const uint8_t* wb = wr + 4 * g * P::kBytes;
        const uint8_t* ag = act + 144 * g;
        const __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uvalues2_fast<P>(wb), _mm512_loadu_si512(ag + 16));
        const __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uvalues2_fast<P>(wb + 2 * P::kBytes),
                                               _mm512_loadu_si512(ag + 80));
        const __m512i lo = _mm512_shuffle_i64x2(d0, d1, 0x88), hi = _mm512_shuffle_i64x2(d0, d1, 0xDD);
        __m512i x = _mm512_add_epi32(_mm512_unpacklo_epi32(lo, hi), _mm512_unpackhi_epi32(lo, hi));
        x = _mm512_add_epi32(x, _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0x4E));
        const __m256i zz = _mm512_castsi512_si256(_mm512_permutexvar_epi32(gather, x));
        const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ag));
        const __m128 dw = P::scales4(wb), da = act_scales4(head);
        const __m128 dd = _mm_mul_ps(dw, da);
        acc = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), _mm256_cvtepi32_ps(zz), acc);
        side = _mm_add_ps(side, _mm_mul_ps(_mm_mul_ps(dw, neg_off), _mm_mul_ps(da, act_sums4(head))));
    }
    y[0] = sym_finish<P>(wr, ne0, act, acc, side);
}

// Token-pair form of tile_sym for small batches (decoding many sequences at once): the same
// per-lane float operations, so bit-identical to tile_sym and the scalar kernel, without its
// horizontal sums. Weights and activation codes of a group of 4 blocks are rearranged into 4
// "steps": step s holds, for each of the 8 half-blocks L (block L%4, half L/4), its bytes
// 4s..4s+3. One vpdpbusd per step then adds 4 products to every half-block's own int32 lane, so
// after 4 steps lane L is exactly the half-block sum the float lane L needs. Two tokens share a
// register: lanes 0-7 for the first, 8-15 for the second (the weight steps are duplicated).
constexpr int64_t kPairMinTokens = 2;  // one token: the plain single-row tile streams fastest

// Dword index, in the 32 dwords of a group's 128 codes, of step s for the 16 lanes.
inline __m512i step_index(int s) {
    alignas(64) int32_t idx[16];
    for (int l = 0; l < 16; ++l) idx[l] = 8 * (l % 4) + 4 * ((l % 8) / 4) + s;
    return _mm512_load_si512(idx);
}

// One token pair's activations for one group: codes by step, scales and scaled sums.
struct alignas(64) PairGroup {
    uint8_t q[4][64];  // step s: [first token's 8 dwords | second token's]
    float da[16];      // da[j] of the first token at lanes j, 4+j; of the second at 8+j, 12+j
    float das[8];      // da[j] * sum_a[j]: first token lanes 0-3, second 4-7
    float pad[8];
};

// Rearranges the activation rows of tokens [0, nt) into ceil(nt/2) pairs x ng groups.
inline void build_pairs(const uint8_t* act, size_t arb, int64_t nt, int64_t ng, PairGroup* out) {
    __m512i idx[4];
    for (int s = 0; s < 4; ++s) idx[s] = step_index(s);
    for (int64_t p = 0; p < (nt + 1) / 2; ++p)
        for (int64_t g = 0; g < ng; ++g) {
            PairGroup& pg = out[p * ng + g];
            __m512i a0[2], a1[2];
            __m128 da[2], das[2];
            for (int k = 0; k < 2; ++k) {
                const int64_t t = 2 * p + k;
                if (t >= nt) {  // odd batch: the second token is zero and its results are dropped
                    a0[k] = a1[k] = _mm512_setzero_si512();
                    da[k] = das[k] = _mm_setzero_ps();
                    continue;
                }
                const uint8_t* ag = act + (size_t)t * arb + 144 * g;
                a0[k] = _mm512_loadu_si512(ag + 16);
                a1[k] = _mm512_loadu_si512(ag + 80);
                const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ag));
                da[k] = act_scales4(head);
                das[k] = _mm_mul_ps(da[k], act_sums4(head));
            }
            for (int s = 0; s < 4; ++s) {
                const __m512i x = _mm512_permutex2var_epi32(a0[0], idx[s], a1[0]);
                const __m512i y = _mm512_permutex2var_epi32(a0[1], idx[s], a1[1]);
                _mm512_store_si512(pg.q[s], _mm512_mask_blend_epi32((__mmask16)0xFF00, x, y));
            }
            for (int k = 0; k < 2; ++k) {
                _mm_store_ps(pg.da + 8 * k, da[k]);
                _mm_store_ps(pg.da + 8 * k + 4, da[k]);
                _mm_store_ps(pg.das + 4 * k, das[k]);
            }
        }
}

// R weight rows against NP token pairs (ntok real tokens, the last pair may be half).
template <class P, int R, int NP>
void tile_sym_pairs(const uint8_t* wr, size_t wrb, int64_t ne0, const PairGroup* pairs, const uint8_t* act, size_t arb,
                    int ntok, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    const __m128 neg_off = _mm_set1_ps(-(float)P::kOffset);
    __m512i idx[4];
    for (int s = 0; s < 4; ++s) idx[s] = step_index(s);
    __m512 acc[R][NP];
    __m256 side[R][NP];
    for (int r = 0; r < R; ++r)
        for (int p = 0; p < NP; ++p) {
            acc[r][p] = _mm512_setzero_ps();
            side[r][p] = _mm256_setzero_ps();
        }
    for (int64_t g = 0; g < ng; ++g) {
        for (int r = 0; r < R; ++r) {
            const uint8_t* wb = wr + r * wrb + 4 * g * P::kBytes;
            const __m512i u0 = uvalues2<P>(wb), u1 = uvalues2<P>(wb + 2 * P::kBytes);
            __m512i w[4];
            for (int s = 0; s < 4; ++s) w[s] = _mm512_permutex2var_epi32(u0, idx[s], u1);
            const __m128 dw = P::scales4(wb);
            const __m512 dw16 = _mm512_broadcast_f32x4(dw);
            const __m128 mo = _mm_mul_ps(dw, neg_off);
            const __m256 mo8 = _mm256_set_m128(mo, mo);
            for (int p = 0; p < NP; ++p) {
                const PairGroup& pg = pairs[p * ng + g];
                __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], _mm512_load_si512(pg.q[0]));
                d = _mm512_dpbusd_epi32(d, w[1], _mm512_load_si512(pg.q[1]));
                d = _mm512_dpbusd_epi32(d, w[2], _mm512_load_si512(pg.q[2]));
                d = _mm512_dpbusd_epi32(d, w[3], _mm512_load_si512(pg.q[3]));
                const __m512 dd = _mm512_mul_ps(dw16, _mm512_load_ps(pg.da));
                acc[r][p] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(d), acc[r][p]);
                side[r][p] = _mm256_add_ps(side[r][p], _mm256_mul_ps(mo8, _mm256_load_ps(pg.das)));
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int p = 0; p < NP; ++p)
            for (int k = 0; k < 2 && 2 * p + k < ntok; ++k) {
                const int t = 2 * p + k;
                const __m256 a = k == 0 ? _mm512_castps512_ps256(acc[r][p]) : _mm512_extractf32x8_ps(acc[r][p], 1);
                const __m128 sd = k == 0 ? _mm256_castps256_ps128(side[r][p]) : _mm256_extractf128_ps(side[r][p], 1);
                y[t * ys + r] = sym_finish<P>(wr + r * wrb, ne0, act + t * arb, a, sd);
            }
}

using PairFn = void (*)(const uint8_t*, size_t, int64_t, const PairGroup*, const uint8_t*, size_t, int, float*, int64_t);
template <class P, int R, int NP, size_t... I>
constexpr std::array<PairFn, R * NP> make_pair_fns(std::index_sequence<I...>) {
    return {&tile_sym_pairs<P, (int)(I / NP) + 1, (int)(I % NP) + 1>...};
}

template <class P>
void run_sym_pairs(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                   int64_t nt, float* y, int64_t ys) {
    // One row at a time against up to 8 pairs measured fastest (2 rows x 4 pairs: -20% at 16 tokens).
    constexpr int kR = 1, kNP = 8;
    static constexpr auto fns = make_pair_fns<P, kR, kNP>(std::make_index_sequence<kR * kNP>{});
    const int64_t ng = ne0 / 128, np = (nt + 1) / 2;
    std::vector<PairGroup> pairs((size_t)std::max<int64_t>(1, np * ng));
    build_pairs(act, arb, nt, ng, pairs.data());
    for (int64_t r = r0; r < r1; r += kR) {
        const int rr = (int)std::min<int64_t>(kR, r1 - r);
        for (int64_t p = 0; p < np; p += kNP) {
            const int pp = (int)std::min<int64_t>(kNP, np - p);
            fns[(rr - 1) * kNP + pp - 1](w + (size_t)r * wrb, wrb, ne0, pairs.data() + p * ng, act + (size_t)(2 * p) * arb, arb,
                                (int)std::min<int64_t>(2 * pp, nt - 2 * p), y + 2 * p * ys + r, ys);
        }
    }
}

using TileFn = void (*)(const uint8_t*, size_t, int64_t, const uint8_t*, size_t, float*, int64_t);
constexpr int kRows = 3, kTokens = 6;

template <class P, int R, int T>
constexpr TileFn tile_for() {
    if constexpr (P::kAffine) return &tile<P, R, T>;
    else return &tile_sym<P, R, T>;
}
template <class P, size_t... I>
constexpr std::array<TileFn, kRows * kTokens> make_tiles(std::index_sequence<I...>) {
    return {tile_for<P, (int)(I / kTokens) + 1, (int)(I % kTokens) + 1>()...};
}

template <class P>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    if (nt >= (P::kAffine ? kP32MinTokens : kSymBatchTokens)) return panel_matmul<P>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    if constexpr (!P::kAffine)
        if (nt >= kPairMinTokens) return run_sym_pairs<P>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    if constexpr (!P::kAffine)
        if (nt == 1 && ne0 / 128 <= kRowActGroups) {
            // Token generation: the activation's per-block floats once per call, then one weight
            // stream at a time (a single stream streams fastest).
            alignas(64) float pda[4 * kRowActGroups], ps[4 * kRowActGroups];
            alignas(64) uint8_t an[kNibbleRow<P> ? 128 * kRowActGroups : 64];
            row_act_floats(act, ne0 / 128, pda, ps);
            if constexpr (kNibbleRow<P>) row_act_nibbles(act, ne0 / 128, an);
            const uint8_t* nib = kNibbleRow<P> && ne0 >= 256 ? an : nullptr;
            for (int64_t r = r0; r < r1; ++r) tile_sym_row<P>(w + (size_t)r * wrb, ne0, act, nib, pda, ps, y + r);
            return;
        }
    static constexpr std::array<TileFn, kRows * kTokens> tiles =
        make_tiles<P>(std::make_index_sequence<kRows * kTokens>{});
    const int rows = nt == 1 ? 1 : kRows;  // one token: a single weight stream streams fastest
    for (int64_t r = r0; r < r1; r += rows) {
        const int rr = (int)std::min<int64_t>(rows, r1 - r);
        for (int64_t t = 0; t < nt; t += kTokens) {
            const int tt = (int)std::min<int64_t>(kTokens, nt - t);
            tiles[(rr - 1) * kTokens + (tt - 1)](w + (size_t)r * wrb, wrb, ne0, act + (size_t)t * arb, arb,
                                                 y + t * ys + r, ys);
        }
    }
}

}  // namespace

KernelTable legacy_kernels_avx512() {
    static const MatmulKernel kKernels[] = {
        {quant::T_Q4_0, Isa::avx512, simd_act_q8_2_x4(), run<Q4_0P>, true},
        {quant::T_Q4_1, Isa::avx512, simd_act_q8_2_x4(), run<Q4_1P>, true},
        {quant::T_Q5_0, Isa::avx512, simd_act_q8_2_x4(), run<Q5_0P>, true},
        {quant::T_Q5_1, Isa::avx512, simd_act_q8_2_x4(), run<Q5_1P>, true},
        {quant::T_Q8_0, Isa::avx512, simd_act_q8_2_x4(), run<Q8_0P>, true},
        {quant::T_Q6_0, Isa::avx512, simd_act_q8_2_x4(), run<Q6_0P>, true},
        {quant::T_IQ4_NL, Isa::avx512, simd_act_q8_2_x4(), run<IQ4_NLP>, true},
        {quant::T_MXFP4, Isa::avx512, simd_act_q8_2_x4(), run<MXFP4P>, true},
        {quant::T_Q4_0_R8, Isa::avx512, simd_act_q8_2_x4(), run_r8<R8Q4_0>, true},
        {quant::T_Q8_0_R8, Isa::avx512, simd_act_q8_2_x4(), run_r8<R8Q8_0>, true},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable legacy_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
