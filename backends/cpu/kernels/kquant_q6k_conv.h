// Q6_K for prompt batches of kQ6ConvMinTokens tokens or more: like the reference (which converts
// Q6_K to 8-row-interleaved Q8_0 from 64 tokens), each 32-weight chunk is re-encoded as 8-bit
// codes with one fp16 scale, then multiplied in the symmetric batch order of
// legacy_sym_accum.h (SymBatchAccum). That is what lets Q6_K use the 16-row panel GEMM.
//
// Re-encoding of chunk j (sub-blocks 2j, 2j+1 with int8 scales s): exact integers P = s * (q - 32)
// (|P| <= 4096), m = max |P|. If m <= 127 the codes are P and the scale is d (exact); else
// codes RNE(P * (127 / m)) (float32 product) and scale fp16(d * m / 127) (float32 ops, RNE).
// Rounding costs at most half a code step of 127 per chunk maximum, as the reference's repack.
//
// Sits in an anonymous namespace like kquant_unpack.h: every kernel file compiles its own copy.
#pragma once
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kernels/kquant_unpack.h"
#include "kernels/legacy_sym_accum.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

inline constexpr int64_t kQ6ConvMinTokens = 64;

struct Q6Conv {
    int8_t q[256];
    float d[8];  // fp16-representable scale per 32
};

inline void q6k_convert(const uint8_t* b, Q6Conv& o) {
    KBlock k;
    KQ6K::unpack(b, 0.0f, k);  // v = q + 32 in 0..63, sc per 16, dw = d
    for (int j = 0; j < 8; ++j) {
        int P[32], m = 0;
        for (int i = 0; i < 32; ++i) {
            P[i] = (int)k.sc[(32 * j + i) / 16] * ((int)k.v[32 * j + i] - 32);
            m = std::max(m, std::abs(P[i]));
        }
        if (m <= 127) {
            for (int i = 0; i < 32; ++i) o.q[32 * j + i] = (int8_t)P[i];
            o.d[j] = k.dw;
            continue;
        }
        const float id = 127.0f / (float)m;
        for (int i = 0; i < 32; ++i) o.q[32 * j + i] = (int8_t)std::nearbyint((float)P[i] * id);
        o.d[j] = round_to_half(k.dw * (float)m / 127.0f);
    }
}

#if defined(__AVX2__)
// The 8 chunks of 32 codes q (0..63) of a Q6_K block, chunk j = weights 32j..32j+31: per 128
// weights, the low / high nibbles of ql0 and ql1 with the qh bit pairs 0-3.
inline void q6k_chunk_codes(const uint8_t* b, __m256i q[8]) {
    const __m256i low4 = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3);
    for (int c = 0; c < 2; ++c) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * c));
        const __m256i lo[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                               _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
        for (int k = 0; k < 4; ++k)
            q[4 * c + k] = _mm256_or_si256(lo[k], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two), 4));
    }
}

// q6k_convert in AVX2 vectors, the same bits: per chunk the exact products P = sc * (q - 32) as
// int16, m = max |P| (unsigned min-position of the complement), then either the codes P or
// RNE(float(P) * (127 / m)) with the scalar's float32 operations (cvtps_epi32 rounds to nearest
// even under the default MXCSR mode).
inline void q6k_convert_avx2(const uint8_t* b, Q6Conv& o) {
    const float dw = h2f(b + 208);
    __m256i q[8];
    q6k_chunk_codes(b, q);
    const __m256i m32 = _mm256_set1_epi16(32);
    for (int j = 0; j < 8; ++j) {
        const __m256i lo = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(q[j])), m32);
        const __m256i hi = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(q[j], 1)), m32);
        const __m256i p0 = _mm256_mullo_epi16(lo, _mm256_set1_epi16((int16_t)(int8_t)b[192 + 2 * j]));
        const __m256i p1 = _mm256_mullo_epi16(hi, _mm256_set1_epi16((int16_t)(int8_t)b[193 + 2 * j]));
        const __m256i a = _mm256_max_epu16(_mm256_abs_epi16(p0), _mm256_abs_epi16(p1));
        const __m128i a128 = _mm_max_epu16(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        const int m = 0xffff - (_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(a128, _mm_set1_epi16(-1)))) & 0xffff);
        __m256i codes;
        if (m <= 127) {
            codes = _mm256_permute4x64_epi64(_mm256_packs_epi16(p0, p1), 0xD8);
            o.d[j] = dw;
        } else {
            const __m256 id = _mm256_set1_ps(127.0f / (float)m);
            auto r = [&](__m128i x) { return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(x)), id)); };
            const __m256i c01 = _mm256_packs_epi32(r(_mm256_castsi256_si128(p0)), r(_mm256_extracti128_si256(p0, 1)));
            const __m256i c23 = _mm256_packs_epi32(r(_mm256_castsi256_si128(p1)), r(_mm256_extracti128_si256(p1, 1)));
            codes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(c01, c23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            o.d[j] = round_to_half(dw * (float)m / 127.0f);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.q + 32 * j), codes);
    }
}
#endif

// Q6_K rows re-encoded a chunk at a time for the lane batch kernels (sym_lanes_avx2.h,
// sym_lanes_neon.h): prepare(ra, rb) converts rows [ra, rb), blocks(r) gives row r's blocks.
struct Q6ConvRows {
    const uint8_t* w;
    size_t wrb;
    int64_t nb256;             // Q6_K blocks per row
    std::vector<Q6Conv> conv;  // the prepared rows' blocks
    int64_t first = 0;
    void prepare(int64_t ra, int64_t rb) {
        conv.resize((size_t)((rb - ra) * nb256));
        for (int64_t r = ra; r < rb; ++r)
            for (int64_t b = 0; b < nb256; ++b)
#if defined(__AVX2__)
                q6k_convert_avx2(w + (size_t)r * wrb + (size_t)b * 210, conv[(size_t)((r - ra) * nb256 + b)]);
#else
                q6k_convert(w + (size_t)r * wrb + (size_t)b * 210, conv[(size_t)((r - ra) * nb256 + b)]);
#endif
        first = ra;
    }
    const Q6Conv* blocks(int64_t r) const { return conv.data() + (r - first) * nb256; }
};

// Portable batch path (scalar and AVX2 kernels): rows r0..r1 against nt Q8_2_X4 activation rows.
inline void q6k_conv_matmul_portable(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1,
                                     const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    std::vector<Q6Conv> row((size_t)nb);
    for (int64_t r = r0; r < r1; ++r) {
        for (int64_t b = 0; b < nb; ++b) q6k_convert(w + (size_t)r * wrb + (size_t)b * 210, row[(size_t)b]);
        for (int64_t t = 0; t < nt; ++t) {
            const uint8_t* a = act + (size_t)t * arb;
            SymBatchAccum acc;
            for (int64_t ib = 0; ib < nb * 8; ++ib) {
                const Q6Conv& c = row[(size_t)(ib / 8)];
                const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(a, ne0, ib);
                int32_t s = 0;
                for (int i = 0; i < 32; ++i) s += ((int32_t)c.q[32 * (ib % 8) + i] + kSymBatchOffset) * ab.qs[i];
                acc.add(c.d[ib % 8], bf16_to_f32(ab.d_bf16), ab.sum, s);
            }
            y[t * ys + r] = acc.result();
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
