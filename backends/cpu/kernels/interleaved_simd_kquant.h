// SIMD kernels of four more row-interleaved types (quant-formats.md §12.3, §12.5, §12.6):
// Q5_K_R4 and IQ5_KS_R4 against Q8_K32, Q6_K_R4 against Q8_K, IQ4_NL_R4 against Q8_2_X4. Batches
// go through run_interleaved of interleaved_simd.h; a single token through run_interleaved_fused
// (below), which decodes each block straight into the dot products. Lanes are (column half, row)
// as in the NIB4 kernels there. The 256-column kernels apply their small integer sub-block scales
// in integers (vpmaddwd on AVX2, vpmulld after vpdpbusd with VNNI), so a 256-column block costs
// one int -> float conversion per token; per-32-column float terms (mins, value-set offsets) are
// paired as sub-blocks j and j + 4 in the two lane halves, 4 FMAs per block. Their activations
// come from the SIMD encoders (byte-identical to the reference ones).
// Unnamed namespace: one private copy per ISA file.
#pragma once
#include "kernels/interleaved_simd.h"

#if defined(__AVX2__)
#include "kernels/act_q8_2_x4_simd.h"
#include "kernels/act_q8_k_simd.h"
#endif

#if defined(__AVX2__)
namespace ikllm::cpu {
namespace {

// Activation codes of a 32-column sub-block in nib4_split's order, by in-lane dword broadcasts
// (lanes 0-3 take dword j of columns 0-15, lanes 4-7 dword j of columns 16-31).
inline void nib4_acts_ps(const int8_t* a, __m256i out[4]) {
    const __m256i A = _mm256_loadu_si256((const __m256i*)a);
    out[0] = _mm256_shuffle_epi32(A, 0x00);
    out[1] = _mm256_shuffle_epi32(A, 0xAA);
    out[2] = _mm256_shuffle_epi32(A, 0x55);
    out[3] = _mm256_shuffle_epi32(A, 0xFF);
}

// With VNNI (vpdpbusd never saturates) signed table values v are used as unsigned v + 128 and
// the 128 * (code sum) is taken off through the activation block sums; AVX2's maddubs would
// saturate, so there |v| times sign(a, v) is used.
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
inline constexpr bool kOffsetValues = true;
#else
inline constexpr bool kOffsetValues = false;
#endif

// Integer sub-block scales per 32-bit lane, in the form scaled_dot4 takes: int32 with VNNI, else
// the int16 pair (sc, sc) for vpmaddwd.
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
inline constexpr bool kScPairs = false;
// acc + sc * sum over the 4 vectors of u8(u) * s8(a), per lane.
template <int>
inline __m256i scaled_dot4(__m256i acc, const __m256i u[4], const __m256i a[4], __m256i sc) {
    __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u[0], a[0]);
    for (int j = 1; j < 4; ++j) s = _mm256_dpbusd_epi32(s, u[j], a[j]);
    return _mm256_add_epi32(acc, _mm256_mullo_epi32(s, sc));
}
#else
inline constexpr bool kScPairs = true;
// Sum16 = how many maddubs results can be added in int16 without overflow (pair sums of the
// type's |u| * 127 times Sum16 stay below 32768).
template <int Sum16>
inline __m256i scaled_dot4(__m256i acc, const __m256i u[4], const __m256i a[4], __m256i sc) {
    for (int j = 0; j < 4; j += Sum16) {
        __m256i p = _mm256_maddubs_epi16(u[j], a[j]);
        for (int i = 1; i < Sum16; ++i) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(u[j + i], a[j + i]));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
    }
    return acc;
}
#endif
// int32 scale lanes -> scaled_dot4's form.
inline __m256i sc_lanes(__m256i sc32) {
    return kScPairs ? _mm256_blend_epi16(sc32, _mm256_slli_epi32(sc32, 16), 0xAA) : sc32;
}
// Unsigned byte 4j + k of each 128-bit half of x in 32-bit lane k of that half, zero-extended:
// as int32, or (Pair) as the int16 pair (byte, byte).
template <bool Pair>
inline __m256i pick_u8(__m256i x, int j) {
    const __m256i idx = Pair ? _mm256_add_epi32(_mm256_set1_epi32((int)0xFF00FF00u), _mm256_set1_epi32(0x10001 * 4 * j))
                             : _mm256_add_epi32(_mm256_set1_epi32((int)0xFFFFFF00u), _mm256_set1_epi32(4 * j));
    const __m256i k = Pair ? _mm256_setr_epi32(0, 0x10001, 0x20002, 0x30003, 0, 0x10001, 0x20002, 0x30003)
                           : _mm256_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3);
    return _mm256_shuffle_epi8(x, _mm256_add_epi32(idx, k));
}

// The 16 qh bytes of a 4-row sub-block (byte 4k + i) in lanes 0-3, the same shifted right by
// `hi_shift` in lanes 4-7, so that vector j of nib4_split finds its 5th bit at one position.
inline __m256i qh_lanes(const uint8_t* qh, int hi_shift) {
    const __m128i h = _mm_loadu_si128((const __m128i*)qh);
    return _mm256_set_m128i(_mm_srli_epi16(h, hi_shift), h);
}
// Bit B of every byte of h moved to bit 4 (other bits cleared).
template <int B>
inline __m256i bit_to_4(__m256i h) {
    const __m256i s = B <= 4 ? _mm256_slli_epi16(h, 4 - B) : _mm256_srli_epi16(h, B - 4);
    return _mm256_and_si256(s, _mm256_set1_epi8(16));
}
// 5-bit table lookup of NIB4 codes: tbl[nibble | (bit B of h) << 4], the low (High = false) or
// high nibbles of the code bytes q; tbl = 32 int8 values xor `flip` per byte.
template <int B, bool High>
inline __m256i lut32(__m256i q, __m256i h, const int8_t* tbl, __m256i flip) {
#if defined(__AVX512VBMI__) && defined(__AVX512VL__)
    // vpermb reads index bits 0-4: low nibble from q, bit 4 from h, whatever sits above
    const __m256i t = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)tbl), flip);
    const __m256i n = High ? _mm256_srli_epi16(q, 4) : q;
    const __m256i hb = B <= 4 ? _mm256_slli_epi16(h, 4 - B) : _mm256_srli_epi16(h, B - 4);
    return _mm256_permutexvar_epi8(_mm256_ternarylogic_epi32(n, hb, _mm256_set1_epi8(15), 0xE4), t);  // 15 ? n : hb
#else
    const __m256i n = High ? hi4(q) : lo4(q);
    const __m256i lo = _mm256_shuffle_epi8(_mm256_xor_si256(lut16(tbl), flip), n);
    const __m256i hi = _mm256_shuffle_epi8(_mm256_xor_si256(lut16(tbl + 16), flip), n);
    return _mm256_blendv_epi8(lo, hi, _mm256_slli_epi16(h, 7 - B));  // bit B -> bit 7 of each byte
#endif
}

// ---- kernels: as in interleaved_simd.h, plus meta (per-block scales), values (sub-block ib's
// ---- weight operands) and fused (one token: meta + values straight into the dot products) -----

// Q5_K_R4 x Q8_K32: 704 bytes per 256 columns; 5-bit codes 0..31, value dl * q - ml.
struct KQ5KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 704;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m256 d;
        __m256 mn[4];  // dmin * m: lanes 0-3 sub-block j, lanes 4-7 sub-block j + 4
        __m256i sc[8];
        __m256i q[8][4];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void meta(const uint8_t* blk, Prep& p) {
        p.d = dup4(cvt_f16x4(blk));
        const __m256 dmin = dup4(cvt_f16x4(blk + 8));
        // scale and min of slot is = 4ib + k as byte is: low bits from byte 32 + is, high bits
        // from nibble is / 16 of byte 16 + is % 16
        const __m256i m15 = _mm256_set1_epi8(15);
        const __m256i l = _mm256_loadu_si256((const __m256i*)(blk + 32));
        const __m256i h = _mm256_and_si256(qh_lanes(blk + 16, 4), m15);
        const __m256i sc = _mm256_or_si256(_mm256_and_si256(l, m15), _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(3)), 4));
        const __m256i m = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), m15),
                                          _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(12)), 2));
        const __m256i sc0 = _mm256_permute2x128_si256(sc, sc, 0x00), sc1 = _mm256_permute2x128_si256(sc, sc, 0x11);
        for (int ib = 0; ib < 8; ++ib) p.sc[ib] = pick_u8<kScPairs>(ib < 4 ? sc0 : sc1, ib % 4);
        for (int j = 0; j < 4; ++j) p.mn[j] = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(pick_u8<false>(m, j)));
    }
    static void values(const uint8_t* blk, int ib, __m256i q[4]) {
        nib4_split(blk + 192 + 64 * ib, q);
        const __m256i h = qh_lanes(blk + 64 + 16 * ib, 4);  // 5th bit of vector j at bit j
        q[0] = _mm256_or_si256(q[0], bit_to_4<0>(h));
        q[1] = _mm256_or_si256(q[1], bit_to_4<1>(h));
        q[2] = _mm256_or_si256(q[2], bit_to_4<2>(h));
        q[3] = _mm256_or_si256(q[3], bit_to_4<3>(h));
    }
    static void prepare(const uint8_t* blk, Prep& p) {
        meta(blk, p);
        for (int ib = 0; ib < 8; ++ib) values(blk, ib, p.q[ib]);
    }
    template <bool kFused>
    static __m256 accum_t(const Prep& p, const uint8_t* blk, const uint8_t* arow, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        __m256i s = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            __m256i aq[4], q[4];
            nib4_acts_ps(qs + 32 * ib, aq);
            if constexpr (kFused) values(blk, ib, q);
            s = scaled_dot4<4>(s, kFused ? q : p.q[ib], aq, p.sc[ib]);  // pairs <= 2 * 31 * 127
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.d, _mm256_set1_ps(rd_f32(a + kQ8KOffD))), acc);
        const __m256 bs = _mm256_loadu_ps((const float*)(a + kQ8KOffBsums));  // d * per-32 code sums
        acc = _mm256_fnmadd_ps(p.mn[0], _mm256_shuffle_ps(bs, bs, 0x00), acc);
        acc = _mm256_fnmadd_ps(p.mn[1], _mm256_shuffle_ps(bs, bs, 0x55), acc);
        acc = _mm256_fnmadd_ps(p.mn[2], _mm256_shuffle_ps(bs, bs, 0xAA), acc);
        return _mm256_fnmadd_ps(p.mn[3], _mm256_shuffle_ps(bs, bs, 0xFF), acc);
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return accum_t<false>(p, nullptr, arow, b, acc);
    }
    static __m256 fused(Prep& p, const uint8_t* blk, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        meta(blk, p);
        return accum_t<true>(p, blk, arow, b, acc);
    }
};

// Q6_K_R4 x Q8_K: 840 bytes per 256 columns; codes u = low4 | high2 << 4, value d * sc * (u - 32)
// with an int8 scale per 16 columns (= per lane). The -32 is applied through the Q8_K block sums.
struct KQ6KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 840;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m256 d;
        __m256i sc[8];
        __m256i sp[4];  // int16 pairs (scale of sub-block j, of sub-block j + 4) per lane
        __m256i q[8][4];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void meta(const uint8_t* blk, Prep& p) {
        p.d = dup4(cvt_f16x4(blk));
        __m256i s32[8];
        for (int ib = 0; ib < 8; ++ib) {
            s32[ib] = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(blk + 8 + 8 * ib)));  // lane 4h + k
            p.sc[ib] = sc_lanes(s32[ib]);
        }
        for (int j = 0; j < 4; ++j) p.sp[j] = _mm256_blend_epi16(s32[j], _mm256_slli_epi32(s32[j + 4], 16), 0xAA);
    }
    static void values(const uint8_t* blk, int ib, __m256i q[4]) {
        const __m256i m2 = _mm256_set1_epi8(0x30);
        nib4_split(blk + 328 + 64 * ib, q);
        // high-2-bit byte of (half h, row k, i) at 32ib + 16h + 4k + i: vector j's pair at bits 2*(0,1,2,3)
        const __m256i h = _mm256_loadu_si256((const __m256i*)(blk + 72 + 32 * ib));
        q[0] = _mm256_or_si256(q[0], _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
        q[1] = _mm256_or_si256(q[1], _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
        q[2] = _mm256_or_si256(q[2], _mm256_and_si256(h, m2));
        q[3] = _mm256_or_si256(q[3], _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
    }
    static void prepare(const uint8_t* blk, Prep& p) {
        meta(blk, p);
        for (int ib = 0; ib < 8; ++ib) values(blk, ib, p.q[ib]);
    }
    template <bool kFused>
    static __m256 accum_t(const Prep& p, const uint8_t* blk, const uint8_t* arow, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        __m256i s = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            __m256i aq[4], q[4];
            nib4_acts_ps(qs + 32 * ib, aq);
            if constexpr (kFused) values(blk, ib, q);
            s = scaled_dot4<2>(s, kFused ? q : p.q[ib], aq, p.sc[ib]);  // pairs <= 2 * 63 * 127
        }
        // sum over sub-blocks of sc * bsum16(2ib + h): int16 pairs (bs[2j + h], bs[2j + 8 + h]) per lane
        const __m128i b0 = _mm_loadu_si128((const __m128i*)(a + kQ8KOffBsums));
        const __m128i b1 = _mm_loadu_si128((const __m128i*)(a + kQ8KOffBsums + 16));
        const __m256i u = _mm256_set_m128i(_mm_unpackhi_epi16(b0, b1), _mm_unpacklo_epi16(b0, b1));
        const __m256i t = _mm256_permutevar8x32_epi32(u, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
        __m256i c = _mm256_madd_epi16(p.sp[0], _mm256_shuffle_epi32(t, 0x00));
        c = _mm256_add_epi32(c, _mm256_madd_epi16(p.sp[1], _mm256_shuffle_epi32(t, 0x55)));
        c = _mm256_add_epi32(c, _mm256_madd_epi16(p.sp[2], _mm256_shuffle_epi32(t, 0xAA)));
        c = _mm256_add_epi32(c, _mm256_madd_epi16(p.sp[3], _mm256_shuffle_epi32(t, 0xFF)));
        s = _mm256_sub_epi32(s, _mm256_slli_epi32(c, 5));
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.d, _mm256_set1_ps(rd_f32(a + kQ8KOffD))), acc);
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return accum_t<false>(p, nullptr, arow, b, acc);
    }
    static __m256 fused(Prep& p, const uint8_t* blk, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        meta(blk, p);
        return accum_t<true>(p, blk, arow, b, acc);
    }
};

// Weight operands u and activation codes of signed values v: (v + 128, a) with offset values,
// else (|v|, sign(a, v)). av = |v| when already known.
inline void signed_ops(const __m256i v[4], const __m256i* av, __m256i u[4], __m256i aq[4]) {
    for (int j = 0; j < 4; ++j) {
        if constexpr (kOffsetValues) {
            u[j] = v[j];
        } else {
            u[j] = av ? av[j] : _mm256_abs_epi8(v[j]);
            aq[j] = _mm256_sign_epi8(aq[j], v[j]);
        }
    }
}

// IQ5_KS_R4 x Q8_K32: group = 4 float32 row scales, then 672 bytes per 256 columns; scale byte
// s per (row, 32 columns): (s & 254) - 127, bit 0 selects the value set (+2). The set offset (and
// with offset values the -128) goes through the per-32 float block sums.
struct KIQ5KSR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 16, kBlockBytes = 672;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m256 dd;
        __m256 fx[4];  // d * sc * (2 * set bit [- 128]): lanes 0-3 sub-block j, lanes 4-7 sub-block j + 4
        __m256i sc[8];
        __m256i v[8][4];
        __m256i av[kOffsetValues ? 1 : 8][4];  // |v| (sign trick only)
    };
    static void begin(const uint8_t* group, Prep& p) { p.dd = dup4(_mm_loadu_ps((const float*)group)); }
    static void meta(const uint8_t* blk, Prep& p) {
        const __m256i sb = _mm256_loadu_si256((const __m256i*)blk);  // byte 4ib + k
        const __m256i sb0 = _mm256_permute2x128_si256(sb, sb, 0x00), sb1 = _mm256_permute2x128_si256(sb, sb, 0x11);
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i x = pick_u8<kScPairs>(ib < 4 ? sb0 : sb1, ib % 4);
            p.sc[ib] = kScPairs ? _mm256_sub_epi16(_mm256_and_si256(x, _mm256_set1_epi16(254)), _mm256_set1_epi16(127))
                                : _mm256_sub_epi32(_mm256_and_si256(x, _mm256_set1_epi32(254)), _mm256_set1_epi32(127));
        }
        for (int j = 0; j < 4; ++j) {
            const __m256i x = pick_u8<false>(sb, j);  // lanes k + 4e: sub-block j + 4e
            const __m256i sc = _mm256_sub_epi32(_mm256_and_si256(x, _mm256_set1_epi32(254)), _mm256_set1_epi32(127));
            __m256i f = _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(1)), 1);
            if constexpr (kOffsetValues) f = _mm256_sub_epi32(f, _mm256_set1_epi32(128));
            p.fx[j] = _mm256_mul_ps(p.dd, _mm256_cvtepi32_ps(_mm256_mullo_epi32(sc, f)));
        }
    }
    static void values(const uint8_t* blk, int ib, __m256i v[4]) {
        const __m256i flip = _mm256_set1_epi8(kOffsetValues ? (char)0x80 : 0);
        const __m256i q01 = _mm256_loadu_si256((const __m256i*)(blk + 32 + 64 * ib));
        const __m256i q23 = _mm256_loadu_si256((const __m256i*)(blk + 64 + 64 * ib));
        // nib4_split's vectors; beta5 map: vector j's 5th bit at bits (0, 1, 4, 5) in lanes 0-3,
        // (2, 3, 6, 7) in lanes 4-7
        const __m256i h = qh_lanes(blk + 544 + 16 * ib, 2);
        v[0] = lut32<0, false>(q01, h, vals::kIq5nl, flip);
        v[1] = lut32<1, true>(q01, h, vals::kIq5nl, flip);
        v[2] = lut32<4, false>(q23, h, vals::kIq5nl, flip);
        v[3] = lut32<5, true>(q23, h, vals::kIq5nl, flip);
    }
    static void prepare(const uint8_t* blk, Prep& p) {
        meta(blk, p);
        for (int ib = 0; ib < 8; ++ib) {
            values(blk, ib, p.v[ib]);
            if constexpr (!kOffsetValues)
                for (int j = 0; j < 4; ++j) p.av[ib][j] = _mm256_abs_epi8(p.v[ib][j]);
        }
    }
    template <bool kFused>
    static __m256 accum_t(const Prep& p, const uint8_t* blk, const uint8_t* arow, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        __m256i s = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            __m256i aq[4], v[4], u[4];
            nib4_acts_ps(qs + 32 * ib, aq);
            if constexpr (kFused) values(blk, ib, v);
            signed_ops(kFused ? v : p.v[ib], kFused || kOffsetValues ? nullptr : p.av[ib], u, aq);
            s = scaled_dot4<1>(s, u, aq, p.sc[ib]);  // maddubs pairs <= 2 * 127 * 127
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.dd, _mm256_set1_ps(rd_f32(a + kQ8KOffD))), acc);
        const __m256 bs = _mm256_loadu_ps((const float*)(a + kQ8KOffBsums));  // d * per-32 code sums
        acc = _mm256_fmadd_ps(p.fx[0], _mm256_shuffle_ps(bs, bs, 0x00), acc);
        acc = _mm256_fmadd_ps(p.fx[1], _mm256_shuffle_ps(bs, bs, 0x55), acc);
        acc = _mm256_fmadd_ps(p.fx[2], _mm256_shuffle_ps(bs, bs, 0xAA), acc);
        return _mm256_fmadd_ps(p.fx[3], _mm256_shuffle_ps(bs, bs, 0xFF), acc);
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return accum_t<false>(p, nullptr, arow, b, acc);
    }
    static __m256 fused(Prep& p, const uint8_t* blk, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        meta(blk, p);
        return accum_t<true>(p, blk, arow, b, acc);
    }
};

// IQ4_NL_R4 x Q8_2_X4: 72-byte blocks of 32 columns; value d_k * kvalues_iq4nl[code].
struct KIQ4NLR4 {
    static constexpr int N = 4, kCols = 32, kGroupMeta = 0, kBlockBytes = 72;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m256 d;
        __m256i v[4], av[4];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void values(const uint8_t* blk, __m256i v[4]) {
        const __m256i tbl = _mm256_xor_si256(lut16(vals::kIq4nl), _mm256_set1_epi8(kOffsetValues ? (char)0x80 : 0));
        nib4_split(blk + 8, v);
        for (int j = 0; j < 4; ++j) v[j] = _mm256_shuffle_epi8(tbl, v[j]);
    }
    static void prepare(const uint8_t* blk, Prep& p) {
        p.d = dup4(cvt_f16x4(blk));
        values(blk, p.v);
        if constexpr (!kOffsetValues)
            for (int j = 0; j < 4; ++j) p.av[j] = _mm256_abs_epi8(p.v[j]);
    }
    static __m256 dot(__m256 d, const __m256i v[4], const __m256i* av, const uint8_t* arow, int64_t ne0, int64_t b, __m256 acc) {
        const Q8Blk a = q8x4_block(arow, ne0, b);
        __m256i aq[4], u[4];
        nib4_acts_ps(a.qs, aq);
        signed_ops(v, av, u, aq);
        const int c = kOffsetValues ? -128 * a.sum : 0;  // the values are v + 128: once per row (lanes 0-3)
        __m256i s = _mm256_setr_epi32(c, c, c, c, 0, 0, 0, 0);
        for (int j = 0; j < 4; ++j) s = dot_us(s, u[j], aq[j]);
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, _mm256_set1_ps(a.d)), acc);
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t ne0, int64_t b, __m256 acc) {
        return dot(p.d, p.v, kOffsetValues ? nullptr : p.av, arow, ne0, b, acc);
    }
    static __m256 fused(Prep&, const uint8_t* blk, const uint8_t* arow, int64_t ne0, int64_t b, __m256 acc) {
        __m256i v[4];
        values(blk, v);
        return dot(dup4(cvt_f16x4(blk)), v, nullptr, arow, ne0, b, acc);
    }
};

// ---- driver: run_interleaved for batches; a single token takes K::fused, so a decoded block ------
// ---- goes straight into the dot products instead of through the Prep buffer in memory -----------
template <class K>
void run_interleaved_fused(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                           size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt != 1) return run_interleaved<K>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    static_assert(K::kDupHalves);
    const int64_t nblk = ne0 / K::kCols;
    typename K::Prep prep;
    for (int64_t g = r0; g + K::N <= r1; g += K::N) {
        const uint8_t* grp = w + (size_t)g * wrb;
        K::begin(grp, prep);
        __m256 acc = _mm256_setzero_ps();
        for (int64_t b = 0; b < nblk; ++b)
            acc = K::fused(prep, grp + K::kGroupMeta + (size_t)b * K::kBlockBytes, act, ne0, b, acc);
        _mm_storeu_ps(y + g, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
    }
}

}  // namespace
}  // namespace ikllm::cpu

#endif  // __AVX2__
