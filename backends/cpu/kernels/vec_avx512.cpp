// AVX-512 element-wise kernels: 16 lanes, masked tails (the same lane operations).
#include "kernels/vec_kernels.h"

#if defined(__AVX512F__)
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "kernels/exp_avx512.h"

namespace ikllm::cpu {
namespace {

void silu_mul(const float* g, const float* u, float* y, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(m, u + i)));
    }
    _mm256_zeroupper();
}
float exp_shift_sum(float* s, int64_t n, float m) {
    const __m512 vm = _mm512_set1_ps(m), ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 x = _mm512_maskz_loadu_ps(k, s + i);
        const __mmask16 live = k & ~_mm512_cmp_ps_mask(x, ninf, _CMP_EQ_OQ);
        const __m512 e = _mm512_maskz_mov_ps(live, exp512(_mm512_sub_ps(x, vm)));
        _mm512_mask_storeu_ps(s + i, k, e);
        acc = _mm512_add_ps(acc, e);
    }
    const float sum = _mm512_reduce_add_ps(acc);
    _mm256_zeroupper();
    return sum;
}

// One 8-lane double accumulator: lane j sums elements i + j, as the scalar table's acc[j] (the
// products are exact in double, so the fused add rounds like the scalar add).
void rms_norm(const float* x, const float* gain, float* y, int64_t n, float eps) {
    __m512d acc = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 8) {
        const __mmask8 m = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        const __m512d v = _mm512_maskz_cvtps_pd((__mmask8)0xff, _mm256_maskz_loadu_ps(m, x + i));
        acc = _mm512_fmadd_pd(v, v, acc);
    }
    alignas(64) double a[8];
    _mm512_store_pd(a, acc);
    const double sum = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    const __m512 s = _mm512_set1_ps(1.0f / std::sqrt((float)(sum / n) + eps));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), s);
        if (gain) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, gain + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
    _mm256_zeroupper();
}

void add(const float* a, const float* b, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
    }
    _mm256_zeroupper();
}

constexpr VecKernels kAvx512{Isa::avx512, silu_mul, exp_shift_sum, rms_norm, add};

}  // namespace
const VecKernels* vec_kernels_avx512() { return &kAvx512; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const VecKernels* vec_kernels_avx512() { return nullptr; }
}  // namespace ikllm::cpu
#endif
