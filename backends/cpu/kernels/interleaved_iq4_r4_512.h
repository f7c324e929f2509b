// AVX-512 forms of KIQ4KR4 / KIQ4KSR4 (interleaved_simd.h): the same integer sums per (column
// half, row) lane and the same float operations, so the same results bit for bit; the reference's
// IQ4_K_R4 / IQ4_KS_R4 files (common in ik_llama.cpp's DeepSeek / Qwen3 releases) are multiplied
// by their own numerics, so the stored form must run (no repack to another layout).
// What changes is the work per 32-column sub-block (the kernels' nib4 part, Nib4Vals512): the
// nibble codes of two vectors at once (512 bits), the sign by a mask (no vpsignb at 512 bits) and
// one vpdpbusd per pair; the activation dwords spread by two permutes instead of four.
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

struct Nib4Vals512 {
    using Vals = Nib4Pairs;
    static void load(const uint8_t* qa, Vals& o) { nib4_pairs(qa, o); }
    static __m256i dot(const Vals& w, const int8_t* a32) { return nib4_dot512(w, a32); }
};
using KIQ4KR4Z = KIQ4KR4T<Nib4Vals512>;
using KIQ4KSR4Z = KIQ4KSR4T<Nib4Vals512>;

}  // namespace
}  // namespace ikllm::cpu
#endif
