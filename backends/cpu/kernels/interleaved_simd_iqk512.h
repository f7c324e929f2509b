// 512-bit versions of the IQ2_K_R4 / IQ3_K_R4 / IQ5_K_R4 kernels of interleaved_simd_iqk.h for
// the AVX-512 file (F/BW/VL/VNNI/VBMI): two 32-column sub-blocks per vector, lane 8i + 4h + k =
// sub-block 2jj + i of pair jj, column half h, row k (run_interleaved sees the two sub-blocks
// folded into 8 lanes (h, k)). Every value, value set included, is looked up directly as
// u = value + offset (unsigned bytes up to 249); vpdpbusd sums u * a exactly in int32 (no int16
// stage to saturate), the offset comes back as -offset * (the lane's Q8_K 16-column sum), and
// the int32 sub-block scale multiplies the lane: integer sums exact, one float scaling per 256
// columns.
#pragma once
#include "kernels/interleaved_simd.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX512VBMI__)
#define IKLLM_IQK_R4_ZMM 1
namespace ikllm::cpu {
namespace {

// 8 bytes at p twice.
inline __m128i bytes8x2(const uint8_t* p) {
    const __m128i x = _mm_loadl_epi64((const __m128i*)p);
    return _mm_unpacklo_epi64(x, x);
}
// Lanes of pair jj whose byte e32 (one per lane (h, k), repeated) has bit 2jj + i set.
inline __mmask16 z_lane_bits(__m512i e32, int jj) {
    return _mm512_test_epi32_mask(e32, _mm512_slli_epi32(_mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1), 2 * jj));
}
// 16 bytes per sub-block at p (sub-blocks 2jj, 2jj + 1) as 128-bit lanes (s0, s0, s1, s1), the
// h = 1 lanes shifted right by sh bits.
inline __m512i z_halves(const uint8_t* p, int sh) {
    const __m512i z = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i*)p));
    const __m512i shifts = _mm512_set_epi32(sh, sh, sh, sh, 0, 0, 0, 0, sh, sh, sh, sh, 0, 0, 0, 0);
    return _mm512_srlv_epi32(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(1, 1, 0, 0)), shifts);
}

// Per-lane Q8_K block sums of pair jj: lane 8i + 4h + k takes the sum of sub-block 2jj + i,
// half h (index 4jj + 2i + h of the 16 per-16 sums).
struct ZBsIdx {
    alignas(64) int32_t v[4][16];
};
constexpr ZBsIdx make_zbs_idx() {
    ZBsIdx r{};
    for (int jj = 0; jj < 4; ++jj)
        for (int L = 0; L < 16; ++L) r.v[jj][L] = 4 * jj + 2 * (L / 8) + (L / 4) % 2;
    return r;
}
inline constexpr ZBsIdx kZBsIdx = make_zbs_idx();

// Value table + offset (all unsigned bytes), 64 entries.
template <int Off, int Size>
struct ZTab {
    alignas(64) uint8_t v[64];
};
template <int Off, int Size>
constexpr ZTab<Off, Size> make_ztab(const int8_t* vals) {
    ZTab<Off, Size> t{};
    for (int i = 0; i < 64; ++i) t.v[i] = (uint8_t)(i < Size ? vals[i] + Off : 0);
    return t;
}

struct ZqkPrep {
    __m256 d;         // fp16 row scales, lane (h, k) -> row k
    __m512i sc[4];    // int32 scales of sub-block pair jj
    __m512i u[4][4];  // value + offset of column group t
};

// One Q8_K block against a prepared block: per lane and pair, T = sum(u * a) - Off * (block sum
// of the lane's 16 columns) = sum(v * a) exactly (vpdpbusd has no int16 stage), times the scale.
template <int Off, bool Nib4>
inline __m256 zqk_accum(const ZqkPrep& p, const uint8_t* a, __m256 acc) {
    const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
    const __m512i boff = _mm512_mullo_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i*)(a + kQ8KOffBsums))),
                                            _mm512_set1_epi32(-Off));
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    for (int jj = 0; jj < 4; ++jj) {
        const __m512i A = _mm512_loadu_si512(qs + 64 * jj);
        __m512i t0 = _mm512_permutexvar_epi32(_mm512_load_si512(kZBsIdx.v[jj]), boff), t1 = _mm512_setzero_si512();
        t0 = _mm512_dpbusd_epi32(t0, p.u[jj][0], _mm512_shuffle_epi32(A, (_MM_PERM_ENUM)0x00));
        t1 = _mm512_dpbusd_epi32(t1, p.u[jj][1], _mm512_shuffle_epi32(A, (_MM_PERM_ENUM)(Nib4 ? 0xAA : 0x55)));
        t0 = _mm512_dpbusd_epi32(t0, p.u[jj][2], _mm512_shuffle_epi32(A, (_MM_PERM_ENUM)(Nib4 ? 0x55 : 0xAA)));
        t1 = _mm512_dpbusd_epi32(t1, p.u[jj][3], _mm512_shuffle_epi32(A, (_MM_PERM_ENUM)0xFF));
        const __m512i t = _mm512_mullo_epi32(_mm512_add_epi32(t0, t1), p.sc[jj]);
        if (jj % 2) s1 = _mm512_add_epi32(s1, t);
        else s0 = _mm512_add_epi32(s0, t);
    }
    const __m512i s = _mm512_add_epi32(s0, s1);
    const __m256i sumi = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_mul_ps(p.d, _mm256_set1_ps(rd_f32(a + kQ8KOffD))), acc);
}

// Software prefetch of the block 8 blocks ahead (the next group's rows follow directly). Only
// IQ5_K_R4 uses it: it lifts that type's single-token speed to the memory bandwidth the plain
// types reach, while measurably slowing the lighter IQ2_K_R4 / IQ3_K_R4.
template <int Bytes>
inline void z_prefetch_ahead(const uint8_t* blk) {
    for (int l = 0; l < Bytes; l += 64) _mm_prefetch((const char*)blk + 8 * Bytes + l, _MM_HINT_T0);
}

// 128-bit lane l of v (the extract needs an immediate).
inline __m128i z_lane128(__m512i v, int l) {
    switch (l) {
        case 0: return _mm512_castsi512_si128(v);
        case 1: return _mm512_extracti32x4_epi32(v, 1);
        case 2: return _mm512_extracti32x4_epi32(v, 2);
        default: return _mm512_extracti32x4_epi32(v, 3);
    }
}

// 4-bit scale nibbles of pair jj (slot 16jj + lane: nibble jj / 2 of byte 16 (jj % 2) + lane).
inline __m128i z_nib_scales(const uint8_t* s32, int jj) {
    const __m128i x = _mm_loadu_si128((const __m128i*)(s32 + 16 * (jj % 2)));
    return _mm_and_si128(jj < 2 ? x : _mm_srli_epi16(x, 4), _mm_set1_epi8(15));
}

// IQ2_K_R4: index q + 4 x into iq2nl + 32.
struct KIQ2KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 304;
    static constexpr bool kDupHalves = true;
    static constexpr int kOff = 32;
    using Prep = ZqkPrep;
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        static constexpr ZTab<kOff, 8> kTab = make_ztab<kOff, 8>(vals::kIq2nl);
        p.d = dup4(cvt_f16x4(blk));
        const __m512i e = _mm512_cvtepu8_epi32(bytes8x2(blk + 8));
        const __m512i tab = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i*)kTab.v)), three = _mm512_set1_epi8(3);
        for (int jj = 0; jj < 4; ++jj) {
            p.sc[jj] = _mm512_cvtepi8_epi32(_mm_sub_epi8(z_nib_scales(blk + 16, jj), _mm_set1_epi8(8)));
            const __m512i xs = _mm512_maskz_mov_epi32(z_lane_bits(e, jj), _mm512_set1_epi8(4));
            const __m512i q = _mm512_loadu_si512(blk + 48 + 64 * jj);
            // (q >> 2t) & 3 | xs
            p.u[jj][0] = _mm512_shuffle_epi8(tab, _mm512_ternarylogic_epi32(q, three, xs, 0xEA));
            p.u[jj][1] = _mm512_shuffle_epi8(tab, _mm512_ternarylogic_epi32(_mm512_srli_epi16(q, 2), three, xs, 0xEA));
            p.u[jj][2] = _mm512_shuffle_epi8(tab, _mm512_ternarylogic_epi32(_mm512_srli_epi16(q, 4), three, xs, 0xEA));
            p.u[jj][3] = _mm512_shuffle_epi8(tab, _mm512_ternarylogic_epi32(_mm512_srli_epi16(q, 6), three, xs, 0xEA));
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return zqk_accum<kOff, false>(p, arow + (size_t)b * kQ8KBlockBytes, acc);
    }
};

// IQ3_K_R4: index q + 4 hb + 8 x into iq3nl + 64; scale (2n + 1) negated by its sign bit.
struct KIQ3KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 440;
    static constexpr bool kDupHalves = true;
    static constexpr int kOff = 64;
    using Prep = ZqkPrep;
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        static constexpr ZTab<kOff, 16> kTab = make_ztab<kOff, 16>(vals::kIq3nl);
        p.d = dup4(cvt_f16x4(blk));
        const __m512i e = _mm512_cvtepu8_epi32(bytes8x2(blk + 8)), sg = _mm512_cvtepu8_epi32(bytes8x2(blk + 16));
        const __m512i tab = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i*)kTab.v));
        const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
        for (int jj = 0; jj < 4; ++jj) {
            const __m128i n = z_nib_scales(blk + 24, jj);
            const __m512i mag = _mm512_cvtepi8_epi32(_mm_add_epi8(_mm_add_epi8(n, n), _mm_set1_epi8(1)));
            p.sc[jj] = _mm512_mask_sub_epi32(mag, z_lane_bits(sg, jj), _mm512_setzero_si512(), mag);
            const __m512i xs = _mm512_maskz_mov_epi32(z_lane_bits(e, jj), _mm512_set1_epi8(8));
            const __m512i q = _mm512_loadu_si512(blk + 56 + 64 * jj);
            const __m512i h4 = _mm512_slli_epi32(z_halves(blk + 312 + 32 * jj, 4), 2);  // bit 4h + t -> bit t + 2
            for (int t = 0; t < 4; ++t) {
                const __m512i lo = _mm512_ternarylogic_epi32(_mm512_srli_epi16(q, 2 * t), three, xs, 0xEA);
                p.u[jj][t] = _mm512_shuffle_epi8(tab, _mm512_ternarylogic_epi32(_mm512_srli_epi16(h4, t), four, lo, 0xEA));
            }
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return zqk_accum<kOff, false>(p, arow + (size_t)b * kQ8KBlockBytes, acc);
    }
};

// IQ5_K_R4: index q + 16 hb + 32 x into iq5nl + 126 (0..249).
struct KIQ5KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 704;
    static constexpr bool kDupHalves = true;
    static constexpr int kOff = 126;
    using Prep = ZqkPrep;
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        static constexpr ZTab<kOff, 64> kTab = make_ztab<kOff, 64>(vals::kIq5nl);
        z_prefetch_ahead<kBlockBytes>(blk);
        p.d = dup4(cvt_f16x4(blk));
        const __m512i e = _mm512_cvtepu8_epi32(bytes8x2(blk + 8));
        const __m512i tab = _mm512_load_si512(kTab.v), m15 = _mm512_set1_epi8(15);
        // the 64 split 6-bit scales - 32 in slot order (slot 16jj + lane): low nibble of byte
        // 32 + s % 32 (nibble s / 32), 2 high bits of byte 16 + s % 16 (bits 2 (s / 16))
        const __m512i lo = _mm512_and_si512(
            _mm512_srlv_epi16(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(blk + 32))),
                              _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1)),
            m15);
        const __m512i hi = _mm512_srlv_epi16(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)(blk + 16))),
                                             _mm512_set_epi64(0x0006000600060006ll, 0x0006000600060006ll, 0x0004000400040004ll,
                                                              0x0004000400040004ll, 0x0002000200020002ll, 0x0002000200020002ll, 0, 0));
        // lo | (hi & 3) << 4, then - 32
        const __m512i sc = _mm512_sub_epi8(_mm512_ternarylogic_epi32(lo, _mm512_slli_epi16(hi, 4), _mm512_set1_epi8(0x30), 0xF8),
                                           _mm512_set1_epi8(32));
        for (int jj = 0; jj < 4; ++jj) {
            p.sc[jj] = _mm512_cvtepi8_epi32(z_lane128(sc, jj));
            // value set (index + 32) per lane; codes of sub-blocks 2jj, 2jj + 1 side by side
            const __m512i xs = _mm512_maskz_mov_epi32(z_lane_bits(e, jj), _mm512_set1_epi8(32));
            const uint8_t* qa = blk + 64 + 128 * jj;
            const __m512i q01 = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i*)qa)),
                                                   _mm256_loadu_si256((const __m256i*)(qa + 64)), 1);
            const __m512i q23 = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i*)(qa + 32))),
                                                   _mm256_loadu_si256((const __m256i*)(qa + 96)), 1);
            const __m512i q[4] = {_mm512_ternarylogic_epi32(q01, m15, xs, 0xEA),
                                  _mm512_ternarylogic_epi32(_mm512_srli_epi16(q01, 4), m15, xs, 0xEA),
                                  _mm512_ternarylogic_epi32(q23, m15, xs, 0xEA),
                                  _mm512_ternarylogic_epi32(_mm512_srli_epi16(q23, 4), m15, xs, 0xEA)};
            // fifth bits: vector j holds column groups (g, g + 4), g = 0 2 1 3: bits 0 1 4 5 (+2)
            const __m512i h = z_halves(blk + 576 + 32 * jj, 2);
            static constexpr int kBit[4] = {0, 1, 4, 5};
            for (int j = 0; j < 4; ++j) {
                const __mmask64 m = _mm512_test_epi8_mask(h, _mm512_set1_epi8((char)(1 << kBit[j])));
                p.u[jj][j] = _mm512_permutexvar_epi8(_mm512_mask_add_epi8(q[j], m, q[j], _mm512_set1_epi8(16)), tab);
            }
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        return zqk_accum<kOff, true>(p, arow + (size_t)b * kQ8KBlockBytes, acc);
    }
};

}  // namespace
}  // namespace ikllm::cpu
#endif
