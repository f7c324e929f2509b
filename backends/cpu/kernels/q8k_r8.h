// The 8-bit types multiplied in exact integers: Q8_K_R8 / Q8_K_R16 (quant-formats.md §12.11:
// int8 quants of 8 / 16 rows interleaved per 4 columns, one fp16 scale per row and 256 columns;
// Q8_K_R16 stores q + 128) against Q8_K activations, Q8_KV_R8 (§12.11: 8 rows so interleaved,
// one float scale per row) and plain Q8_KV (§11.4) against Q8_KV activations. The interleaved
// order is already a GEMM panel: 32 bytes = 8 rows x 4 columns, so a row's product is one int32
// lane, exact per 256-column block (Q8_KV: per row), and the float work per block and token is
// one multiply-add per 8 rows:
//   Q8_K_R*: y_k = sum_blocks fma(float(sum q_k . a), d_k * d_a, y_k)
//   Q8_KV*:  y_k = (d_k * d_a) * float(sum q_k . a).
// VNNI (AVX-512 VL): vpdpbusd of q + 128 against the broadcast activation quad, minus 128 times
// the block's activation sum (from the Q8_K bsums); AVX2: |q| x (a signed by q) pair sums. Both
// give the same integers, the scalar kernel the same float operations: the same bits everywhere.
// (The generic dequantize-and-dot kernels they replace ran at 0.9 GB/s per core for 1 token,
// Q8_KV at 6 GB/s but 30 GFLOP/s in batches.)
// Anonymous namespace: each kernel file compiles its own copy with its own ISA flags.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

template <int T>
void q8kv_r8_tile_scalar(const uint8_t* grp, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    for (int t = 0; t < T; ++t) {
        const int8_t* a = reinterpret_cast<const int8_t*>(act + (size_t)t * arb + 8);
        int32_t acc[8] = {};
        for (int64_t j = 0; j < ne0 / 4; ++j)
            for (int k = 0; k < 8; ++k)
                for (int i = 0; i < 4; ++i) acc[k] += (int32_t)(int8_t)grp[32 + 32 * j + 4 * k + i] * a[4 * j + i];
        float da;
        std::memcpy(&da, act + (size_t)t * arb, 4);
        for (int k = 0; k < 8; ++k) {
            float dk;
            std::memcpy(&dk, grp + 4 * k, 4);
            y[t * ys + k] = (dk * da) * (float)acc[k];
        }
    }
}

template <int T>
void q8kv_row_scalar(const uint8_t* row, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    const int8_t* q = reinterpret_cast<const int8_t*>(row + 8);
    float dw;
    std::memcpy(&dw, row, 4);
    for (int t = 0; t < T; ++t) {
        const int8_t* a = reinterpret_cast<const int8_t*>(act + (size_t)t * arb + 8);
        int32_t s = 0;
        for (int64_t c = 0; c < ne0; ++c) s += (int32_t)q[c] * a[c];
        float da;
        std::memcpy(&da, act + (size_t)t * arb, 4);
        y[t * ys] = (dw * da) * (float)s;
    }
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define IKLLM_Q8_VNNI 1  // sums of (q + 128) . a: the callers take 128 x sum a off
#endif
// acc[t] (8 int32 lanes, one per row) += the n quads at w (quad j at w + stride j: 8 rows x 4
// columns, stored q ^ Bias) times token t's activation codes a[t][4j .. 4j + 3].
template <int T, uint8_t Bias>
inline void q8_quads_simd(const uint8_t* w, int64_t n, int stride, const int8_t* const a[T], __m256i acc[T]) {
    for (int64_t j = 0; j < n; ++j) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + stride * j));
#ifdef IKLLM_Q8_VNNI
        const __m256i u = _mm256_xor_si256(v, _mm256_set1_epi8((char)(Bias ^ 0x80)));  // q + 128
        for (int t = 0; t < T; ++t) {
            int32_t a4;
            std::memcpy(&a4, a[t] + 4 * j, 4);
            acc[t] = _mm256_dpbusd_epi32(acc[t], u, _mm256_set1_epi32(a4));
        }
#else
        const __m256i q = _mm256_xor_si256(v, _mm256_set1_epi8((char)Bias));
        const __m256i mag = _mm256_abs_epi8(q);  // -128 -> 128 unsigned: pair sums stay < 2^15
        for (int t = 0; t < T; ++t) {
            int32_t a4;
            std::memcpy(&a4, a[t] + 4 * j, 4);
            const __m256i p = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(_mm256_set1_epi32(a4), q));
            acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        }
#endif
    }
}

template <uint32_t Type, int T>
void q8kr_tile_simd(const uint8_t* grp, int64_t nb, int h, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    using F = Q8KRForm<Type>;
    __m256 f[T];
    for (int t = 0; t < T; ++t) f[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + F::kBlockBytes * b;
        const size_t ab = (size_t)quant::kQ8KBlockBytes * b;
        __m256i acc[T];
        const int8_t* a[T];
        for (int t = 0; t < T; ++t) {
            acc[t] = _mm256_setzero_si256();
            a[t] = reinterpret_cast<const int8_t*>(act + (size_t)t * arb + ab + quant::kQ8KOffQs);
        }
        q8_quads_simd<T, F::kBias>(blk + 2 * F::kRows + 32 * h, 64, F::kQuadBytes, a, acc);
        const __m256 dk = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * h)));
        for (int t = 0; t < T; ++t) {
            float da;
            std::memcpy(&da, act + (size_t)t * arb + ab + quant::kQ8KOffD, 4);
            __m256i s = acc[t];
#ifdef IKLLM_Q8_VNNI
            s = _mm256_sub_epi32(s, _mm256_set1_epi32(128 * q8kr_act_sum(act + (size_t)t * arb + ab)));
#endif
            f[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dk, _mm256_set1_ps(da)), f[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ys, f[t]);
}

// Q8_KV_R8: 8 float d_k, then the row's quads; activation rows: float d, int32 sum q, codes.
template <int T>
void q8kv_r8_tile_simd(const uint8_t* grp, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    __m256i acc[T];
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) {
        acc[t] = _mm256_setzero_si256();
        a[t] = reinterpret_cast<const int8_t*>(act + (size_t)t * arb + 8);
    }
    q8_quads_simd<T, 0>(grp + 32, ne0 / 4, 32, a, acc);
    const __m256 dk = _mm256_loadu_ps(reinterpret_cast<const float*>(grp));
    for (int t = 0; t < T; ++t) {
        float da;
        int32_t sa;
        std::memcpy(&da, act + (size_t)t * arb, 4);
        std::memcpy(&sa, act + (size_t)t * arb + 4, 4);
        __m256i s = acc[t];
#ifdef IKLLM_Q8_VNNI
        s = _mm256_sub_epi32(s, _mm256_set1_epi32(128 * sa));
#endif
        _mm256_storeu_ps(y + t * ys, _mm256_mul_ps(_mm256_mul_ps(dk, _mm256_set1_ps(da)), _mm256_cvtepi32_ps(s)));
    }
}

// Plain Q8_KV: one row (float d, int32 sum q, codes) against T tokens, 32 columns a step.
template <int T>
void q8kv_row_simd(const uint8_t* row, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    __m256i acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
    for (int64_t c = 0; c < ne0; c += 32) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 8 + c));
#ifdef IKLLM_Q8_VNNI
        const __m256i u = _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
        for (int t = 0; t < T; ++t)
            acc[t] = _mm256_dpbusd_epi32(acc[t], u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act + (size_t)t * arb + 8 + c)));
#else
        const __m256i mag = _mm256_abs_epi8(v);
        for (int t = 0; t < T; ++t) {
            const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act + (size_t)t * arb + 8 + c));
            acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(mag, _mm256_sign_epi8(av, v)), _mm256_set1_epi16(1)));
        }
#endif
    }
    float dw;
    std::memcpy(&dw, row, 4);
    for (int t = 0; t < T; ++t) {
        const __m128i x = _mm_add_epi32(_mm256_castsi256_si128(acc[t]), _mm256_extracti128_si256(acc[t], 1));
        const __m128i x2 = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4E));
        int32_t s = _mm_cvtsi128_si32(_mm_add_epi32(x2, _mm_shuffle_epi32(x2, 0xB1)));
        float da;
        std::memcpy(&da, act + (size_t)t * arb, 4);
#ifdef IKLLM_Q8_VNNI
        int32_t sa;
        std::memcpy(&sa, act + (size_t)t * arb + 4, 4);
        s -= 128 * sa;
#endif
        y[t * ys] = (dw * da) * (float)s;
    }
}
#define IKLLM_Q8KR_TILE q8kr_tile_simd
#define IKLLM_Q8KV_R8_TILE q8kv_r8_tile_simd
#define IKLLM_Q8KV_ROW q8kv_row_simd
#else
#define IKLLM_Q8KR_TILE q8kr_tile_scalar
#define IKLLM_Q8KV_R8_TILE q8kv_r8_tile_scalar
#define IKLLM_Q8KV_ROW q8kv_row_scalar
#endif

// f(std::integral_constant<int, T>, t0) for the tokens [t0, t0 + T) of nt, in tiles of kQ8KRTile.
template <class F>
inline void q8_token_tiles(int64_t nt, F&& f) {
    static_assert(kQ8KRTile == 4);
    for (int64_t t0 = 0; t0 < nt; t0 += kQ8KRTile) switch (std::min<int64_t>(kQ8KRTile, nt - t0)) {
            case 1: f(std::integral_constant<int, 1>{}, t0); break;
            case 2: f(std::integral_constant<int, 2>{}, t0); break;
            case 3: f(std::integral_constant<int, 3>{}, t0); break;
            default: f(std::integral_constant<int, 4>{}, t0); break;
        }
}

template <uint32_t Type>
void q8kr_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
              float* y, int64_t ys) {
    constexpr int R = Q8KRForm<Type>::kRows;
    for (int64_t r = r0; r < r1; r += R)
        for (int h = 0; h < R / 8; ++h)
            q8_token_tiles(nt, [&](auto tc, int64_t t0) {
                IKLLM_Q8KR_TILE<Type, decltype(tc)::value>(w + (size_t)r * wrb, ne0 / 256, h, act + (size_t)t0 * arb, arb,
                                                           y + t0 * ys + r + 8 * h, ys);
            });
}

inline void q8kv_r8_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
                        float* y, int64_t ys) {
    for (int64_t r = r0; r < r1; r += 8)
        q8_token_tiles(nt, [&](auto tc, int64_t t0) {
            IKLLM_Q8KV_R8_TILE<decltype(tc)::value>(w + (size_t)r * wrb, ne0, act + (size_t)t0 * arb, arb, y + t0 * ys + r, ys);
        });
}

inline void q8kv_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
                     float* y, int64_t ys) {
    for (int64_t r = r0; r < r1; ++r)
        q8_token_tiles(nt, [&](auto tc, int64_t t0) {
            IKLLM_Q8KV_ROW<decltype(tc)::value>(w + (size_t)r * wrb, ne0, act + (size_t)t0 * arb, arb, y + t0 * ys + r, ys);
        });
}

}  // namespace
}  // namespace ikllm::cpu
