// Scalar attention primitives (the reference for the SIMD tables) and the dispatcher.
#include "kernels/attn_kernels.h"
#include "quant/kv_codec.h"

namespace ikllm::cpu {

namespace {
float dot(const float* a, const float* b, int64_t n) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}
void scores(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s, int64_t ss) {
    for (int q = 0; q < nq; ++q)
        for (int64_t j = 0; j < nk; ++j) s[q * ss + j] = dot(a[q], k + j * n, n) * scale;
}
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] * s + w * x[i];
}
void pv_tile(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t p_stride, int nq, const float* v, int64_t vs,
             int64_t nk, int64_t n) {
    for (int q = 0; q < nq; ++q)
        for (int64_t i = 0; i < n; ++i) {
            float y = acc[q * acc_stride + i] * rescale[q];
            for (int64_t j = 0; j < nk; ++j) y = y + p[q * p_stride + j] * v[j * vs + i];
            acc[q * acc_stride + i] = y;
        }
}
void load_row(uint32_t type, const void* src, float* dst, int64_t n) { quant::kv_decode_row(type, src, dst, n); }
void load_rows(uint32_t type, const uint8_t* const* rows, int64_t nr, float* dst, int64_t n) {
    for (int64_t j = 0; j < nr; ++j) quant::kv_decode_row(type, rows[j], dst + j * n, n);
}
constexpr AttnKernels kAttnScalar{Isa::scalar, dot, scores, scale_axpy, pv_tile, load_row, load_rows};
}  // namespace

const AttnKernels* attn_kernels_scalar() { return &kAttnScalar; }

const AttnKernels& attn_kernels(Isa isa) {
    const Isa cap = isa == Isa::avx512 && detected_isa() == Isa::avx512 ? Isa::avx512
                    : (isa == Isa::avx512 || isa == Isa::avx2) && detected_isa() != Isa::scalar ? Isa::avx2
                                                                                                   : Isa::scalar;
    if (cap == Isa::avx512)
        if (const AttnKernels* k = attn_kernels_avx512()) return *k;
    if (cap != Isa::scalar)
        if (const AttnKernels* k = attn_kernels_avx2()) return *k;
    return kAttnScalar;
}

}  // namespace ikllm::cpu
