// The AVX-512 Q4_0_R8 / Q8_0_R8 kernels (kernels/legacy_r8_avx512.h). Below kSymBatchTokens tokens:
// against the AVX2 kernel of the same type (the same exact integer block sums; the float sums of even and odd
// blocks are kept apart, so within rounding of the products' magnitude), and batch-invariant:
// every token of a call gives the bits it gives alone. From kSymBatchTokens on: the AVX-512 plain
// Q4_0 kernel on the same weights before repacking, bit for bit (the same 16-row panels). Odd
// group counts, row sub-ranges, strided outputs, odd block counts, blocks past the last group of 4
// and token counts around every tile size. The accuracy of both references against exact
// products is checked by QuantGtiKernel / QuantCoreKernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/repack.h"
#include "quant/type_traits.h"
#include "kernel_test_util.h"

using namespace ikllm;
using namespace ikllm::quant;
using ikllm::cpu::Isa;
using Case = ikllm::test::KernelCase;
using ikllm::test::run_kernel_rows;

class LegacyR8Avx512 : public ::testing::TestWithParam<std::pair<uint32_t, uint32_t>> {};

TEST_P(LegacyR8Avx512, MatchesAvx2KernelAndPlainPanels) {
    if (cpu::detected_isa() != Isa::avx512) GTEST_SKIP() << "this CPU has no AVX-512";
    const auto [base, packed] = GetParam();
    const cpu::MatmulKernel* r8 = cpu::find_matmul_exact(packed, Isa::avx512);
    const cpu::MatmulKernel* r8_avx2 = cpu::find_matmul_exact(packed, Isa::avx2);
    const cpu::MatmulKernel* plain = cpu::find_matmul_exact(base, Isa::avx512);
    ASSERT_TRUE(r8 && r8_avx2 && plain);
    ASSERT_EQ(r8->act->id, plain->act->id);
    ASSERT_EQ(r8->act->id, r8_avx2->act->id);
    const TypeTraits* bt = find_type(base);
    std::mt19937 rng(77);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<Case> cases;
    for (int64_t ne0 : {32, 224, 256, 1056, 1088})  // 1, 7, 8, 33, 34 blocks
        for (auto [rows, r0] : {std::pair<int64_t, int64_t>{8, 0}, {16, 0}, {24, 8}, {40, 0}, {56, 16}})
            for (int64_t nt : {1, 2, 3, 4, 5, 9, 31, 32, 33, 45}) cases.push_back({ne0, rows, r0, nt});
    int small = 0, batches = 0;
    for (const Case& c : cases) {
        SCOPED_TRACE("ne0=" + std::to_string(c.ne0) + " rows=" + std::to_string(c.rows) + " r0=" + std::to_string(c.r0) +
                     " nt=" + std::to_string(c.nt));
        const size_t wrb = row_bytes(*bt, c.ne0);
        std::vector<float> x((size_t)(c.rows * c.ne0));
        for (auto& v : x) v = 0.02f * nd(rng);
        std::vector<uint8_t> w(wrb * (size_t)c.rows), wr(w.size());
        for (int64_t r = 0; r < c.rows; ++r) bt->quantize(x.data() + r * c.ne0, w.data() + wrb * r, c.ne0, nullptr);
        ASSERT_TRUE(repack_rows_to(base, packed, w.data(), wr.data(), c.ne0, c.rows));
        const size_t arb = r8->act->row_bytes(c.ne0);
        std::vector<uint8_t> act(arb * (size_t)c.nt + 64);
        std::vector<float> a((size_t)c.ne0);
        for (int64_t t = 0; t < c.nt; ++t) {
            for (auto& v : a) v = nd(rng);
            r8->act->encode_row(a.data(), act.data() + arb * t, c.ne0);
        }
        const std::vector<float> got = run_kernel_rows(*r8, wr, act, c);
        if (c.nt >= 32) {  // kSymBatchTokens: the panel GEMM
            const std::vector<float> want = run_kernel_rows(*plain, w, act, c);
            ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "differs from the plain type";
            ++batches;
            continue;
        }
        const std::vector<float> want = run_kernel_rows(*r8_avx2, wr, act, c);
        std::vector<float> wf((size_t)c.ne0), af((size_t)c.ne0);
        const int64_t ys = c.rows + 5;
        for (int64_t t = 0; t < c.nt; ++t) {
            act_q8_2_x4_decode_row(act.data() + arb * t, af.data(), c.ne0);
            Case one = c;
            one.nt = 1;
            std::vector<uint8_t> act1(act.begin() + (ptrdiff_t)(arb * t), act.begin() + (ptrdiff_t)(arb * (t + 1)));
            act1.resize(arb + 64);
            const std::vector<float> alone = run_kernel_rows(*r8, wr, act1, one);
            for (int64_t r = c.r0; r < c.rows; ++r) {
                bt->dequant(w.data() + wrb * r, wf.data(), c.ne0);
                double mag = 0;
                for (int64_t i = 0; i < c.ne0; ++i) mag += std::fabs((double)wf[i] * af[i]);
                const float g = got[(size_t)(t * ys + r)];
                ASSERT_NEAR(g, want[(size_t)(t * ys + r)], 1e-6 * mag + 1e-30) << "row " << r << " token " << t;
                ASSERT_EQ(std::memcmp(&g, &alone[(size_t)r], 4), 0) << "row " << r << " token " << t << ": not batch-invariant";
            }
        }
        ++small;
    }
    EXPECT_GT(small, 0);
    EXPECT_GT(batches, 0);
}

INSTANTIATE_TEST_SUITE_P(Types, LegacyR8Avx512,
                         ::testing::Values(std::pair<uint32_t, uint32_t>{T_Q4_0, T_Q4_0_R8},
                                           std::pair<uint32_t, uint32_t>{T_Q8_0, T_Q8_0_R8}),
                         [](const auto& info) { return std::string(find_type(info.param.second)->name); });
