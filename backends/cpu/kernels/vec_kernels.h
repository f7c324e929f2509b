// Element-wise float math of the CPU ops (SwiGLU of the feed-forward layers, softmax weights of
// attention), one table per instruction set (vec_<isa>.cpp) like the matmul kernels. All tables
// compute exp with the same range reduction and polynomial (vec_exp.h): the scalar table is the
// reference the SIMD ones are tested against, and std::exp the reference of that.
#pragma once
#include <cstdint>

#include "kernels/matmul.h"

namespace ikllm::cpu {

struct VecKernels {
    Isa isa;
    // y[i] = g[i] / (1 + exp(-g[i])) * u[i]  (SiLU(g) * u; y may alias g or u)
    void (*silu_mul)(const float* g, const float* u, float* y, int64_t n);
    // s[i] = exp(s[i] - m) (0 where s[i] is -inf), returns the sum of the new s[i]. m >= every s[i].
    float (*exp_shift_sum)(float* s, int64_t n, float m);
    // RMSNorm of one row: y[i] = (x[i] * s) * gain[i] (gain null: x[i] * s), s = 1/sqrt(mean(x^2) + eps).
    // The squares (exact in double) are summed in 8 interleaved double lanes (element i into lane
    // i % 8), combined ((0+4)+(1+5))+((2+6)+(3+7)): every table gives bit-identical results.
    void (*rms_norm)(const float* x, const float* gain, float* y, int64_t n, float eps);
    // y[i] = a[i] + b[i] (y may alias a or b)
    void (*add)(const float* a, const float* b, float* y, int64_t n);
};

const VecKernels* vec_kernels_scalar();
const VecKernels* vec_kernels_avx2();    // nullptr when not compiled in
const VecKernels* vec_kernels_avx512();  // nullptr when not compiled in
const VecKernels* vec_kernels_neon();    // nullptr when not compiled in
// Table for `isa` (falls back to lower ones the CPU supports); vec_kernels() for best_isa().
const VecKernels& vec_kernels(Isa isa);
const VecKernels& vec_kernels();

}  // namespace ikllm::cpu
