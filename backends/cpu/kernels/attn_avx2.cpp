// AVX2/FMA/F16C attention primitives: 8-wide dot products with 4 accumulators, fused
// scale-and-add, f16 rows widened with vcvtph2ps.
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
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}
void dot4(const float* const* a, const float* b, int64_t n, float* out) {
    for (int q = 0; q < 4; ++q) out[q] = dot(a[q], b, n);
}
// Q queries x 32 keys: four 8-key accumulators per query, each kT row loaded once for the Q.
template <int Q>
void scores_group(const float* const* a, const float* kT, int64_t n, float scale, float* out, int64_t os) {
    __m256 acc[Q][4];
    for (int q = 0; q < Q; ++q)
        for (int r = 0; r < 4; ++r) acc[q][r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; ++i) {
        __m256 k[4];
        for (int r = 0; r < 4; ++r) k[r] = _mm256_loadu_ps(kT + i * kAttnTile + 8 * r);
        for (int q = 0; q < Q; ++q) {
            const __m256 x = _mm256_broadcast_ss(a[q] + i);
            for (int r = 0; r < 4; ++r) acc[q][r] = _mm256_fmadd_ps(x, k[r], acc[q][r]);
        }
    }
    const __m256 s = _mm256_set1_ps(scale);
    for (int q = 0; q < Q; ++q)
        for (int r = 0; r < 4; ++r) _mm256_storeu_ps(out + q * os + 8 * r, _mm256_mul_ps(acc[q][r], s));
}
// kt[i * 32 + j] = kb[j * n + i] for j < nk (0 for nk <= j < 32), by 8 x 8 blocks.
void transpose_tile(const float* kb, int64_t nk, int64_t n, float* kt) {
    alignas(32) float tail[8];
    for (int64_t i0 = 0; i0 < n; i0 += 8) {
        const int64_t w = n - i0 < 8 ? n - i0 : 8;
        for (int64_t j0 = 0; j0 < kAttnTile; j0 += 8) {
            __m256 r[8];
            for (int j = 0; j < 8; ++j) {
                if (j0 + j >= nk) r[j] = _mm256_setzero_ps();
                else if (w == 8) r[j] = _mm256_loadu_ps(kb + (j0 + j) * n + i0);
                else {
                    for (int c = 0; c < 8; ++c) tail[c] = c < w ? kb[(j0 + j) * n + i0 + c] : 0.0f;
                    r[j] = _mm256_load_ps(tail);
                }
            }
            const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
            const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
            const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
            const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
            const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            const __m256 c[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                                 _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                                 _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                                 _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
            for (int64_t k = 0; k < w; ++k) _mm256_storeu_ps(kt + (i0 + k) * kAttnTile + j0, c[k]);
        }
    }
}
void scores(const float* const* a, int nq, const float* kb, int64_t nk, int64_t n, float scale, float* kt, float* out,
            int64_t os) {
    transpose_tile(kb, nk, n, kt);
    int q = 0;
    for (; q + 2 <= nq; q += 2) scores_group<2>(a + q, kt, n, scale, out + q * os, os);
    if (q < nq) scores_group<1>(a + q, kt, n, scale, out + q * os, os);
}
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s), vw = _mm256_set1_ps(w);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vw, _mm256_loadu_ps(x + i), _mm256_mul_ps(_mm256_loadu_ps(y + i), vs)));
    for (; i < n; ++i) y[i] = std::fma(w, x[i], y[i] * s);  // as the vector lanes
}
// One query at a time, 32 columns (4 registers) kept across the keys.
void pv_tile(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t ps, int nq, const float* v, int64_t nk,
             int64_t n) {
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
                for (int r = 0; r < 4; ++r) y[r] = _mm256_fmadd_ps(pw, _mm256_loadu_ps(v + j * n + i0 + 8 * r), y[r]);
            }
            for (int r = 0; r < 4; ++r) _mm256_storeu_ps(a + i0 + 8 * r, y[r]);
        }
        for (; i0 < n; ++i0) {
            float y = a[i0] * rescale[q];
            for (int64_t j = 0; j < nk; ++j) y = std::fma(pq[j], v[j * n + i0], y);
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
constexpr AttnKernels kAvx2{Isa::avx2, dot, dot4, scores, scale_axpy, pv_tile, load_row};
}  // namespace
const AttnKernels* attn_kernels_avx2() { return &kAvx2; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const AttnKernels* attn_kernels_avx2() { return nullptr; }
}  // namespace ikllm::cpu
#endif
