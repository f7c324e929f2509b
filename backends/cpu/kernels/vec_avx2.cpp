// AVX2 element-wise kernels: 8 lanes, masked-free tails through the scalar operations.
#include "kernels/vec_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "kernels/vec_exp.h"

namespace ikllm::cpu {
namespace {

struct Avx2Ops {
    static __m256 set1(float v) { return _mm256_set1_ps(v); }
    static __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
    static __m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
    static __m256 fma(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
    static __m256 min(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
    static __m256 max(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
    static __m256 round(__m256 v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static __m256 pow2n(__m256 n) {
        const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
        return _mm256_castsi256_ps(e);
    }
    static __m256 zero_below(__m256 x, float lo, __m256 v) {
        return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(lo), _CMP_GE_OQ), v);
    }
};
void silu_mul(const float* g, const float* u, float* y, int64_t n) {
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        const __m256 gv = _mm256_loadu_ps(g + i);
        const __m256 e = exp_approx<Avx2Ops>(_mm256_sub_ps(_mm256_setzero_ps(), gv));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; ++i) y[i] = g[i] / (1.0f + exp_approx<ScalarExpOps>(-g[i])) * u[i];
}
float exp_shift_sum(float* s, int64_t n, float m) {
    const __m256 vm = _mm256_set1_ps(m), ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(s + i);
        // -inf - m is -inf, below kExpLo: exp_approx gives 0 for masked cells already.
        __m256 e = exp_approx<Avx2Ops>(_mm256_sub_ps(x, vm));
        e = _mm256_andnot_ps(_mm256_cmp_ps(x, ninf, _CMP_EQ_OQ), e);
        _mm256_storeu_ps(s + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    // The tail in its lanes too (masked cells after it add zeros): element i always lands in lane
    // i % 8, so a tile's sum does not depend on how many masked cells follow it (a token alone
    // or in a batch, cpu_attention_chunks_test).
    if (i < n) {
        alignas(32) float t[8];
        for (int j = 0; j < 8; ++j) t[j] = i + j < n ? s[i + j] : -std::numeric_limits<float>::infinity();
        const __m256 x = _mm256_load_ps(t);
        const __m256 e = _mm256_andnot_ps(_mm256_cmp_ps(x, ninf, _CMP_EQ_OQ), exp_approx<Avx2Ops>(_mm256_sub_ps(x, vm)));
        _mm256_store_ps(t, e);
        for (int j = 0; i + j < n; ++j) s[i + j] = t[j];
        acc = _mm256_add_ps(acc, e);
    }
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    _mm256_zeroupper();
    return _mm_cvtss_f32(h);
}

// Lanes 0-3 and 4-7 of the scalar table's eight double sums in two accumulators (the products
// are exact in double, so the fused add rounds like the scalar add); the tail one lane at a time.
void rms_norm(const float* x, const float* gain, float* y, int64_t n, float eps) {
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), b = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
        lo = _mm256_fmadd_pd(a, a, lo);
        hi = _mm256_fmadd_pd(b, b, hi);
    }
    alignas(32) double acc[8];
    _mm256_store_pd(acc, lo);
    _mm256_store_pd(acc + 4, hi);
    for (; i < n; ++i) acc[i & 7] += (double)x[i] * x[i];
    const double sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    const float s = 1.0f / std::sqrt((float)(sum / n) + eps);
    const __m256 vs = _mm256_set1_ps(s);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + k), vs);
        if (gain) v = _mm256_mul_ps(v, _mm256_loadu_ps(gain + k));
        _mm256_storeu_ps(y + k, v);
    }
    for (; k < n; ++k) y[k] = gain ? (x[k] * s) * gain[k] : x[k] * s;
    _mm256_zeroupper();
}

void add(const float* a, const float* b, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; ++i) y[i] = a[i] + b[i];
    _mm256_zeroupper();
}

constexpr VecKernels kAvx2{Isa::avx2, silu_mul, exp_shift_sum, rms_norm, add};

}  // namespace
const VecKernels* vec_kernels_avx2() { return &kAvx2; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const VecKernels* vec_kernels_avx2() { return nullptr; }
}  // namespace ikllm::cpu
#endif
