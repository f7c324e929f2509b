// NEON attention primitives: the AVX2 table's operations (attn_avx2.cpp) with each 8-lane
// register kept as two 4-lane ones, reduced in the same order, so ARM gets the bits of x86's
// AVX2 and scalar tables.
#include "kernels/attn_kernels.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <cmath>

namespace ikllm::cpu {
namespace {
struct F8 {
    float32x4_t lo, hi;
};
inline F8 load8(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
inline F8 fma8(F8 a, F8 b, F8 c) { return {vfmaq_f32(c.lo, a.lo, b.lo), vfmaq_f32(c.hi, a.hi, b.hi)}; }
inline F8 add8(F8 a, F8 b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }
// AVX2's hsum: halves added, then (s0 + s2) + (s1 + s3).
inline float hsum(F8 v) {
    const float32x4_t s = vaddq_f32(v.lo, v.hi);
    const float32x2_t p = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    return vget_lane_f32(p, 0) + vget_lane_f32(p, 1);
}
float dot(const float* a, const float* b, int64_t n) {
    const F8 z{vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    F8 s0 = z, s1 = z, s2 = z, s3 = z;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = fma8(load8(a + i), load8(b + i), s0);
        s1 = fma8(load8(a + i + 8), load8(b + i + 8), s1);
        s2 = fma8(load8(a + i + 16), load8(b + i + 16), s2);
        s3 = fma8(load8(a + i + 24), load8(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = fma8(load8(a + i), load8(b + i), s0);
    float s = hsum(add8(add8(s0, s1), add8(s2, s3)));
    for (; i < n; ++i) s = std::fma(a[i], b[i], s);
    return s;
}
void scores(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s, int64_t ss) {
    for (int64_t j = 0; j < nk; ++j)  // keys outer: a K row is loaded once for all the queries
        for (int q = 0; q < nq; ++q) s[q * ss + j] = dot(a[q], k + j * n, n) * scale;
}
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    const float32x4_t vs = vdupq_n_f32(s), vw = vdupq_n_f32(w);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_f32(vmulq_f32(vld1q_f32(y + i), vs), vw, vld1q_f32(x + i)));
    for (; i < n; ++i) y[i] = std::fma(w, x[i], y[i] * s);  // as the vector lanes
}
// One query at a time, 32 columns (8 registers) kept across the keys.
void pv_tile(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t ps, int nq, const float* v,
             int64_t vs, int64_t nk, int64_t n) {
    for (int q = 0; q < nq; ++q) {
        float* a = acc + q * acc_stride;
        const float* pq = p + q * ps;
        const float32x4_t s = vdupq_n_f32(rescale[q]);
        int64_t i0 = 0;
        for (; i0 + 32 <= n; i0 += 32) {
            float32x4_t y[8];
            for (int r = 0; r < 8; ++r) y[r] = vmulq_f32(vld1q_f32(a + i0 + 4 * r), s);
            for (int64_t j = 0; j < nk; ++j) {
                const float32x4_t pw = vdupq_n_f32(pq[j]);
                for (int r = 0; r < 8; ++r) y[r] = vfmaq_f32(y[r], pw, vld1q_f32(v + j * vs + i0 + 4 * r));
            }
            for (int r = 0; r < 8; ++r) vst1q_f32(a + i0 + 4 * r, y[r]);
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
    for (; i + 8 <= n; i += 8) {
        const float16x8_t x = vreinterpretq_f16_u16(vld1q_u16(h + i));
        vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(x)));
        vst1q_f32(dst + i + 4, vcvt_high_f32_f16(x));
    }
    if (i < n) quant::kv_decode_row(type, h + i, dst + i, n - i);
}
void load_rows(uint32_t type, const uint8_t* const* rows, int64_t nr, float* dst, int64_t n) {
    for (int64_t j = 0; j < nr; ++j) load_row(type, rows[j], dst + j * n, n);
}
constexpr AttnKernels kNeon{Isa::neon, dot, scores, scale_axpy, pv_tile, load_row, load_rows};
}  // namespace
const AttnKernels* attn_kernels_neon() { return &kNeon; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const AttnKernels* attn_kernels_neon() { return nullptr; }
}  // namespace ikllm::cpu
#endif
