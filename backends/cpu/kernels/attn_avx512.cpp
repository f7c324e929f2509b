// AVX-512 attention primitives: 16-wide dot products with 4 accumulators and masked tails,
// fused scale-and-add, f16 rows widened with vcvtph2ps.
#include "kernels/attn_kernels.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace ikllm::cpu {
namespace {
float dot(const float* a, const float* b, int64_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}
// dot() for four a rows against one b: per query the same 4 accumulators over 64-float chunks,
// the same 16-float and masked tails and the same final reduction, so each result is bit-equal
// to dot(a[q], b, n); b is loaded once for the four.
void dot4(const float* const* a, const float* b, int64_t n, float* out) {
    __m512 s[4][4];
    for (int q = 0; q < 4; ++q)
        for (int r = 0; r < 4; ++r) s[q][r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512 b0 = _mm512_loadu_ps(b + i), b1 = _mm512_loadu_ps(b + i + 16), b2 = _mm512_loadu_ps(b + i + 32),
                     b3 = _mm512_loadu_ps(b + i + 48);
        for (int q = 0; q < 4; ++q) {
            s[q][0] = _mm512_fmadd_ps(_mm512_loadu_ps(a[q] + i), b0, s[q][0]);
            s[q][1] = _mm512_fmadd_ps(_mm512_loadu_ps(a[q] + i + 16), b1, s[q][1]);
            s[q][2] = _mm512_fmadd_ps(_mm512_loadu_ps(a[q] + i + 32), b2, s[q][2]);
            s[q][3] = _mm512_fmadd_ps(_mm512_loadu_ps(a[q] + i + 48), b3, s[q][3]);
        }
    }
    for (; i + 16 <= n; i += 16) {
        const __m512 b0 = _mm512_loadu_ps(b + i);
        for (int q = 0; q < 4; ++q) s[q][0] = _mm512_fmadd_ps(_mm512_loadu_ps(a[q] + i), b0, s[q][0]);
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        const __m512 b0 = _mm512_maskz_loadu_ps(m, b + i);
        for (int q = 0; q < 4; ++q) s[q][1] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a[q] + i), b0, s[q][1]);
    }
    for (int q = 0; q < 4; ++q)
        out[q] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s[q][0], s[q][1]), _mm512_add_ps(s[q][2], s[q][3])));
}
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    const __m512 vs = _mm512_set1_ps(s), vw = _mm512_set1_ps(w);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(vw, _mm512_loadu_ps(x + i), _mm512_mul_ps(_mm512_loadu_ps(y + i), vs)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m,
                              _mm512_fmadd_ps(vw, _mm512_maskz_loadu_ps(m, x + i), _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), vs)));
    }
}
// Queries in groups of up to 4, 64 columns (4 registers) per query at a time: 16 accumulators,
// each V load feeds up to 4 queries' FMAs. Masked tails for n % 16.
template <int Q>
void pv_group(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t ps, const float* v, int64_t nk, int64_t n) {
    for (int64_t i0 = 0; i0 < n; i0 += 64) {
        const int64_t w = n - i0 < 64 ? n - i0 : 64;
        const int nr = (int)((w + 15) / 16);
        __mmask16 mk[4];
        for (int r = 0; r < 4; ++r) {
            const int64_t left = w - 16 * r;
            mk[r] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : (__mmask16)0;
        }
        __m512 y[Q][4];
        for (int q = 0; q < Q; ++q) {
            const __m512 s = _mm512_set1_ps(rescale[q]);
            for (int r = 0; r < 4; ++r)
                y[q][r] = r < nr ? _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[r], acc + q * acc_stride + i0 + 16 * r), s) : _mm512_setzero_ps();
        }
        for (int64_t j = 0; j < nk; ++j) {
            __m512 x[4];
            for (int r = 0; r < 4; ++r) x[r] = r < nr ? _mm512_maskz_loadu_ps(mk[r], v + j * n + i0 + 16 * r) : _mm512_setzero_ps();
            for (int q = 0; q < Q; ++q) {
                const __m512 pw = _mm512_set1_ps(p[q * ps + j]);
                for (int r = 0; r < 4; ++r) y[q][r] = _mm512_fmadd_ps(pw, x[r], y[q][r]);
            }
        }
        for (int q = 0; q < Q; ++q)
            for (int r = 0; r < nr; ++r) _mm512_mask_storeu_ps(acc + q * acc_stride + i0 + 16 * r, mk[r], y[q][r]);
    }
}
void pv_tile(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t ps, int nq, const float* v, int64_t nk,
             int64_t n) {
    int q = 0;
    for (; q + 4 <= nq; q += 4) pv_group<4>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, nk, n);
    switch (nq - q) {
        case 3: pv_group<3>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, nk, n); break;
        case 2: pv_group<2>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, nk, n); break;
        case 1: pv_group<1>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, nk, n); break;
        default: break;
    }
}
void load_row(uint32_t type, const void* src, float* dst, int64_t n) {
    if (type != quant::T_F16) {
        quant::kv_decode_row(type, src, dst, n);
        return;
    }
    const uint16_t* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + i)));
    }
}
constexpr AttnKernels kAvx512{Isa::avx512, dot, dot4, scale_axpy, pv_tile, load_row};
}  // namespace
const AttnKernels* attn_kernels_avx512() { return &kAvx512; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const AttnKernels* attn_kernels_avx512() { return nullptr; }
}  // namespace ikllm::cpu
#endif
