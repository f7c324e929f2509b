// Vector primitives of CPU flash attention, one table per instruction set (attn_<isa>.cpp),
// picked at run time like the matmul kernels. The scalar table is the reference the SIMD ones
// are tested against.
#pragma once
#include <cstdint>

#include "kernels/matmul.h"

namespace ikllm::cpu {

struct AttnKernels {
    Isa isa;
    // sum_i a[i] * b[i]
    float (*dot)(const float* a, const float* b, int64_t n);
    // y[i] = y[i] * s + w * x[i]
    void (*scale_axpy)(float* y, float s, float w, const float* x, int64_t n);
    // decode n cache elements of type (f32, f16, bf16, q8_0) to f32
    void (*load_row)(uint32_t type, const void* src, float* dst, int64_t n);
};

const AttnKernels* attn_kernels_scalar();
const AttnKernels* attn_kernels_avx2();    // nullptr when not compiled in
const AttnKernels* attn_kernels_avx512();  // nullptr when not compiled in
// Best table for best_isa(); `isa` forces one (falls back to scalar when unavailable).
const AttnKernels& attn_kernels(Isa isa);

}  // namespace ikllm::cpu
