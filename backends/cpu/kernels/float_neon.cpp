// NEON kernels for float weights (F32, F16 with F32 activations, BF16 with bf16 activations):
// float_avx2.cpp's tiles (up to 4 weight rows x 3 tokens) and its summation order -- 8 lanes
// kept as two 4-lane registers, reduced as the AVX2 kernel reduces a 256-bit register -- so an
// ARM CPU sums like an AVX2 one.
#include "kernels/matmul.h"
#include "quant/type_traits.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/fp16.h"
#include "kernels/float_tile_drive.h"

namespace ikllm::cpu {
namespace {

struct F8 {
    float32x4_t lo, hi;
};

struct LoadF32 {
    static constexpr int kBytes = 4;
    static F8 load(const uint8_t* p) {
        const float* f = reinterpret_cast<const float*>(p);
        return {vld1q_f32(f), vld1q_f32(f + 4)};
    }
    static float one(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }
};
struct LoadF16 {
    static constexpr int kBytes = 2;
    static F8 load(const uint8_t* p) {
        const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p)));
        return {vcvt_f32_f16(vget_low_f16(h)), vcvt_high_f32_f16(h)};
    }
    static float one(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return f16_to_f32(h); }
};
struct LoadBF16 {
    static constexpr int kBytes = 2;
    static F8 load(const uint8_t* p) {
        const uint16x8_t u = vld1q_u16(reinterpret_cast<const uint16_t*>(p));
        return {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(u), 16)), vreinterpretq_f32_u32(vshll_high_n_u16(u, 16))};
    }
    static float one(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return bf16_to_f32(h); }
};

// The AVX2 reduction of 8 lanes: halves added, then (s0 + s2) + (s1 + s3).
inline float hsum(F8 v) {
    const float32x4_t s = vaddq_f32(v.lo, v.hi);
    const float32x2_t p = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    return vget_lane_f32(p, 0) + vget_lane_f32(p, 1);
}

template <class WL, class XL, int R, int T>
void tile(const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, int64_t ne0, float* y, int64_t ys, bool add) {
    F8 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    const int64_t n8 = ne0 & ~(int64_t)7;
    for (int64_t k = 0; k < n8; k += 8) {
        F8 xv[T];
        for (int t = 0; t < T; ++t) xv[t] = XL::load(x + t * xrb + k * XL::kBytes);
        for (int r = 0; r < R; ++r) {
            const F8 wv = WL::load(w + r * wrb + k * WL::kBytes);
            for (int t = 0; t < T; ++t) {
                acc[r][t].lo = vfmaq_f32(acc[r][t].lo, wv.lo, xv[t].lo);
                acc[r][t].hi = vfmaq_f32(acc[r][t].hi, wv.hi, xv[t].hi);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            float s = hsum(acc[r][t]);
            for (int64_t k = n8; k < ne0; ++k)
                s = std::fma(WL::one(w + r * wrb + k * WL::kBytes), XL::one(x + t * xrb + k * XL::kBytes), s);
            y[t * ys + r] = add ? y[t * ys + r] + s : s;
        }
}

template <class WL, class XL, int RM, int TM, size_t... I>
constexpr std::array<FloatTileFn, RM * TM> make_tiles(std::index_sequence<I...>) {
    return {&tile<WL, XL, (int)(I / TM) + 1, (int)(I % TM) + 1>...};
}

template <class WL, class XL>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    constexpr int RM = 4, TM = 3;
    static constexpr std::array<FloatTileFn, RM * TM> tiles = make_tiles<WL, XL, RM, TM>(std::make_index_sequence<RM * TM>{});
    float_tiles_drive<RM, TM>(tiles.data(), WL::kBytes, XL::kBytes, w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

}  // namespace

KernelTable float_kernels_neon() {
    static const MatmulKernel kKernels[] = {
        {quant::T_F32, Isa::neon, act_format_f32(), run<LoadF32, LoadF32>},
        {quant::T_F16, Isa::neon, act_format_f32(), run<LoadF16, LoadF32>},
        {quant::T_BF16, Isa::neon, act_format_bf16(), run<LoadBF16, LoadBF16>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable float_kernels_neon() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
