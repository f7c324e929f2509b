// exp_approx (vec_exp.h) on 16 float lanes, shared by the element-wise kernels and the tile-unit
// attention so both compute the same exponentials.
#pragma once
#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 seeds AVX-512 intrinsic results with _mm512_undefined_*(), which -Wuninitialized reports
// (a known false positive; same in kquant_simd.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/vec_exp.h"

namespace ikllm::cpu {
namespace {

struct Avx512Ops {
    static __m512 set1(float v) { return _mm512_set1_ps(v); }
    static __m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
    static __m512 mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
    static __m512 fma(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
    static __m512 min(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
    static __m512 max(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
    static __m512 round(__m512 v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static __m512 pow2n(__m512 n) {
        const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
        return _mm512_castsi512_ps(e);
    }
    static __m512 zero_below(__m512 x, float lo, __m512 v) {
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(lo), _CMP_GE_OQ), v);
    }
};

inline __m512 exp512(__m512 x) { return exp_approx<Avx512Ops>(x); }

}  // namespace
}  // namespace ikllm::cpu
