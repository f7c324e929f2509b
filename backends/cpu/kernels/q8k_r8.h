// Q8_K_R8 / Q8_K_R16 (quant-formats.md §12.11: int8 quants of 8 / 16 rows interleaved per 4
// columns, one fp16 scale per row and 256 columns; Q8_K_R16 stores q + 128) against Q8_K
// activations. The stored order is already a GEMM panel: 32 bytes = 8 rows x 4 columns, so a
// row's product is one int32 lane, exact per 256-column block, and the float work per block and
// token is one multiply-add per 8 rows:
//   y_k = sum_blocks fma(float(sum q_k . a), d_k * d_a, y_k).
// VNNI (AVX-512 VL): vpdpbusd of q + 128 against the broadcast activation quad, minus 128 times
// the block's activation sum (from the Q8_K bsums); AVX2: |q| x (a signed by q) pair sums. Both
// give the same integers, the scalar kernel the same float operations: the same bits everywhere.
// (The generic dequantize-and-dot kernel they replace ran at ~0.9 GB/s per core.)
// Anonymous namespace: each kernel file compiles its own copy with its own ISA flags.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "quant/act_q8_k.h"
#include "quant/type_traits.h"
#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ikllm::cpu {
namespace {

constexpr int kQ8KRTile = 4;  // tokens per pass over a row group

template <uint32_t Type>
struct Q8KRForm {
    static constexpr int kRows = Type == quant::T_Q8_K_R16 ? 16 : 8;
    static constexpr size_t kBlockBytes = 2 * kRows + 256 * kRows;  // fp16 d_k, then the quants
    static constexpr int kQuadBytes = 4 * kRows;                   // 4 columns of every row
    static constexpr uint8_t kBias = Type == quant::T_Q8_K_R16 ? 0x80 : 0;  // stored byte = q ^ kBias
};

inline int32_t q8kr_act_sum(const uint8_t* ab) {  // sum of a Q8_K block's 256 codes
    int16_t bs[16];
    std::memcpy(bs, ab + quant::kQ8KOffBsums, sizeof bs);
    int32_t s = 0;
    for (int16_t v : bs) s += v;
    return s;
}

// Rows 8h .. 8h + 7 of the group at grp against T tokens.
template <uint32_t Type, int T>
void q8kr_tile_scalar(const uint8_t* grp, int64_t nb, int h, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    using F = Q8KRForm<Type>;
    float f[T][8] = {};
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + F::kBlockBytes * b;
        int32_t acc[T][8] = {};
        for (int j = 0; j < 64; ++j) {
            const uint8_t* w = blk + 2 * F::kRows + F::kQuadBytes * j + 32 * h;
            for (int t = 0; t < T; ++t) {
                const int8_t* a = reinterpret_cast<const int8_t*>(act + (size_t)t * arb + (size_t)quant::kQ8KBlockBytes * b + quant::kQ8KOffQs + 4 * j);
                for (int k = 0; k < 8; ++k)
                    for (int i = 0; i < 4; ++i) acc[t][k] += (int32_t)(int8_t)(w[4 * k + i] ^ F::kBias) * a[i];
            }
        }
        for (int t = 0; t < T; ++t) {
            float da;
            std::memcpy(&da, act + (size_t)t * arb + (size_t)quant::kQ8KBlockBytes * b + quant::kQ8KOffD, 4);
            for (int k = 0; k < 8; ++k) {
                uint16_t hk;
                std::memcpy(&hk, blk + 2 * (8 * h + k), 2);
                f[t][k] = std::fma((float)acc[t][k], f16_to_f32(hk) * da, f[t][k]);
            }
        }
    }
    for (int t = 0; t < T; ++t)
        for (int k = 0; k < 8; ++k) y[t * ys + k] = f[t][k];
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
template <uint32_t Type, int T>
void q8kr_tile_simd(const uint8_t* grp, int64_t nb, int h, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    using F = Q8KRForm<Type>;
    __m256 f[T];
    for (int t = 0; t < T; ++t) f[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + F::kBlockBytes * b;
        const size_t ab = (size_t)quant::kQ8KBlockBytes * b;
        __m256i acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
        for (int j = 0; j < 64; ++j) {
            const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2 * F::kRows + F::kQuadBytes * j + 32 * h));
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
            const __m256i u = _mm256_xor_si256(w, _mm256_set1_epi8((char)(F::kBias ^ 0x80)));  // q + 128
            for (int t = 0; t < T; ++t) {
                int32_t a4;
                std::memcpy(&a4, act + (size_t)t * arb + ab + quant::kQ8KOffQs + 4 * j, 4);
                acc[t] = _mm256_dpbusd_epi32(acc[t], u, _mm256_set1_epi32(a4));
            }
#else
            const __m256i q = _mm256_xor_si256(w, _mm256_set1_epi8((char)F::kBias));
            const __m256i mag = _mm256_abs_epi8(q);  // -128 -> 128 unsigned: pair sums stay < 2^15
            for (int t = 0; t < T; ++t) {
                int32_t a4;
                std::memcpy(&a4, act + (size_t)t * arb + ab + quant::kQ8KOffQs + 4 * j, 4);
                const __m256i p = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(_mm256_set1_epi32(a4), q));
                acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
            }
#endif
        }
        const __m256 dk = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * h)));
        for (int t = 0; t < T; ++t) {
            float da;
            std::memcpy(&da, act + (size_t)t * arb + ab + quant::kQ8KOffD, 4);
            __m256i s = acc[t];
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
            s = _mm256_sub_epi32(s, _mm256_set1_epi32(128 * q8kr_act_sum(act + (size_t)t * arb + ab)));
#endif
            f[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dk, _mm256_set1_ps(da)), f[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ys, f[t]);
}
#define IKLLM_Q8KR_TILE q8kr_tile_simd
#else
#define IKLLM_Q8KR_TILE q8kr_tile_scalar
#endif

template <uint32_t Type>
void q8kr_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
              float* y, int64_t ys) {
    constexpr int R = Q8KRForm<Type>::kRows;
    const int64_t nb = ne0 / 256;
    for (int64_t r = r0; r < r1; r += R) {
        const uint8_t* grp = w + (size_t)r * wrb;
        for (int h = 0; h < R / 8; ++h)
            for (int64_t t0 = 0; t0 < nt; t0 += kQ8KRTile) {
                const uint8_t* at = act + (size_t)t0 * arb;
                float* yt = y + t0 * ys + r + 8 * h;
                static_assert(kQ8KRTile == 4);
                switch (std::min<int64_t>(kQ8KRTile, nt - t0)) {
                    case 1: IKLLM_Q8KR_TILE<Type, 1>(grp, nb, h, at, arb, yt, ys); break;
                    case 2: IKLLM_Q8KR_TILE<Type, 2>(grp, nb, h, at, arb, yt, ys); break;
                    case 3: IKLLM_Q8KR_TILE<Type, 3>(grp, nb, h, at, arb, yt, ys); break;
                    default: IKLLM_Q8KR_TILE<Type, 4>(grp, nb, h, at, arb, yt, ys); break;
                }
            }
    }
}

}  // namespace
}  // namespace ikllm::cpu
