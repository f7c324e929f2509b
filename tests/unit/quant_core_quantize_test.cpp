// Quantize -> dequantize round trips of the float and 32-block types: per-element error bounds that
// follow from each format's definition (quant-formats.md §4-§5), special rows (zeros, constants,
// tiny and huge values), and the effect of an importance matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/legacy_blocks.h"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v((size_t)n);
    for (auto& x : v) x = nd(rng);
    return v;
}

std::vector<float> round_trip(uint32_t type, const std::vector<float>& x, const float* imatrix = nullptr) {
    const TypeTraits* t = find_type(type);
    const int64_t n = (int64_t)x.size();
    std::vector<uint8_t> q(row_bytes(*t, n));
    std::vector<float> y((size_t)n);
    t->quantize(x.data(), q.data(), n, imatrix);
    t->dequant(q.data(), y.data(), n);
    return y;
}

float block_amax(const std::vector<float>& x, int64_t ib, int n = 32) {
    float m = 0;
    for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(x[ib * n + i]));
    return m;
}

}  // namespace

TEST(QuantCoreQuantize, FloatTypes) {
    std::vector<float> x = gaussian(1000, 1, 3.0f);
    x[0] = 1e5f;      // beyond fp16 range -> inf
    x[1] = 1e-6f;     // fp16 subnormal
    x[2] = -0.0f;
    x[3] = 3e38f;
    EXPECT_EQ(round_trip(T_F32, x), x);
    EXPECT_EQ(round_trip(T_F64, x), x);
    const std::vector<float> h = round_trip(T_F16, x), b = round_trip(T_BF16, x);
    for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(f32_to_bits(h[i]), f32_to_bits(f16_to_f32(f32_to_f16(x[i])))) << i;
        EXPECT_EQ(f32_to_bits(b[i]), f32_to_bits(bf16_to_f32(f32_to_bf16(x[i])))) << i;
        if (std::fabs(x[i]) < 65504 && std::fabs(x[i]) > 6.2e-5f) {
            EXPECT_LE(std::fabs(h[i] - x[i]), std::fabs(x[i]) * 0x1p-11f);
        }
        EXPECT_LE(std::fabs(b[i] - x[i]), std::fabs(x[i]) * 0x1p-8f);
    }
    EXPECT_TRUE(std::isinf(h[0]));
    EXPECT_TRUE(std::signbit(h[2]) && std::signbit(b[2]));
}

// Uniform types: the reference rules put the extreme value on an end level, so every value lies
// within one step (symmetric: the far side has one level less) or half a step (affine) of its
// level; fp16 rounding of d adds at most 2^-11 relative per level.
TEST(QuantCoreQuantize, UniformTypesErrorBounds) {
    struct Case { uint32_t type; float levels; float max_steps; };
    for (const Case& c : {Case{T_Q4_0, 8, 1.0f}, Case{T_Q5_0, 16, 1.0f}, Case{T_Q8_0, 127, 0.5f},
                          Case{T_Q4_1, 15, 0.5f}, Case{T_Q5_1, 31, 0.5f}, Case{T_Q6_0, 32, 1.0f}}) {
        SCOPED_TRACE(find_type(c.type)->name);
        const std::vector<float> x = gaussian(4096, c.type);
        const std::vector<float> y = round_trip(c.type, x);
        for (int64_t ib = 0; ib < 4096 / 32; ++ib) {
            float lo = x[ib * 32], hi = lo;
            for (int i = 0; i < 32; ++i) lo = std::min(lo, x[ib * 32 + i]), hi = std::max(hi, x[ib * 32 + i]);
            const bool affine = c.type == T_Q4_1 || c.type == T_Q5_1;
            const float step = affine ? (hi - lo) / c.levels : block_amax(x, ib) / c.levels;
            for (int i = 0; i < 32; ++i) {
                const float e = std::fabs(y[ib * 32 + i] - x[ib * 32 + i]);
                EXPECT_LE(e, step * (c.max_steps * 1.001f + 2 * c.levels * 0x1p-11f)) << "block " << ib << " i " << i;
            }
        }
    }
}

TEST(QuantCoreQuantize, NonUniformTypesStayOnTheirLevels) {
    const std::vector<float> x = gaussian(2048, 77);
    // IQ4_NL: every value is d * kvalues_iq4nl[k]; relative rms error well below a uniform 4-bit grid's
    const std::vector<float> y = round_trip(T_IQ4_NL, x);
    double e2 = 0, x2 = 0;
    for (size_t i = 0; i < x.size(); ++i) e2 += (y[i] - x[i]) * (y[i] - x[i]), x2 += x[i] * x[i];
    const double rel_nl = std::sqrt(e2 / x2);
    const std::vector<float> y4 = round_trip(T_Q4_0, x);
    e2 = 0;
    for (size_t i = 0; i < x.size(); ++i) e2 += (y4[i] - x[i]) * (y4[i] - x[i]);
    EXPECT_LT(rel_nl, std::sqrt(e2 / x2)) << "IQ4_NL should beat Q4_0's plain rounding";
    // MXFP4: values are 2^(e-128) * doubled E2M1 values; the largest magnitude lands within 1/4 of
    // a power-of-two step of its level
    const std::vector<float> m = round_trip(T_MXFP4, x);
    for (int64_t ib = 0; ib < 2048 / 32; ++ib) {
        const float amax = block_amax(x, ib);
        for (int i = 0; i < 32; ++i) EXPECT_LE(std::fabs(m[ib * 32 + i] - x[ib * 32 + i]), amax * 0.26f);
    }
    // Q1_0_G128: sign kept, magnitude = one scale per 128
    const std::vector<float> b = round_trip(T_Q1_0_G128, x);
    for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(std::signbit(b[i]), std::signbit(x[i])) << i;
        EXPECT_EQ(std::fabs(b[i]), std::fabs(b[i / 128 * 128]));
    }
}

TEST(QuantCoreQuantize, SpecialRows) {
    const uint32_t types[] = {T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q6_0, T_IQ4_NL, T_MXFP4, T_Q1_0_G128};
    for (uint32_t type : types) {
        SCOPED_TRACE(find_type(type)->name);
        const std::vector<float> zeros(256, 0.0f);
        for (float v : round_trip(type, zeros)) EXPECT_EQ(std::fabs(v), 0.0f);
        std::vector<float> imat(256, 1.0f);
        for (float v : round_trip(type, zeros, imat.data())) EXPECT_EQ(std::fabs(v), 0.0f);
        // constant row: reproduced to fp16 precision (Q1_0_G128 exactly as well)
        const std::vector<float> c(256, 0.75f);
        for (float v : round_trip(type, c)) EXPECT_NEAR(v, 0.75f, 0.75f * 0x1p-10f);
        // tiny and huge magnitudes: no NaN/inf, finite results
        for (float scale : {1e-30f, 1e-3f, 1e3f}) {
            const std::vector<float> x = gaussian(256, 5, scale);
            for (float v : round_trip(type, x)) EXPECT_TRUE(std::isfinite(v));
        }
    }
}

// With an importance matrix the weighted error must not be worse than without it, and weights
// given high importance must come out more accurate.
TEST(QuantCoreQuantize, ImatrixReducesWeightedError) {
    const uint32_t types[] = {T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q6_0, T_IQ4_NL, T_MXFP4};
    const int64_t n = 4096;
    const std::vector<float> x = gaussian(n, 3);
    std::vector<float> imat((size_t)n);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (auto& w : imat) w = u(rng) < 0.1f ? 50.0f : 0.1f;  // a few very important columns
    for (uint32_t type : types) {
        SCOPED_TRACE(find_type(type)->name);
        const std::vector<float> plain = round_trip(type, x), guided = round_trip(type, x, imat.data());
        double ep = 0, eg = 0;
        for (int64_t i = 0; i < n; ++i) {
            ep += imat[i] * (plain[i] - x[i]) * (plain[i] - x[i]);
            eg += imat[i] * (guided[i] - x[i]) * (guided[i] - x[i]);
        }
        EXPECT_LT(eg, 0.95 * ep);
    }
}
