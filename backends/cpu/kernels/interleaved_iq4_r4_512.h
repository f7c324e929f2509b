// AVX-512 forms of KIQ4KR4 / KIQ4KSR4 (interleaved_simd.h): the same integer sums per (column
// half, row) lane and the same float operations, so the same results bit for bit; the reference's
// IQ4_K_R4 / IQ4_KS_R4 files (common in ik_llama.cpp's DeepSeek / Qwen3 releases) are multiplied
// by their own numerics, so the stored form must run (no repack to another layout).
// What changes is the work per 32-column sub-block: the nibble codes of two vectors at once
// (512 bits), the sign by a mask (no vpsignb at 512 bits) and one vpdpbusd per pair; the
// activation dwords spread by two permutes instead of four; IQ4_K_R4's 64 six-bit scales and
// value-set bits of a block decoded in one pass.
// (Included by interleaved_avx512.cpp after interleaved_simd.h.)
#pragma once
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX512VBMI__)

namespace ikllm::cpu {
namespace {

// The 4 NIB4 vectors of a sub-block (nib4_split's order: lo q01, hi q01, lo q23, hi q23) as two
// 512-bit pairs of iq4k values: magnitudes and sign masks.
struct Nib4Pairs {
    __m512i av[2];
    __mmask64 neg[2];
};
inline void nib4_pairs(const uint8_t* qa, Nib4Pairs& o) {
    const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(vals::kIq4k)));
    const __m512i q = _mm512_loadu_si512(qa);
    const __m512i shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    const __m512i both[2] = {_mm512_shuffle_i64x2(q, q, 0x44), _mm512_shuffle_i64x2(q, q, 0xEE)};  // q01, q23 in both halves
    for (int p = 0; p < 2; ++p) {
        const __m512i v = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srlv_epi16(both[p], shift), _mm512_set1_epi8(15)));
        o.av[p] = _mm512_abs_epi8(v);
        o.neg[p] = _mm512_movepi8_mask(v);
    }
}
// Integer sums of a sub-block per (column half, row) lane: the activation dwords of nib4_acts'
// vectors, pairwise in 512 bits.
inline __m256i nib4_dot512(const Nib4Pairs& w, const int8_t* a32) {
    const __m512i A = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a32)));
    const __m512i a01 = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 2, 2, 2, 2, 6, 6, 6, 6), A);
    const __m512i a23 = _mm512_permutexvar_epi32(_mm512_setr_epi32(1, 1, 1, 1, 5, 5, 5, 5, 3, 3, 3, 3, 7, 7, 7, 7), A);
    const __m512i z = _mm512_setzero_si512();
    __m512i s = _mm512_dpbusd_epi32(z, w.av[0], _mm512_mask_sub_epi8(a01, w.neg[0], z, a01));
    s = _mm512_dpbusd_epi32(s, w.av[1], _mm512_mask_sub_epi8(a23, w.neg[1], z, a23));
    return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
}

struct KIQ4KR4Z {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 0, kBlockBytes = 576;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m256 dl[8];
        __mmask8 xk[8];  // lanes whose value set is shifted
        Nib4Pairs w[8];
    };
    static void begin(const uint8_t*, Prep&) {}
    static void prepare(const uint8_t* blk, Prep& p) {
        const __m256 d = dup4(cvt_f16x4(blk));
        // scale of slot 8 ib + lane: low nibble of byte 8 (ib % 4) + lane of the 32 at blk + 32
        // (high nibble for ib >= 4), bits 2 (ib / 2) of byte 8 (ib % 2) + lane of the 16 at blk + 16
        const __m512i lo = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
        const __m512i l = _mm512_and_si512(_mm512_srlv_epi16(lo, _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1)),
                                           _mm512_set1_epi8(15));
        const __m512i hi = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16)));
        const __m512i h = _mm512_and_si512(_mm512_srlv_epi16(hi, _mm512_setr_epi64(0, 0, 0x0002000200020002ll, 0x0002000200020002ll,
                                                                                   0x0004000400040004ll, 0x0004000400040004ll,
                                                                                   0x0006000600060006ll, 0x0006000600060006ll)),
                                           _mm512_set1_epi8(3));
        alignas(64) int8_t sc[64];
        _mm512_store_si512(sc, _mm512_sub_epi8(_mm512_or_si512(l, _mm512_slli_epi16(h, 4)), _mm512_set1_epi8(32)));
        uint64_t extra;  // value-set bit ib of lane `lane`: bit ib of byte `lane`
        std::memcpy(&extra, blk + 8, 8);
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i s = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8 * ib)));
            p.dl[ib] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(s));
            p.xk[ib] = (__mmask8)_pext_u64(extra >> ib, 0x0101010101010101ull);
            nib4_pairs(blk + 64 + 64 * ib, p.w[ib]);
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
            __m256i s = nib4_dot512(p.w[ib], qs + 32 * ib);
            s = _mm256_mask_add_epi32(s, p.xk[ib], s, _mm256_slli_epi32(bs, 2));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.dl[ib], da), acc);
        }
        return acc;
    }
};

struct KIQ4KSR4Z {
    static constexpr int N = 4, kCols = 256, kGroupMeta = 16, kBlockBytes = 544;
    static constexpr bool kDupHalves = true;
    struct Prep {
        __m128 d;
        __m256 dl[8], fx[8];
        Nib4Pairs w[8];
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
            nib4_pairs(blk + 32 + 64 * ib, p.w[ib]);
        }
    }
    static __m256 accum(const Prep& p, const uint8_t* arow, int64_t, int64_t b, __m256 acc) {
        const uint8_t* a = arow + (size_t)b * kQ8KBlockBytes;
        const int8_t* qs = (const int8_t*)(a + kQ8KOffQs);
        const __m256 da = _mm256_set1_ps(rd_f32(a + kQ8KOffD));
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i s = nib4_dot512(p.w[ib], qs + 32 * ib);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(p.dl[ib], da), acc);
            acc = _mm256_fmadd_ps(p.fx[ib], _mm256_set1_ps(rd_f32(a + kQ8KOffBsums + 4 * ib)), acc);
        }
        return acc;
    }
};

}  // namespace
}  // namespace ikllm::cpu
#endif
