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
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] * s + w * x[i];
}
void load_row(uint32_t type, const void* src, float* dst, int64_t n) { quant::kv_decode_row(type, src, dst, n); }
constexpr AttnKernels kScalar{Isa::scalar, dot, scale_axpy, load_row};
}  // namespace

const AttnKernels* attn_kernels_scalar() { return &kScalar; }

const AttnKernels& attn_kernels(Isa isa) {
    const Isa cap = isa == Isa::avx512 && detected_isa() == Isa::avx512 ? Isa::avx512
                    : (isa == Isa::avx512 || isa == Isa::avx2) && detected_isa() != Isa::scalar ? Isa::avx2
                                                                                                   : Isa::scalar;
    if (cap == Isa::avx512)
        if (const AttnKernels* k = attn_kernels_avx512()) return *k;
    if (cap != Isa::scalar)
        if (const AttnKernels* k = attn_kernels_avx2()) return *k;
    return kScalar;
}

}  // namespace ikllm::cpu
