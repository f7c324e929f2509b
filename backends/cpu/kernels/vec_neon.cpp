// NEON element-wise kernels: the AVX2 table's operations (vec_avx2.cpp) on 4-lane registers.
// Element-wise results do not depend on the lane count; the two sums (softmax weights, RMSNorm
// squares) keep AVX2's 8-lane accumulation order, so every table gives the same bits.
#include "kernels/vec_kernels.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <cmath>
#include <limits>

#include "kernels/vec_exp.h"

namespace ikllm::cpu {
namespace {

struct NeonOps {  // min / max / compare with x86 semantics (NaN: the second operand, false)
    static float32x4_t set1(float v) { return vdupq_n_f32(v); }
    static float32x4_t add(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }
    static float32x4_t mul(float32x4_t a, float32x4_t b) { return vmulq_f32(a, b); }
    static float32x4_t fma(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_f32(c, a, b); }
    static float32x4_t min(float32x4_t a, float32x4_t b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
    static float32x4_t max(float32x4_t a, float32x4_t b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
    static float32x4_t round(float32x4_t v) { return vrndnq_f32(v); }
    static float32x4_t pow2n(float32x4_t n) {
        return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23));
    }
    static float32x4_t zero_below(float32x4_t x, float lo, float32x4_t v) {
        return vreinterpretq_f32_u32(vandq_u32(vcgeq_f32(x, vdupq_n_f32(lo)), vreinterpretq_u32_f32(v)));
    }
};
void silu_mul(const float* g, const float* u, float* y, int64_t n) {
    int64_t i = 0;
    const float32x4_t one = vdupq_n_f32(1.0f);
    for (; i + 4 <= n; i += 4) {
        const float32x4_t gv = vld1q_f32(g + i);
        const float32x4_t e = exp_approx<NeonOps>(vsubq_f32(vdupq_n_f32(0.0f), gv));  // 0 - g as AVX2
        vst1q_f32(y + i, vmulq_f32(vdivq_f32(gv, vaddq_f32(one, e)), vld1q_f32(u + i)));
    }
    for (; i < n; ++i) y[i] = g[i] / (1.0f + exp_approx<ScalarExpOps>(-g[i])) * u[i];
}

float32x4_t exp_shifted(const float* s, float32x4_t vm) {
    const float32x4_t x = vld1q_f32(s);
    const float32x4_t e = exp_approx<NeonOps>(vsubq_f32(x, vm));
    const uint32x4_t is_ninf = vceqq_f32(x, vdupq_n_f32(-std::numeric_limits<float>::infinity()));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(e), is_ninf));
}

// AVX2's 8-lane sum: elements 8k..8k+3 into `lo`, 8k+4..8k+7 into `hi`, then its reduction.
float exp_shift_sum(float* s, int64_t n, float m) {
    const float32x4_t vm = vdupq_n_f32(m);
    float32x4_t lo = vdupq_n_f32(0.0f), hi = lo;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float32x4_t e0 = exp_shifted(s + i, vm), e1 = exp_shifted(s + i + 4, vm);
        vst1q_f32(s + i, e0);
        vst1q_f32(s + i + 4, e1);
        lo = vaddq_f32(lo, e0);
        hi = vaddq_f32(hi, e1);
    }
    if (i < n) {  // the tail in its lanes, -inf after it (AVX2's order: see vec_avx2.cpp)
        float t[8];
        for (int j = 0; j < 8; ++j) t[j] = i + j < n ? s[i + j] : -std::numeric_limits<float>::infinity();
        const float32x4_t e0 = exp_shifted(t, vm), e1 = exp_shifted(t + 4, vm);
        vst1q_f32(t, e0);
        vst1q_f32(t + 4, e1);
        for (int j = 0; i + j < n; ++j) s[i + j] = t[j];
        lo = vaddq_f32(lo, e0);
        hi = vaddq_f32(hi, e1);
    }
    const float32x4_t h = vaddq_f32(lo, hi);
    const float32x2_t p = vadd_f32(vget_low_f32(h), vget_high_f32(h));
    return vget_lane_f32(p, 0) + vget_lane_f32(p, 1);
}

// The scalar table's eight double sums (element i into lane i % 8) in four 2-lane accumulators;
// the products are exact in double, so the fused add rounds like the scalar add.
void rms_norm(const float* x, const float* gain, float* y, int64_t n, float eps) {
    float64x2_t acc2[4];
    for (float64x2_t& a : acc2) a = vdupq_n_f64(0.0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 4; ++k) {
            const float64x2_t v = vcvt_f64_f32(vld1_f32(x + i + 2 * k));
            acc2[k] = vfmaq_f64(acc2[k], v, v);
        }
    double acc[8];
    for (int k = 0; k < 4; ++k) vst1q_f64(acc + 2 * k, acc2[k]);
    for (; i < n; ++i) acc[i & 7] += (double)x[i] * x[i];
    const double sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    const float s = 1.0f / std::sqrt((float)(sum / n) + eps);
    const float32x4_t vs = vdupq_n_f32(s);
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
        float32x4_t v = vmulq_f32(vld1q_f32(x + k), vs);
        if (gain) v = vmulq_f32(v, vld1q_f32(gain + k));
        vst1q_f32(y + k, v);
    }
    for (; k < n; ++k) y[k] = gain ? (x[k] * s) * gain[k] : x[k] * s;
}

void add(const float* a, const float* b, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    for (; i < n; ++i) y[i] = a[i] + b[i];
}

constexpr VecKernels kNeon{Isa::neon, silu_mul, exp_shift_sum, rms_norm, add};

}  // namespace
const VecKernels* vec_kernels_neon() { return &kNeon; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const VecKernels* vec_kernels_neon() { return nullptr; }
}  // namespace ikllm::cpu
#endif
