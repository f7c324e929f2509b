// Attention primitives: every compiled ISA table against the scalar reference (odd lengths,
// every cache element type).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/attn_kernels.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

using namespace ikllm;

TEST(AttnKernels, SimdMatchesScalar) {
    const cpu::AttnKernels* ref = cpu::attn_kernels_scalar();
    std::vector<const cpu::AttnKernels*> tables;
    if (cpu::detected_isa() != cpu::Isa::scalar && cpu::attn_kernels_avx2()) tables.push_back(cpu::attn_kernels_avx2());
    if (cpu::detected_isa() == cpu::Isa::avx512 && cpu::attn_kernels_avx512()) tables.push_back(cpu::attn_kernels_avx512());
    if (tables.empty()) GTEST_SKIP() << "no SIMD attention kernels on this CPU";
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (const cpu::AttnKernels* k : tables)
        for (int64_t n : {1, 7, 16, 31, 64, 65, 128, 576, 1000}) {
            std::vector<float> a(n), b(n), y(n), y2;
            for (auto& v : a) v = nd(rng);
            for (auto& v : b) v = nd(rng);
            for (auto& v : y) v = nd(rng);
            double exact = 0, mag = 0;
            for (int64_t i = 0; i < n; ++i) {
                exact += (double)a[i] * b[i];
                mag += std::fabs((double)a[i] * b[i]);
            }
            EXPECT_NEAR(k->dot(a.data(), b.data(), n), ref->dot(a.data(), b.data(), n), 1e-5 * mag + 1e-6)
                << cpu::isa_name(k->isa) << " n=" << n;
            EXPECT_NEAR(k->dot(a.data(), b.data(), n), exact, 1e-5 * mag + 1e-6);
            y2 = y;
            k->scale_axpy(y.data(), 0.75f, -1.5f, a.data(), n);
            ref->scale_axpy(y2.data(), 0.75f, -1.5f, a.data(), n);
            for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], y2[i], 1e-6f * (1 + std::fabs(y2[i])));
            for (uint32_t t : {quant::T_F32, quant::T_F16, quant::T_BF16, quant::T_Q8_0}) {
                if (!quant::kv_row_ok(t, n)) continue;
                std::vector<uint8_t> row(quant::kv_row_bytes(t, n));
                quant::kv_encode_row(t, a.data(), row.data(), n);
                std::vector<float> d1(n), d2(n);
                k->load_row(t, row.data(), d1.data(), n);
                ref->load_row(t, row.data(), d2.data(), n);
                for (int64_t i = 0; i < n; ++i) ASSERT_EQ(d1[i], d2[i]) << quant::kv_type_name(t) << " " << i;
            }
        }
}
