// Element-wise kernels (SiLU * u, softmax exponentials): the scalar reference against double
// precision exp, every SIMD table against the scalar one, on odd lengths, the clamped ranges, -inf
// (masked attention cells) and aliased outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/vec_kernels.h"

using namespace ikllm;
using cpu::Isa;

namespace {

std::vector<const cpu::VecKernels*> simd_tables() {
    std::vector<const cpu::VecKernels*> out;
    if (cpu::detected_isa() != Isa::scalar && cpu::vec_kernels_avx2()) out.push_back(cpu::vec_kernels_avx2());
    if (cpu::detected_isa() == Isa::avx512 && cpu::vec_kernels_avx512()) out.push_back(cpu::vec_kernels_avx512());
    if (cpu::detected_isa() == Isa::neon && cpu::vec_kernels_neon()) out.push_back(cpu::vec_kernels_neon());
    return out;
}

double silu_mul_exact(float g, float u) { return (double)g / (1.0 + std::exp(-(double)g)) * u; }

std::vector<float> test_values(int64_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> wide(-100.f, 100.f), narrow(-6.f, 6.f);
    std::vector<float> v((size_t)n);
    for (size_t i = 0; i < v.size(); ++i) v[i] = i % 3 == 0 ? wide(rng) : narrow(rng);
    return v;
}

TEST(VecKernels, ScalarSiluMulIsAccurate) {
    std::mt19937 rng(1);
    const auto g = test_values(4001, rng), u = test_values(4001, rng);
    std::vector<float> y(g.size());
    cpu::vec_kernels_scalar()->silu_mul(g.data(), u.data(), y.data(), (int64_t)g.size());
    for (size_t i = 0; i < g.size(); ++i) {
        const double want = silu_mul_exact(g[i], u[i]);
        EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-30) << "g=" << g[i] << " u=" << u[i];
    }
    // Far outside the clamp: SiLU(g) is 0 (negative) or g (positive) to float precision.
    const float big[4] = {-1000.f, -90.f, 90.f, 1000.f}, one[4] = {1.f, 1.f, 1.f, 1.f};
    float yb[4];
    cpu::vec_kernels_scalar()->silu_mul(big, one, yb, 4);
    EXPECT_NEAR(yb[0], 0.0f, 1e-30);
    EXPECT_NEAR(yb[1], 0.0f, 1e-30);
    EXPECT_EQ(yb[2], 90.f);
    EXPECT_EQ(yb[3], 1000.f);
}

TEST(VecKernels, ScalarExpShiftSumIsAccurate) {
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> d(-95.f, 0.f);
    std::vector<float> s(1001);
    for (auto& v : s) v = d(rng);
    s[7] = s[500] = -std::numeric_limits<float>::infinity();
    const float m = 0.5f;
    std::vector<float> e = s;
    const float sum = cpu::vec_kernels_scalar()->exp_shift_sum(e.data(), (int64_t)e.size(), m);
    double want_sum = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        const double want = std::isinf(s[i]) ? 0.0 : std::exp((double)s[i] - m);
        want_sum += want;
        if ((double)s[i] - m < -87.0) EXPECT_EQ(e[i], 0.0f) << s[i];  // below exp(-87) (1.6e-38): 0
        else EXPECT_NEAR(e[i], want, 3e-7 * want) << "s=" << s[i];
    }
    EXPECT_EQ(e[7], 0.0f);
    EXPECT_EQ(e[500], 0.0f);
    EXPECT_NEAR(sum, want_sum, 1e-5 * want_sum);
}

TEST(VecKernels, SimdMatchesScalar) {
    const auto tables = simd_tables();
    if (tables.empty()) GTEST_SKIP() << "no SIMD element-wise kernels on this CPU";
    const cpu::VecKernels* ref = cpu::vec_kernels_scalar();
    std::mt19937 rng(3);
    for (const cpu::VecKernels* k : tables)
        for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 64, 100, 1000}) {
            const auto g = test_values(n, rng), u = test_values(n, rng);
            std::vector<float> y(n), yr(n);
            k->silu_mul(g.data(), u.data(), y.data(), n);
            ref->silu_mul(g.data(), u.data(), yr.data(), n);
            // The scalar table fuses like the lanes and sums in the AVX2 table's order: same bits.
            const bool same_bits = (k->isa == cpu::Isa::avx2 || k->isa == cpu::Isa::neon);
            for (int64_t i = 0; i < n; ++i) {
                EXPECT_NEAR(y[i], yr[i], 4e-7 * std::fabs(yr[i]) + 1e-30) << cpu::isa_name(k->isa) << " n=" << n;
                if (same_bits) {
                    EXPECT_EQ(y[i], yr[i]) << "n=" << n << " i=" << i;
                }
            }
            // In place (the output aliasing the gate) gives the same values.
            std::vector<float> ga = g;
            k->silu_mul(ga.data(), u.data(), ga.data(), n);
            for (int64_t i = 0; i < n; ++i) EXPECT_EQ(ga[i], y[i]);

            std::vector<float> s(n);
            std::uniform_real_distribution<float> d(-100.f, 0.f);
            for (auto& v : s) v = d(rng);
            if (n > 2) s[n / 2] = -std::numeric_limits<float>::infinity();
            std::vector<float> e = s, er = s;
            const float sum = k->exp_shift_sum(e.data(), n, 0.25f), sum_r = ref->exp_shift_sum(er.data(), n, 0.25f);
            for (int64_t i = 0; i < n; ++i) {
                EXPECT_NEAR(e[i], er[i], 4e-7 * er[i] + 1e-37) << cpu::isa_name(k->isa);
                if (same_bits) {
                    EXPECT_EQ(e[i], er[i]) << "n=" << n << " i=" << i;
                }
            }
            if (same_bits) {
                EXPECT_EQ(sum, sum_r) << "n=" << n;
            }
            if (n > 2) {
                EXPECT_EQ(e[n / 2], 0.0f);
            }
            EXPECT_NEAR(sum, sum_r, 1e-6 * sum_r + 1e-37) << cpu::isa_name(k->isa) << " n=" << n;
        }
}

// RMSNorm: the scalar row against a long-double reference, and every SIMD table bit-identical to
// the scalar one (same eight double lanes), with and without gain, in place, on odd lengths; the
// vector add exact in every table.
TEST(VecKernels, RmsNormAndAddMatchReferenceBitForBitAcrossTables) {
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> d(-3.f, 3.f);
    auto tables = simd_tables();
    tables.insert(tables.begin(), cpu::vec_kernels_scalar());
    for (int64_t n : {1, 5, 8, 9, 16, 23, 64, 128, 2047, 2048, 7168}) {
        std::vector<float> x((size_t)n), g((size_t)n);
        for (auto& v : x) v = d(rng) * (n == 9 ? 1e-20f : 1.0f);  // tiny values: eps dominates
        for (auto& v : g) v = d(rng);
        const float eps = 1e-6f;
        long double ss = 0;
        for (float v : x) ss += (long double)v * v;
        const double s = 1.0 / std::sqrt((double)(ss / n) + eps);
        std::vector<float> ref((size_t)n), ref_ng((size_t)n);
        cpu::vec_kernels_scalar()->rms_norm(x.data(), g.data(), ref.data(), n, eps);
        cpu::vec_kernels_scalar()->rms_norm(x.data(), nullptr, ref_ng.data(), n, eps);
        for (int64_t i = 0; i < n; ++i) {
            EXPECT_NEAR(ref[i], x[i] * s * g[i], 2e-6 * std::fabs(x[i] * s * g[i]) + 1e-30) << "n=" << n;
            EXPECT_NEAR(ref_ng[i], x[i] * s, 2e-6 * std::fabs(x[i] * s) + 1e-30) << "n=" << n;
        }
        for (const cpu::VecKernels* k : tables) {
            std::vector<float> y((size_t)n, -1.f), yng((size_t)n, -1.f), inplace = x;
            k->rms_norm(x.data(), g.data(), y.data(), n, eps);
            k->rms_norm(x.data(), nullptr, yng.data(), n, eps);
            k->rms_norm(inplace.data(), g.data(), inplace.data(), n, eps);
            std::vector<float> sum((size_t)n), sum_inplace = x;
            k->add(x.data(), g.data(), sum.data(), n);
            k->add(sum_inplace.data(), g.data(), sum_inplace.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                ASSERT_EQ(sum[i], x[i] + g[i]) << cpu::isa_name(k->isa) << " add n=" << n << " i=" << i;
                ASSERT_EQ(sum_inplace[i], sum[i]) << cpu::isa_name(k->isa) << " add in place n=" << n;
                ASSERT_EQ(y[i], ref[i]) << cpu::isa_name(k->isa) << " n=" << n << " i=" << i;
                ASSERT_EQ(yng[i], ref_ng[i]) << cpu::isa_name(k->isa) << " n=" << n << " i=" << i;
                ASSERT_EQ(inplace[i], ref[i]) << cpu::isa_name(k->isa) << " n=" << n << " i=" << i;
            }
        }
    }
}

TEST(VecKernels, LookupFallsBackToWhatTheCpuHas) {
    EXPECT_EQ(cpu::vec_kernels(Isa::scalar).isa, Isa::scalar);
    const Isa hw = cpu::detected_isa();
    const Isa got = cpu::vec_kernels(Isa::avx512).isa;
    if (hw == Isa::avx512) EXPECT_EQ(got, Isa::avx512);
    else if (hw == Isa::avx2) EXPECT_EQ(got, Isa::avx2);
    else EXPECT_EQ(got, Isa::scalar);
    if (hw == Isa::neon && cpu::vec_kernels_neon()) {
        EXPECT_EQ(cpu::vec_kernels(Isa::neon).isa, Isa::neon);
    }
}

}  // namespace
