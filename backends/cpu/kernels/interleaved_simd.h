// SIMD kernels of the most used row-interleaved types (quant-formats.md §12), shared by
// interleaved_avx2.cpp and interleaved_avx512.cpp. The interleaving puts 4 bytes of each of the
// group's rows side by side, so one 32-bit lane accumulates one row and no horizontal sums are
// needed until the end of a row group. Integer dot products of unsigned weight bytes with
// signed activation codes use VNNI (vpdpbusd) when the file is built for AVX-512, else
// maddubs + madd; both give the same int32 sums (no saturation for |w|, |a| <= 127).
// Signed weight values use the sign trick: |w| times sign(a, w).
// Unnamed namespace: one private copy per ISA file.
#pragma once
#include "kernels/interleaved_common.h"

#if defined(__AVX2__)
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"

namespace ikllm::cpu {
namespace {

using namespace quant;

// acc + sum over each 4-byte group of u8(u) * s8(s), per 32-bit lane.
inline __m256i dot_us(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}
// Signed weights w (|w| <= 127, absw = |w|) times signed codes a.
inline __m256i dot_ss(__m256i acc, __m256i absw, __m256i w, __m256i a) { return dot_us(acc, absw, _mm256_sign_epi8(a, w)); }

inline __m256i bcast4(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
inline __m256i lo4(__m256i q) { return _mm256_and_si256(q, _mm256_set1_epi8(15)); }
inline __m256i hi4(__m256i q) { return _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(15)); }
inline __m256i lut16(const int8_t* table) {  // 16-entry byte table in both 128-bit lanes
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)table));
}
inline __m256i u8x8_epi32(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p)); }
inline __m128i u8x4_epi32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm_cvtepu8_epi32(_mm_cvtsi32_si128(v));
}
// 6-bit scales of slots 8ib .. 8ib+7 split as low nibbles in lo[32] and 2 high bits in hi[16]
// (get_split6 of interleaved_layouts.h), as 8 int32 lanes.
inline __m256i split6x8(const uint8_t* lo, const uint8_t* hi, int ib) {
    const __m256i l = _mm256_and_si256(_mm256_srli_epi32(u8x8_epi32(lo + 8 * (ib % 4)), 4 * (ib / 4)), _mm256_set1_epi32(15));
    const __m256i h = _mm256_and_si256(_mm256_srli_epi32(u8x8_epi32(hi + 8 * (ib % 2)), 2 * (ib / 2)), _mm256_set1_epi32(3));
    return _mm256_or_si256(l, _mm256_slli_epi32(h, 4));
}
inline __m256 cvt_f16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
inline __m128 cvt_f16x4(const uint8_t* p) { return _mm_cvtph_ps(_mm_loadl_epi64((const __m128i*)p)); }
inline __m256 dup4(__m128 v) { return _mm256_set_m128(v, v); }

// One Q8_2_X4 block (32 codes) of an encoded activation row.
struct Q8Blk {
    const int8_t* qs;
    float d;
    int sum;
};
inline Q8Blk q8x4_block(const uint8_t* row, int64_t ne0, int64_t ib) {
    const int64_t full = (ne0 / 32) / 4 * 4;
    if (ib < full) {
        const uint8_t* g = row + 144 * (ib / 4);
        const int k = (int)(ib % 4);
        return {(const int8_t*)(g + 16 + 32 * k), rd_bf16(g + 2 * k), (int16_t)rd_u16(g + 8 + 2 * k)};
    }
    const uint8_t* b = row + 144 * (full / 4) + 36 * (ib - full);
    return {(const int8_t*)(b + 4), rd_bf16(b), (int16_t)rd_u16(b + 2)};
}

// NIB4 quant area of a 4-row, 32-column sub-block (64 bytes) as four vectors whose lanes 0-3 /
// 4-7 are rows 0-3 at column groups (g0,g4) (g2,g6) (g1,g5) (g3,g7), g = 4-column group.
inline void nib4_split(const uint8_t* qa, __m256i out[4]) {
    const __m256i q01 = _mm256_loadu_si256((const __m256i*)qa), q23 = _mm256_loadu_si256((const __m256i*)(qa + 32));
    out[0] = lo4(q01);
    out[1] = hi4(q01);
    out[2] = lo4(q23);
    out[3] = hi4(q23);
}
// Activation codes of a 32-column sub-block arranged to match nib4_split's vectors.
inline void nib4_acts(const int8_t* a, __m256i out[4]) {
    const __m256i A = _mm256_loadu_si256((const __m256i*)a);
    out[0] = _mm256_permutevar8x32_epi32(A, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    out[1] = _mm256_permutevar8x32_epi32(A, _mm256_setr_epi32(2, 2, 2, 2, 6, 6, 6, 6));
    out[2] = _mm256_permutevar8x32_epi32(A, _mm256_setr_epi32(1, 1, 1, 1, 5, 5, 5, 5));
    out[3] = _mm256_permutevar8x32_epi32(A, _mm256_setr_epi32(3, 3, 3, 3, 7, 7, 7, 7));
}

// ---- kernels: each provides N, kCols, Prep, begin(group), prepare(group, block), accum, ----------
// ---- and the lane layout of its accumulator (8 rows, or rows 0-3 twice) -------------------------

// Q4_0_R8 x Q8_2_X4: 144-byte blocks, nibble codes 0..15, value (q - 8) * d_k.
struct KQ4_0R8 {
    static constexpr int N = 8, kCols = 32, kGroupMeta = 0, kBlockBytes = 144;
    static constexpr bool kDupHalves = false;
    struct Prep {
        __m256 d;
        __m256i lo[4], hi[4];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        p.d = cvt_f16x8(blk);
        for (int l = 0; l < 4; ++l) {
            const __m256i q = _mm256_loadu_si256((const __m256i*)(blk + 16 + 32 * l));
            p.lo[l] = lo4(q);
            p.hi[l] = hi4(q);
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t ne0, int64_t b, __m256 acc) {
        const Q8Blk a = q8x4_block(arow, ne0, b);
        __m256i s = _mm256_set1_epi32(-8 * a.sum);
        for (int l = 0; l < 4; ++l) {
            s = dot_us(s, p.lo[l], bcast4(a.qs + 4 * l));
            s = dot_us(s, p.hi[l], bcast4(a.qs + 16 + 4 * l));
        }
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.d, _mm256_set1_ps(a.d)), acc);
    }
};

// Q8_0_R8 x Q8_2_X4: 272-byte blocks of int8 codes.
struct KQ8_0R8 {
    static constexpr int N = 8, kCols = 32, kGroupMeta = 0, kBlockBytes = 272;
    static constexpr bool kDupHalves = false;
    struct Prep {
        __m256 d;
        __m256i w[8], aw[8];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        p.d = cvt_f16x8(blk);
        for (int j = 0; j < 8; ++j) {  // vector j holds columns 4j..4j+3 of the 8 rows
            p.w[j] = _mm256_loadu_si256((const __m256i*)(blk + 16 + 32 * (j % 4) + 128 * (j / 4)));
            p.aw[j] = _mm256_abs_epi8(p.w[j]);
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t ne0, int64_t b, __m256 acc) {
        const Q8Blk a = q8x4_block(arow, ne0, b);
        __m256i s = _mm256_setzero_si256();
        for (int j = 0; j < 8; ++j) s = dot_ss(s, p.aw[j], p.w[j], bcast4(a.qs + 4 * j));
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.d, _mm256_set1_ps(a.d)), acc);
    }
};

// IQ4_XS_R8 x Q8_K32: 1088 bytes per 256 columns; kvalues_iq4nl codes.
struct KIQ4XSR8 {
    static constexpr int N = 8, kCols = 256, kGroupMeta = 0, kBlockBytes = 1088;
    static constexpr bool kDupHalves = false;
    struct Prep {
        __m256 dl[8];
        __m256i v[8][8], av[8][8];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        const __m256 d = cvt_f16x8(blk);
        const __m256i tbl = lut16(vals::kIq4nl);
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i ls = _mm256_sub_epi32(split6x8(blk + 32, blk + 16, ib), _mm256_set1_epi32(32));
            p.dl[ib] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(ls));
            for (int l = 0; l < 4; ++l) {
                const __m256i q = _mm256_loadu_si256((const __m256i*)(blk + 64 + 128 * ib + 32 * l));
                p.v[ib][2 * l] = _mm256_shuffle_epi8(tbl, lo4(q));      // columns 8l + i
                p.v[ib][2 * l + 1] = _mm256_shuffle_epi8(tbl, hi4(q));  // columns 8l + 4 + i
                p.av[ib][2 * l] = _mm256_abs_epi8(p.v[ib][2 * l]);
                p.av[ib][2 * l + 1] = _mm256_abs_epi8(p.v[ib][2 * l + 1]);
            }
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        const __m256 da = _mm256_set1_ps(rd_f32(a + kQ8KOffD));
        for (int ib = 0; ib < 8; ++ib) {
            __m256i s = _mm256_setzero_si256();
            for (int j = 0; j < 8; ++j) s = dot_ss(s, p.av[ib][j], p.v[ib][j], bcast4(qs + 32 * ib + 4 * j));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.dl[ib], da), acc);
        }
        return acc;
    }
};

// Q4_K_R4 x Q8_K32: 576 bytes per 256 columns; lanes = rows 0-3 (two column halves).
struct KQ4KR4 {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 576;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m256 dl[8], ml[8];
        __m256i q[8][4];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        const __m128 d = cvt_f16x4(blk), dmin = cvt_f16x4(blk + 8);
        for (int ib = 0; ib < 8; ++ib) {
            // slot is = 4ib + k: low bits in byte 32 + is, high bits in nibble is / 16 of byte 16 + is % 16
            const __m128i sl = u8x4_epi32(blk + 32 + 4 * ib);
            const __m128i sh = _mm_and_si128(_mm_srli_epi32(u8x4_epi32(blk + 16 + 4 * (ib % 4)), 4 * (ib / 4)), _mm_set1_epi32(15));
            const __m128i sc = _mm_or_si128(_mm_and_si128(sl, _mm_set1_epi32(15)), _mm_slli_epi32(_mm_and_si128(sh, _mm_set1_epi32(3)), 4));
            const __m128i m = _mm_or_si128(_mm_srli_epi32(sl, 4), _mm_slli_epi32(_mm_srli_epi32(sh, 2), 4));
            p.dl[ib] = dup4(_mm_mul_ps(d, _mm_cvtepi32_ps(sc)));
            const __m128 ml = _mm_mul_ps(dmin, _mm_cvtepi32_ps(m));
            p.ml[ib] = _mm256_set_m128(_mm_setzero_ps(), ml);  // mins counted once (lanes 0-3)
            nib4_split(blk + 64 + 64 * ib, p.q[ib]);
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        const __m256 da = _mm256_set1_ps(rd_f32(a + kQ8KOffD));
        for (int ib = 0; ib < 8; ++ib) {
            __m256i av[4];
            nib4_acts(qs + 32 * ib, av);
            __m256i s = _mm256_setzero_si256();
            for (int j = 0; j < 4; ++j) s = dot_us(s, p.q[ib][j], av[j]);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.dl[ib], da), acc);
            acc = _mm256_fnmadd_ps(p.ml[ib], _mm256_set1_ps(rd_f32(a + kQ8KOffBsums + 4 * ib)), acc);
        }
        return acc;
    }
};

// Signed iq4k values of a NIB4 sub-block (first table half) with their absolute values.
inline void nib4_values(const uint8_t* qa, __m256i v[4], __m256i av[4]) {
    const __m256i tbl = lut16(vals::kIq4k);
    __m256i q[4];
    nib4_split(qa, q);
    for (int j = 0; j < 4; ++j) {
        v[j] = _mm256_shuffle_epi8(tbl, q[j]);
        av[j] = _mm256_abs_epi8(v[j]);
    }
}

// The four NIB4 vectors of a sub-block as signed iq4k values, and their integer sums against a
// sub-block of activation codes per (column half, row) lane (the 256-bit form; AVX-512 has its
// own, interleaved_iq4_r4_512.h).
struct Nib4Vals256 {
    struct Vals {
        __m256i v[4], av[4];
    };
    static void load(const uint8_t* qa, Vals& o) { nib4_values(qa, o.v, o.av); }
    static __m256i dot(const Vals& w, const int8_t* a32) {
        __m256i aq[4];
        nib4_acts(a32, aq);
        __m256i s = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) s = dot_ss(s, w.av[j], w.v[j], aq[j]);
        return s;
    }
};

// IQ4_K_R4 x Q8_K: 576 bytes per 256 columns; lanes = (column half h, row k), scale per 16 columns.
// The second value set is the first + 4, added as 4 * (16-column code sum).
template <class W>
struct KIQ4KR4T {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 576;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m256 dl[8];
        __m256i xm[8];  // all-ones in lanes whose value set is shifted
        typename W::Vals w[8];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        const __m256 d = dup4(cvt_f16x4(blk));
        for (int ib = 0; ib < 8; ++ib) {
            // lane = 4h + k: scale slot 8ib + lane, value-set bit ib of extra[lane]
            const __m256i sc = _mm256_sub_epi32(split6x8(blk + 32, blk + 16, ib), _mm256_set1_epi32(32));
            p.dl[ib] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc));
            const __m256i x = _mm256_and_si256(_mm256_srli_epi32(u8x8_epi32(blk + 8), ib), _mm256_set1_epi32(1));
            p.xm[ib] = _mm256_sub_epi32(_mm256_setzero_si256(), x);
            W::load(blk + 64 + 64 * ib, p.w[ib]);
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        const __m256 da = _mm256_set1_ps(rd_f32(a + kQ8KOffD));
        const __m256i bs_lo = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i*)(a + kQ8KOffBsums)));
        const __m256i bs_hi = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i*)(a + kQ8KOffBsums + 16)));
        for (int ib = 0; ib < 8; ++ib) {
            const int s0 = 2 * (ib % 4);
            const __m256i bs = _mm256_permutevar8x32_epi32(
                ib < 4 ? bs_lo : bs_hi, _mm256_setr_epi32(s0, s0, s0, s0, s0 + 1, s0 + 1, s0 + 1, s0 + 1));
            const __m256i s = _mm256_add_epi32(_mm256_slli_epi32(_mm256_and_si256(bs, p.xm[ib]), 2), W::dot(p.w[ib], qs + 32 * ib));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.dl[ib], da), acc);
        }
        return acc;
    }
};
using KIQ4KR4 = KIQ4KR4T<Nib4Vals256>;

// IQ4_KS_R4 x Q8_K32: group = 4 float32 row scales, then 544 bytes per 256 columns; one scale
// byte per (row, 32 columns): bits 1-7 scale, bit 0 value set (+4, added via the block sums).
template <class W>
struct KIQ4KSR4T {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 16, kBlockBytes = 544;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m128 d;
        __m256 dl[8], fx[8];
        typename W::Vals w[8];
    };
    static void begin(const uint8_t* group, Prep& p) { p.d = _mm_loadu_ps((const float*)group); }
    static void prepare(const uint8_t* blk, Prep& p) {
        for (int ib = 0; ib < 8; ++ib) {
            const __m128i s = u8x4_epi32(blk + 4 * ib);  // one scale byte per row
            const __m128i sc = _mm_sub_epi32(_mm_and_si128(s, _mm_set1_epi32(254)), _mm_set1_epi32(127));
            const __m128i x4 = _mm_slli_epi32(_mm_and_si128(s, _mm_set1_epi32(1)), 2);
            const __m128 dl = _mm_mul_ps(p.d, _mm_cvtepi32_ps(sc));
            p.dl[ib] = dup4(dl);
            p.fx[ib] = _mm256_set_m128(_mm_setzero_ps(), _mm_mul_ps(dl, _mm_cvtepi32_ps(x4)));
            W::load(blk + 32 + 64 * ib, p.w[ib]);
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        const __m256 da = _mm256_set1_ps(rd_f32(a + kQ8KOffD));
        for (int ib = 0; ib < 8; ++ib) {
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(W::dot(p.w[ib], qs + 32 * ib)), _mm256_mul_ps(p.dl[ib], da), acc);
            acc = _mm256_fmadd_ps(p.fx[ib], _mm256_set1_ps(rd_f32(a + kQ8KOffBsums + 4 * ib)), acc);
        }
        return acc;
    }
};
using KIQ4KSR4 = KIQ4KSR4T<Nib4Vals256>;

// ---- driver: token tiles x row groups x block columns ------------------------------------------
template <class K>
void run_interleaved(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                     int64_t nt, float* y, int64_t ys) {
    constexpr int N = K::N;
    const int64_t nblk = ne0 / K::kCols;
    const int64_t tile = std::clamp<int64_t>((int64_t)(196608 / std::max<size_t>(arb, 1)), 1, 64);
    typename K::Prep prep;
    __m256 acc[64];
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t tn = std::min(tile, nt - t0);
        for (int64_t g = r0; g + N <= r1; g += N) {
            const uint8_t* grp = w + (size_t)g * wrb;
            K::begin(grp, prep);
            for (int64_t t = 0; t < tn; ++t) acc[t] = _mm256_setzero_ps();
            for (int64_t b = 0; b < nblk; ++b) {
                K::prepare(grp + K::kGroupMeta + (size_t)b * K::kBlockBytes, prep);
                for (int64_t t = 0; t < tn; ++t) acc[t] = K::accum(prep, act + (size_t)(t0 + t) * arb, ne0, b, acc[t]);
            }
            for (int64_t t = 0; t < tn; ++t) {
                float* out = y + (t0 + t) * ys + g;
                if constexpr (K::kDupHalves)
                    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1)));
                else
                    _mm256_storeu_ps(out, acc[t]);
            }
        }
    }
}

// ---- BF16_R16 x BF16: element 32p + 2k + e of a group is row k, column 2p + e -------------------
// Up to 4 tokens at a time; bf16 pairs widen to float by shifting (AVX2) or feed vdpbf16ps.
template <int T>
void bf16r16_tile(const uint8_t* grp, int64_t ne0, const float* x, int64_t xs, float* y, int64_t ys) {
    __m256 lo[T], hi[T];
    for (int t = 0; t < T; ++t) lo[t] = hi[t] = _mm256_setzero_ps();
    const __m256i himask = _mm256_set1_epi32((int)0xFFFF0000u);
    for (int64_t p = 0; p < ne0 / 2; ++p) {
        const __m256i w0 = _mm256_loadu_si256((const __m256i*)(grp + 64 * p));
        const __m256i w1 = _mm256_loadu_si256((const __m256i*)(grp + 64 * p + 32));
        const __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16)), o0 = _mm256_castsi256_ps(_mm256_and_si256(w0, himask));
        const __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16)), o1 = _mm256_castsi256_ps(_mm256_and_si256(w1, himask));
        for (int t = 0; t < T; ++t) {
            const __m256 a0 = _mm256_broadcast_ss(x + t * xs + 2 * p), a1 = _mm256_broadcast_ss(x + t * xs + 2 * p + 1);
            lo[t] = _mm256_fmadd_ps(o0, a1, _mm256_fmadd_ps(e0, a0, lo[t]));
            hi[t] = _mm256_fmadd_ps(o1, a1, _mm256_fmadd_ps(e1, a0, hi[t]));
        }
    }
    for (int t = 0; t < T; ++t) {
        _mm256_storeu_ps(y + t * ys, lo[t]);
        _mm256_storeu_ps(y + t * ys + 8, hi[t]);
    }
}

[[maybe_unused]] void run_bf16_r16_avx2(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t arb, int64_t nt, float* y, int64_t ys) {
    const int64_t tile = std::clamp<int64_t>(65536 / ne0, 4, 64) / 4 * 4;
    GtiFloats x((size_t)(tile * ne0));
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t tn = std::min(tile, nt - t0);
        for (int64_t t = 0; t < tn; ++t) decode_bf16_row(act + (size_t)(t0 + t) * arb, x.data() + t * ne0, ne0);
        for (int64_t g = r0; g + 16 <= r1; g += 16) {
            const uint8_t* grp = w + (size_t)g * wrb;
            int64_t t = 0;
            for (; t + 4 <= tn; t += 4) bf16r16_tile<4>(grp, ne0, x.data() + t * ne0, ne0, y + (t0 + t) * ys + g, ys);
            for (; t < tn; ++t) bf16r16_tile<1>(grp, ne0, x.data() + t * ne0, ne0, y + (t0 + t) * ys + g, ys);
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu

#endif  // __AVX2__
