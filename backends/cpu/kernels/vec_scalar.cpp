// Reference element-wise kernels (any CPU) and the table lookup.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/vec_exp.h"
#include "kernels/vec_kernels.h"

namespace ikllm::cpu {
namespace {

// Horizontal sum of 8 lanes in the order of the AVX2 kernels' reduction.
float fold8(const float (&l)[8]) {
    const float h0 = l[0] + l[4], h1 = l[1] + l[5], h2 = l[2] + l[6], h3 = l[3] + l[7];
    return (h0 + h2) + (h1 + h3);
}

void silu_mul(const float* g, const float* u, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float gv = g[i];
        y[i] = gv / (1.0f + exp_approx<ScalarExpOps>(-gv)) * u[i];
    }
}
// The sum in the AVX2 table's order (8 lanes, element i into lane i % 8, folded (l + l+4), then
// (0 + 2) + (1 + 3); the tail after that), so both give the same bits.
float exp_shift_sum(float* s, int64_t n, float m) {
    auto e = [&](int64_t i) {
        return s[i] = s[i] == -std::numeric_limits<float>::infinity() ? 0.0f : exp_approx<ScalarExpOps>(s[i] - m);
    };
    // element i in lane i % 8, the tail too (as the SIMD tables): the sum does not depend on
    // masked cells after the last visible one
    float lane[8] = {};
    for (int64_t i = 0; i < n; ++i) lane[i & 7] += e(i);
    return fold8(lane);
}

void rms_norm(const float* x, const float* gain, float* y, int64_t n, float eps) {
    double acc[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += (double)x[i + j] * x[i + j];
    for (; i < n; ++i) acc[i & 7] += (double)x[i] * x[i];
    const double sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    const float s = 1.0f / std::sqrt((float)(sum / n) + eps);
    if (gain)
        for (int64_t k = 0; k < n; ++k) y[k] = (x[k] * s) * gain[k];
    else
        for (int64_t k = 0; k < n; ++k) y[k] = x[k] * s;
}

void add(const float* a, const float* b, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

constexpr VecKernels kVecScalar{Isa::scalar, silu_mul, exp_shift_sum, rms_norm, add};

}  // namespace

const VecKernels* vec_kernels_scalar() { return &kVecScalar; }

const VecKernels& vec_kernels(Isa isa) {
    const Isa hw = detected_isa();
    if (isa == Isa::neon && hw == Isa::neon)
        if (const VecKernels* k = vec_kernels_neon()) return *k;
    if (isa == Isa::avx512 && hw == Isa::avx512)
        if (const VecKernels* k = vec_kernels_avx512()) return *k;
    if ((isa == Isa::avx512 || isa == Isa::avx2) && (hw == Isa::avx2 || hw == Isa::avx512))
        if (const VecKernels* k = vec_kernels_avx2()) return *k;
    return kVecScalar;
}
const VecKernels& vec_kernels() {
    static const VecKernels& k = vec_kernels(best_isa());
    return k;
}

}  // namespace ikllm::cpu
