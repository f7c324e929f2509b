// AVX2/FMA/F16C attention primitives: 8-wide dot products with 4 accumulators, fused
// scale-and-add, f16 rows widened with vcvtph2ps. The scalar table computes the same operations
// in the same order (attn_scalar.cpp): both give the same bits.
#include "kernels/attn_kernels.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <cmath>

namespace ikllm::cpu {
namespace {
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
float dot(const float* a, const float* b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; ++i) s = std::fma(a[i], b[i], s);
    return s;
}
void scores(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s, int64_t ss) {
    for (int64_t j = 0; j < nk; ++j)  // keys outer: a K row is loaded once for all the queries
        for (int q = 0; q < nq; ++q) s[q * ss + j] = dot(a[q], k + j * n, n) * scale;
}
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s), vw = _mm256_set1_ps(w);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vw, _mm256_loadu_ps(x + i), _mm256_mul_ps(_mm256_loadu_ps(y + i), vs)));
    for (; i < n; ++i) y[i] = std::fma(w, x[i], y[i] * s);  // as the vector lanes
}
// One query at a time, 32 columns (4 registers) kept across the keys.
void pv_tile(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t ps, int nq, const float* v, int64_t vs,
             int64_t nk, int64_t n) {
    for (int q = 0; q < nq; ++q) {
        float* a = acc + q * acc_stride;
        const float* pq = p + q * ps;
        const __m256 s = _mm256_set1_ps(rescale[q]);
        int64_t i0 = 0;
        for (; i0 + 32 <= n; i0 += 32) {
            __m256 y[4];
            for (int r = 0; r < 4; ++r) y[r] = _mm256_mul_ps(_mm256_loadu_ps(a + i0 + 8 * r), s);
            for (int64_t j = 0; j < nk; ++j) {
                const __m256 pw = _mm256_set1_ps(pq[j]);
                for (int r = 0; r < 4; ++r) y[r] = _mm256_fmadd_ps(pw, _mm256_loadu_ps(v + j * vs + i0 + 8 * r), y[r]);
            }
            for (int r = 0; r < 4; ++r) _mm256_storeu_ps(a + i0 + 8 * r, y[r]);
        }
        for (; i0 < n; ++i0) {
            float y = a[i0] * rescale[q];
            for (int64_t j = 0; j < nk; ++j) y = std::fma(pq[j], v[j * vs + i0], y);
            a[i0] = y;
        }
    }
}
void load_row(uint32_t type, const void* src, float* dst, int64_t n) {
    if (type != quant::T_F16) {
        quant::kv_decode_row(type, src, dst, n);
        return;
    }
    const uint16_t* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
    for (; i < n; ++i) dst[i] = _cvtsh_ss(h[i]);
}
void load_rows(uint32_t type, const uint8_t* const* rows, int64_t nr, float* dst, int64_t n) {
    for (int64_t j = 0; j < nr; ++j) load_row(type, rows[j], dst + j * n, n);
}
constexpr AttnKernels kAvx2{Isa::avx2, dot, scores, scale_axpy, pv_tile, load_row, load_rows};
}  // namespace
const AttnKernels* attn_kernels_avx2() { return &kAvx2; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const AttnKernels* attn_kernels_avx2() { return nullptr; }
}  // namespace ikllm::cpu
#endif
