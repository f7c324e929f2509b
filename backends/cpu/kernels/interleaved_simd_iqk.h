// SIMD kernels of the row-interleaved ik K types IQ2_K_R4, IQ3_K_R4 and IQ5_K_R4 against Q8_K
// activations (quant-formats.md §12.6), driven by run_interleaved of interleaved_simd.h.
// Lanes are (column half h, row k) as in KIQ4KR4. Per 32-column sub-block ib the weights become
// four byte vectors (one per 4-column group t of each half) and the products are scaled in the
// integer domain: maddubs gives int16 pair sums, which are multiplied by the sub-block scales
// held as int16 pairs (madd / vpdpwssd) - so one float conversion per 256 columns.
// IQ2_K / IQ3_K weights are made unsigned (table value + offset, no sign trick); the offset and
// the second value set ("extra" bit: value + shift) come back as integer corrections
// c = sc * (shift * x - offset) times the Q8_K per-16 code sums. IQ5_K values reach -126, so
// they stay signed (|v| <= 126 keeps maddubs exact) and only the value-set shift is corrected.
// This 256-bit version serves the AVX2 file; with AVX-512 (VNNI, VBMI) interleaved_simd_iqk512.h
// provides the same kernel structs on 512-bit vectors instead.
#pragma once
#include "kernels/interleaved_simd.h"
#include "kernels/interleaved_simd_iqk512.h"

#if defined(__AVX2__) && !defined(IKLLM_IQK_R4_ZMM)
namespace ikllm::cpu {
namespace {

// acc + int16 pairs of p times int16 pairs of sc, per 32-bit lane.
inline __m256i madd_sc(__m256i acc, __m256i p, __m256i sc) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(acc, p, sc);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
#endif
}

// Eight int8 scales (lane order) -> both int16 halves of each 32-bit lane; lo8 / hi8 pick the
// low / high 8 bytes of x.
inline __m256i sc_pairs_lo8(__m128i x) { return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(x, x)); }
inline __m256i sc_pairs_hi8(__m128i x) { return _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(x, x)); }

// All-ones in the lanes whose byte e32 (one per lane) has bit ib set.
inline __m256i lane_bit(__m256i e32, int ib) {
    const __m256i b = _mm256_set1_epi32(1 << ib);
    return _mm256_cmpeq_epi32(_mm256_and_si256(e32, b), b);
}

// 4-bit scales (slot 8ib + lane, nibble ib / 4 of byte 8 (ib % 4) + lane) as 8 signed bytes
// (two sub-blocks per 128-bit vector: ib even in the low 8 bytes).
inline __m128i nib_scales(const uint8_t* s32, int ib) {
    const __m128i x = _mm_loadu_si128((const __m128i*)(s32 + 16 * ((ib % 4) / 2)));
    return _mm_and_si128(ib < 4 ? x : _mm_srli_epi16(x, 4), _mm_set1_epi8(15));
}
inline __m256i pairs_of(__m128i sc8, int ib) { return ib % 2 ? sc_pairs_hi8(sc8) : sc_pairs_lo8(sc8); }

// Prepared 256-column block of a 4-row group.
template <bool Signed>
struct IqkPrep {
    __m256 d;          // fp16 row scales, lane (h, k) -> row k
    __m256i sc[8];     // int16 scale pairs of sub-block ib
    __m256i corr[4];   // int16 pairs (c of ib 2j, c of ib 2j+1) per lane
    __m256i u[8][4];   // unsigned operand of group t (|v| when Signed)
    __m256i s[Signed ? 8 : 1][4];  // signed values (sign source) when Signed
};

// Sub-block ib's activation codes for vector t: lanes 0-3 take a[16h + 4g[t]..] with g = t
// (2-bit R4 layout) or the NIB4 order (0, 2, 1, 3); the high lanes are the h = 1 half.
template <bool Nib4>
inline void iqk_acts(const int8_t* a, __m256i out[4]) {
    const __m256i A = _mm256_loadu_si256((const __m256i*)a);
    out[0] = _mm256_shuffle_epi32(A, 0x00);
    out[1] = _mm256_shuffle_epi32(A, Nib4 ? 0xAA : 0x55);
    out[2] = _mm256_shuffle_epi32(A, Nib4 ? 0x55 : 0xAA);
    out[3] = _mm256_shuffle_epi32(A, 0xFF);
}

// One Q8_K block against a prepared block. Group: how many int16 maddubs results may be added
// before scaling without overflow (2 * max|u| * 127 * Group <= 32767).
template <int Group, bool Signed, bool Nib4>
inline __m256 iqk_accum(const IqkPrep<Signed>& p, const uint8_t* a, __m256 acc) {
    const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
    // per-16 code sums as (ib 2j, ib 2j+1) pairs: half 0 in lanes 0-3, half 1 in lanes 4-7
    const __m256i bs = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)(a + kQ8KOffBsums)),
                                           _mm256_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15, 0, 1, 4,
                                                            5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15));
    // independent accumulators: vpdpwssd chains would otherwise bound the speed by latency
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256(), s2 = _mm256_setzero_si256(), s3 = _mm256_setzero_si256();
    for (int j = 0; j < 4; j += 2) {
        const __m256i b0 = _mm256_permutevar8x32_epi32(
            bs, _mm256_setr_epi32(2 * j, 2 * j, 2 * j, 2 * j, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1));
        const __m256i b1 = _mm256_permutevar8x32_epi32(
            bs, _mm256_setr_epi32(2 * j + 2, 2 * j + 2, 2 * j + 2, 2 * j + 2, 2 * j + 3, 2 * j + 3, 2 * j + 3, 2 * j + 3));
        s2 = madd_sc(s2, b0, p.corr[j]);
        s3 = madd_sc(s3, b1, p.corr[j + 1]);
    }
    for (int ib = 0; ib < 8; ++ib) {
        __m256i av[4], x[4];
        iqk_acts<Nib4>(qs + 32 * ib, av);
        for (int t = 0; t < 4; ++t) {
            if constexpr (Signed) av[t] = _mm256_sign_epi8(av[t], p.s[ib][t]);
            x[t] = _mm256_maddubs_epi16(p.u[ib][t], av[t]);
        }
        if constexpr (Group >= 2) {
            x[0] = _mm256_add_epi16(x[0], x[1]);
            x[2] = _mm256_add_epi16(x[2], x[3]);
        }
        if constexpr (Group >= 4) {
            if (ib % 2) s1 = madd_sc(s1, _mm256_add_epi16(x[0], x[2]), p.sc[ib]);
            else s0 = madd_sc(s0, _mm256_add_epi16(x[0], x[2]), p.sc[ib]);
        } else {
            s0 = madd_sc(s0, x[0], p.sc[ib]);
            s1 = madd_sc(s1, x[2], p.sc[ib]);
        }
        if constexpr (Group < 2) {
            s2 = madd_sc(s2, x[1], p.sc[ib]);
            s3 = madd_sc(s3, x[3], p.sc[ib]);
        }
    }
    const __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_mul_ps(p.d, _mm256_set1_ps(rd_f32(a + kQ8KOffD))), acc);
}

// c[ib] (int16 pairs) -> corr[j] = (c[2j], c[2j+1]).
inline void pack_corr(const __m256i c[8], __m256i corr[4]) {
    for (int j = 0; j < 4; ++j) corr[j] = _mm256_blend_epi16(c[2 * j], c[2 * j + 1], 0xAA);
}

// IQ2_K_R4 x Q8_K: 304 bytes per 256 columns. Codes 2 bits (R4 map), value iq2nl[q] + 5 x,
// scale nibble - 8 per (row, 16 columns). u = iq2nl[q] + 32 (1..49): Group 2.
struct KIQ2KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 304;
    static constexpr bool kDupHalves = true;
    using Prep = IqkPrep<false>;
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        static constexpr int8_t kTab[16] = {1, 19, 33, 49};  // kIq2nl[0..3] + 32
        p.d = dup4(cvt_f16x4(blk));
        const __m256i e = u8x8_epi32(blk + 8);
        const __m256i tab = lut16(kTab), three = _mm256_set1_epi8(3);
        __m256i c[8];
        for (int ib = 0; ib < 8; ++ib) {
            const __m128i sc8 = _mm_sub_epi8(nib_scales(blk + 16, ib), _mm_set1_epi8(8));
            p.sc[ib] = pairs_of(sc8, ib);
            const __m256i f = _mm256_add_epi16(_mm256_set1_epi16(-32), _mm256_and_si256(lane_bit(e, ib), _mm256_set1_epi16(5)));
            c[ib] = _mm256_mullo_epi16(p.sc[ib], f);
            const __m256i q = _mm256_loadu_si256((const __m256i*)(blk + 48 + 32 * ib));
            p.u[ib][0] = _mm256_shuffle_epi8(tab, _mm256_and_si256(q, three));
            p.u[ib][1] = _mm256_shuffle_epi8(tab, _mm256_and_si256(_mm256_srli_epi16(q, 2), three));
            p.u[ib][2] = _mm256_shuffle_epi8(tab, _mm256_and_si256(_mm256_srli_epi16(q, 4), three));
            p.u[ib][3] = _mm256_shuffle_epi8(tab, _mm256_and_si256(_mm256_srli_epi16(q, 6), three));
        }
        pack_corr(c, p.corr);
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return iqk_accum<2, false, false>(p, arow + (size_t)b * kQ8KBlockBytes, acc);
    }
};

// IQ3_K_R4 x Q8_K: 440 bytes per 256 columns. Code = 2 bits (R4 map) + high bit, value
// iq3nl[q] + 4 x; scale (2 n + 1) with a sign bit. u = iq3nl[q] + 64 (1..111): Group 1.
struct KIQ3KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 440;
    static constexpr bool kDupHalves = true;
    using Prep = IqkPrep<false>;
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        static constexpr int8_t kTab[16] = {1, 24, 41, 54, 65, 77, 92, 111};  // kIq3nl[0..7] + 64
        p.d = dup4(cvt_f16x4(blk));
        const __m256i e = u8x8_epi32(blk + 8);
        const __m128i s8 = _mm_loadl_epi64((const __m128i*)(blk + 16));  // byte lane: bit ib = scale sign
        const __m128i sgn = _mm_unpacklo_epi64(s8, s8);
        const __m256i tab = lut16(kTab), three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
        __m256i c[8];
        for (int ib = 0; ib < 8; ++ib) {
            const __m128i n = nib_scales(blk + 24, ib);
            const __m128i mag = _mm_add_epi8(_mm_add_epi8(n, n), _mm_set1_epi8(1));
            // sign bits of sub-blocks ib (low 8 bytes) and ib + 1 (high 8 bytes) for pairs_of
            const int ib0 = ib & ~1;
            const __m128i bits = _mm_set_epi64x((long long)(0x0101010101010101ull << (ib0 + 1)),
                                                (long long)(0x0101010101010101ull << ib0));
            const __m128i neg = _mm_cmpeq_epi8(_mm_and_si128(sgn, bits), bits);
            const __m128i sc8 = _mm_sub_epi8(_mm_xor_si128(mag, neg), neg);
            p.sc[ib] = pairs_of(sc8, ib);
            const __m256i f = _mm256_add_epi16(_mm256_set1_epi16(-64), _mm256_and_si256(lane_bit(e, ib), _mm256_set1_epi16(4)));
            c[ib] = _mm256_mullo_epi16(p.sc[ib], f);
            const __m256i q = _mm256_loadu_si256((const __m256i*)(blk + 56 + 32 * ib));
            // high bits: byte 4k + i of the 16, bit 4h + t -> bit 2 after a right shift by t
            const __m256i h = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(blk + 312 + 16 * ib)));
            const __m256i h4 = _mm256_slli_epi32(_mm256_srlv_epi32(h, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), 2);
            p.u[ib][0] = _mm256_shuffle_epi8(tab, _mm256_or_si256(_mm256_and_si256(q, three), _mm256_and_si256(h4, four)));
            for (int t = 1; t < 4; ++t) {
                const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * t), three);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(h4, t), four);
                p.u[ib][t] = _mm256_shuffle_epi8(tab, _mm256_or_si256(lo, hi));
            }
        }
        pack_corr(c, p.corr);
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return iqk_accum<1, false, false>(p, arow + (size_t)b * kQ8KBlockBytes, acc);
    }
};

// IQ5_K_R4 x Q8_K: 704 bytes per 256 columns. NIB4 low nibbles + fifth bit (bit beta5 of byte
// 576 + 16 ib + 4k + i), value iq5nl[q] + 2 x, 6-bit split scales - 32. Signed, Group 1.
struct KIQ5KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 704;
    static constexpr bool kDupHalves = true;
    using Prep = IqkPrep<true>;
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        p.d = dup4(cvt_f16x4(blk));
        const __m256i e = u8x8_epi32(blk + 8);
        const __m256i tlo = lut16(vals::kIq5nl), thi = lut16(vals::kIq5nl + 16);
        // the 64 split 6-bit scales - 32 as bytes in slot order (s0: slots 0..31, s1: 32..63): low
        // nibble of byte 32 + s % 32 (nibble s / 32), 2 high bits of byte 16 + s % 16 (bits 2 (s / 16))
        const __m256i lo = _mm256_loadu_si256((const __m256i*)(blk + 32));
        const __m128i hb = _mm_loadu_si128((const __m128i*)(blk + 16));
        const __m256i h01 = _mm256_set_m128i(_mm_srli_epi16(hb, 2), hb), h23 = _mm256_srli_epi16(h01, 4);
        const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15), k32 = _mm256_set1_epi8(32);
        const __m256i s0 = _mm256_sub_epi8(
            _mm256_or_si256(_mm256_and_si256(lo, m15), _mm256_slli_epi16(_mm256_and_si256(h01, m3), 4)), k32);
        const __m256i s1 = _mm256_sub_epi8(
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo, 4), m15), _mm256_slli_epi16(_mm256_and_si256(h23, m3), 4)), k32);
        __m256i c[8];
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i sv = ib < 4 ? s0 : s1;
            p.sc[ib] = pairs_of((ib % 4) < 2 ? _mm256_castsi256_si128(sv) : _mm256_extracti128_si256(sv, 1), ib);
            c[ib] = _mm256_and_si256(lane_bit(e, ib), _mm256_slli_epi16(p.sc[ib], 1));
            __m256i q[4];
            nib4_split(blk + 64 + 64 * ib, q);
            // vector j holds column groups (g, g + 4), g = 0 2 1 3: fifth bits beta5 = 0 1 4 5 (+2)
            const __m256i h = _mm256_srlv_epi32(
                _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(blk + 576 + 16 * ib))),
                _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2));
            static constexpr int kBit[4] = {0, 1, 4, 5};
            for (int j = 0; j < 4; ++j) {
                // blendv selects by bit 7: move the fifth bit there
                const __m256i sel = _mm256_slli_epi16(h, 7 - kBit[j]);
                const __m256i v = _mm256_blendv_epi8(_mm256_shuffle_epi8(tlo, q[j]), _mm256_shuffle_epi8(thi, q[j]), sel);
                p.s[ib][j] = v;
                p.u[ib][j] = _mm256_abs_epi8(v);
            }
        }
        pack_corr(c, p.corr);
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return iqk_accum<1, true, true>(p, arow + (size_t)b * kQ8KBlockBytes, acc);
    }
};

}  // namespace
}  // namespace ikllm::cpu

#endif  // __AVX2__ && !IKLLM_IQK_R4_ZMM
