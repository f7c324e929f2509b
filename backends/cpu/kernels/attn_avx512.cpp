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
constexpr AttnKernels kAvx512{Isa::avx512, dot, scale_axpy, load_row};
}  // namespace
const AttnKernels* attn_kernels_avx512() { return &kAvx512; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const AttnKernels* attn_kernels_avx512() { return nullptr; }
}  // namespace ikllm::cpu
#endif
