// Q4_K / Q5_K AVX2 prompt batches multiply rows in pairs (q45k_tile2_avx2: each activation chunk
// loaded once for two rows). Each (row, token) must come out bit for bit as the one-row tiles
// give it -- the numerics the reference's logits were matched with -- whatever the row range
// (pairs, a leftover single row) and the token count (tiles of 4, 2, 1; the fp16-rounded factors
// from kConvMinTokens tokens on).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"

using namespace ikllm;
using ikllm::cpu::Isa;

TEST(KQuantRowPairs, TwoRowTilesEqualOneRowTilesBitForBit) {
    if (cpu::detected_isa() == Isa::scalar) GTEST_SKIP() << "no AVX2 on this CPU";
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (uint32_t type : {quant::T_Q4_K, quant::T_Q5_K}) {
        const cpu::MatmulKernel* k = cpu::find_matmul_exact(type, Isa::avx2);
        ASSERT_NE(k, nullptr);
        const quant::TypeTraits& tt = *quant::find_type(type);
        for (int64_t ne0 : {256, 768}) {
            const int64_t rows = 7;
            const size_t rb = quant::row_bytes(tt, ne0);
            std::vector<uint8_t> w(rb * rows);
            std::vector<float> x((size_t)ne0);
            for (int64_t r = 0; r < rows; ++r) {
                for (auto& v : x) v = 0.02f * nd(rng);
                tt.quantize(x.data(), w.data() + rb * r, ne0, nullptr);
            }
            for (int64_t nt : {1, 2, 3, 4, 5, 6, 7, 9, 16, 31, 32, 33, 64}) {
                SCOPED_TRACE(std::string(tt.name) + " ne0=" + std::to_string(ne0) + " nt=" + std::to_string(nt));
                const size_t arb = k->act->row_bytes(ne0);
                std::vector<uint8_t> act(arb * nt);
                for (int64_t t = 0; t < nt; ++t) {
                    for (auto& v : x) v = nd(rng);
                    k->act->encode_row(x.data(), act.data() + arb * t, ne0);
                }
                // Rows 1..6 in one call (three pairs), and rows 0..6 (three pairs and a single row).
                const auto pairs = test::run_kernel_rows(*k, w, act, {ne0, rows, 1, nt});
                const auto odd = test::run_kernel_rows(*k, w, act, {ne0, rows, 0, nt});
                for (int64_t r = 0; r < rows; ++r) {
                    // One row per call: the one-row tiles.
                    std::vector<float> one((size_t)nt);
                    k->run(w.data() + rb * r, rb, ne0, 0, 1, act.data(), arb, nt, one.data(), 1);
                    for (int64_t t = 0; t < nt; ++t) {
                        const size_t i = (size_t)(t * (rows + 5) + r);
                        ASSERT_EQ(odd[i], one[(size_t)t]) << "row " << r << " token " << t;
                        if (r >= 1) {
                            ASSERT_EQ(pairs[i], one[(size_t)t]) << "row " << r << " token " << t;
                        }
                    }
                }
            }
        }
    }
}
