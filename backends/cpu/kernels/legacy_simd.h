// Block unpackers of the 32-weight types for the x86 SIMD kernels (legacy_avx2.cpp,
// legacy_avx512.cpp). Everything sits in an anonymous namespace: each ISA file compiles its own
// copy with its own flags (no cross-ISA inline sharing). Requires AVX2 + F16C.
//
// A policy P describes one weight type:
//   kBytes          block size in bytes
//   kAffine         y = d*q + m (unsigned codes, extra m*da*sum(a) term) instead of y = d*v
//   values(b)       the 32 values of the block in output order, as int8 (affine: uint8 codes)
//   scales4(b)      d of blocks b, b+kBytes, b+2kBytes, b+3kBytes as float32
//   mins4(b)        m of those four blocks (affine types only)
//   kOffset, kE8M0  symmetric types: code offset of the reference's unsigned form, E8M0 scales
//   kDirectU        symmetric types whose unsigned codes u = v + kOffset stay below 64, so one
//                   maddubs(u, a) pair sum (<= 2 x 63 x 127) cannot saturate and gives the
//                   reference's unsigned-code sums directly (ucodes(b) the 32 codes u);
//   kDirectSteps    how many such pair sums (4 weights x 8 tokens each in the AVX2 batch form)
//                   add up in int16 without overflow: 32767 / (2 x u_max x 127)
#pragma once
#include <immintrin.h>

#include "quant/legacy_blocks.h"

namespace ikllm::cpu {
namespace {

namespace lq = quant::legacy;

// 32 nibbles of an NL4 quant area: low nibbles of bytes 0..15, then the high nibbles.
inline __m256i nl4_nibbles(const uint8_t* qs) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(x, 4), x), _mm256_set1_epi8(15));
}

// Byte w = 0x10 when bit w of the little-endian 32-bit word is set (5th bit of Q5 codes).
inline __m256i bit5_bytes(const uint8_t* qh4) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)lq::rd32(qh4)), shuf);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

// Bits 4-5 of the Q6_0 codes from qh[8] (§5.6): weights 0-7 use bits 0-1 of qh[0..7],
// 8-15 bits 4-5, 16-23 bits 2-3, 24-31 bits 6-7.
inline __m256i q6_high_bytes(const uint8_t* qh) {
    long long q;
    std::memcpy(&q, qh, 8);
    const __m256i v = _mm256_srlv_epi64(_mm256_set1_epi64x(q), _mm256_setr_epi64x(0, 4, 2, 6));
    return _mm256_slli_epi16(_mm256_and_si256(v, _mm256_set1_epi8(3)), 4);
}

inline __m128 fp16_scales4(const uint8_t* b, int stride) {
    const __m128i h = _mm_setr_epi16((short)lq::rd16(b), (short)lq::rd16(b + stride), (short)lq::rd16(b + 2 * stride),
                                     (short)lq::rd16(b + 3 * stride), 0, 0, 0, 0);
    return _mm_cvtph_ps(h);
}

struct Q4_0P {
    static constexpr int kOffset = 8;  // reference's unsigned-code offset (legacy_sym_accum.h)
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ4_0Bytes;
    static constexpr bool kAffine = false;
    static constexpr int kDirectSteps = 8;
    static constexpr bool kDirectU = true;
    static __m256i ucodes(const uint8_t* b) { return nl4_nibbles(b + 2); }
    static __m256i values(const uint8_t* b) { return _mm256_sub_epi8(nl4_nibbles(b + 2), _mm256_set1_epi8(8)); }
    static __m128 scales4(const uint8_t* b) { return fp16_scales4(b, kBytes); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct Q4_1P {
    static constexpr int kBytes = lq::kQ4_1Bytes;
    static constexpr bool kAffine = true;
    static __m256i values(const uint8_t* b) { return nl4_nibbles(b + 4); }
    static __m128 scales4(const uint8_t* b) { return fp16_scales4(b, kBytes); }
    static __m128 mins4(const uint8_t* b) { return fp16_scales4(b + 2, kBytes); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
    static float min(const uint8_t* b) { return lq::rdf16(b + 2); }
};
struct Q5_0P {
    static constexpr int kOffset = 16;  // reference's unsigned-code offset (legacy_sym_accum.h)
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ5_0Bytes;
    static constexpr bool kAffine = false;
    static constexpr int kDirectSteps = 4;
    static constexpr bool kDirectU = true;
    static __m256i ucodes(const uint8_t* b) { return _mm256_or_si256(nl4_nibbles(b + 6), bit5_bytes(b + 2)); }
    static __m256i values(const uint8_t* b) {
        return _mm256_sub_epi8(_mm256_or_si256(nl4_nibbles(b + 6), bit5_bytes(b + 2)), _mm256_set1_epi8(16));
    }
    static __m128 scales4(const uint8_t* b) { return fp16_scales4(b, kBytes); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct Q5_1P {
    static constexpr int kBytes = lq::kQ5_1Bytes;
    static constexpr bool kAffine = true;
    static __m256i values(const uint8_t* b) { return _mm256_or_si256(nl4_nibbles(b + 8), bit5_bytes(b + 4)); }
    static __m128 scales4(const uint8_t* b) { return fp16_scales4(b, kBytes); }
    static __m128 mins4(const uint8_t* b) { return fp16_scales4(b + 2, kBytes); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
    static float min(const uint8_t* b) { return lq::rdf16(b + 2); }
};
struct Q8_0P {
    static constexpr int kOffset = 127;  // reference's unsigned-code offset (legacy_sym_accum.h)
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ8_0Bytes;
    static constexpr bool kAffine = false;
    static constexpr bool kDirectU = false;
    static __m256i values(const uint8_t* b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)); }
    static __m128 scales4(const uint8_t* b) { return fp16_scales4(b, kBytes); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct Q6_0P {
    static constexpr int kOffset = 32;  // reference's unsigned-code offset (legacy_sym_accum.h)
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ6_0Bytes;
    static constexpr bool kAffine = false;
    static constexpr int kDirectSteps = 2;
    static constexpr bool kDirectU = true;
    static __m256i ucodes(const uint8_t* b) { return _mm256_or_si256(nl4_nibbles(b + 10), q6_high_bytes(b + 2)); }
    static __m256i values(const uint8_t* b) {
        return _mm256_sub_epi8(_mm256_or_si256(nl4_nibbles(b + 10), q6_high_bytes(b + 2)), _mm256_set1_epi8(32));
    }
    static __m128 scales4(const uint8_t* b) { return fp16_scales4(b, kBytes); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct IQ4_NLP {
    static constexpr int kOffset = 128;  // reference's unsigned-code offset (legacy_sym_accum.h)
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kIq4NlBytes;
    static constexpr bool kAffine = false;
    static constexpr bool kDirectU = false;
    static __m256i values(const uint8_t* b) {
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lq::kIq4nlValues)));
        return _mm256_shuffle_epi8(table, nl4_nibbles(b + 2));
    }
    static __m128 scales4(const uint8_t* b) { return fp16_scales4(b, kBytes); }
    static float scale(const uint8_t* b) { return lq::rdf16(b); }
};
struct MXFP4P {
    static constexpr int kOffset = 12;  // reference's unsigned-code offset (legacy_sym_accum.h)
    static constexpr bool kE8M0 = true;
    static constexpr int kBytes = lq::kMxfp4Bytes;
    static constexpr bool kAffine = false;
    static constexpr int kDirectSteps = 4;
    static constexpr bool kDirectU = true;  // values -12..12
    static __m256i ucodes(const uint8_t* b) { return _mm256_add_epi8(values(b), _mm256_set1_epi8(kOffset)); }
    static __m256i values(const uint8_t* b) {
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lq::kMxfp4Values)));
        return _mm256_shuffle_epi8(table, nl4_nibbles(b + 1));
    }
    static __m128 scales4(const uint8_t* b) {
        return _mm_setr_ps(lq::e8m0_half(b[0]), lq::e8m0_half(b[kBytes]), lq::e8m0_half(b[2 * kBytes]),
                           lq::e8m0_half(b[3 * kBytes]));
    }
    static float scale(const uint8_t* b) { return lq::e8m0_half(b[0]); }
};

// The 4 bf16 scales and 4 int16 sums at the head of a Q8_2_X4 group.
inline __m128 act_scales4(__m128i head) { return _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(head), 16)); }
inline __m128 act_sums4(__m128i head) { return _mm_cvtepi32_ps(_mm_cvtepi16_epi32(_mm_srli_si128(head, 8))); }

inline float hsum128(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
inline int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

}  // namespace
}  // namespace ikllm::cpu
