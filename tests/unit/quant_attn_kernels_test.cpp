// Attention primitives: every compiled ISA table against the scalar reference (odd lengths,
// every cache element type); the AVX2 table bit for bit (the scalar one follows its order, so
// a CPU without AVX2 gets AVX2's results).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
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
    if (cpu::detected_isa() == cpu::Isa::neon && cpu::attn_kernels_neon()) tables.push_back(cpu::attn_kernels_neon());
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
            // The scalar table runs the AVX2 table's operations in its order: the same bits.
            const bool same_bits = (k->isa == cpu::Isa::avx2 || k->isa == cpu::Isa::neon);
            if (same_bits) {
                EXPECT_EQ(k->dot(a.data(), b.data(), n), ref->dot(a.data(), b.data(), n)) << "n=" << n;
            }
            y2 = y;
            k->scale_axpy(y.data(), 0.75f, -1.5f, a.data(), n);
            ref->scale_axpy(y2.data(), 0.75f, -1.5f, a.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                ASSERT_NEAR(y[i], y2[i], 1e-6f * (1 + std::fabs(y2[i])));
                if (same_bits) {
                    ASSERT_EQ(y[i], y2[i]) << "scale_axpy n=" << n << " i=" << i;
                }
            }
            for (uint32_t t : {quant::T_F32, quant::T_F16, quant::T_BF16, quant::T_Q8_0}) {
                if (!quant::kv_row_ok(t, n)) continue;
                std::vector<uint8_t> row(quant::kv_row_bytes(t, n));
                quant::kv_encode_row(t, a.data(), row.data(), n);
                std::vector<float> d1(n), d2(n);
                k->load_row(t, row.data(), d1.data(), n);
                ref->load_row(t, row.data(), d2.data(), n);
                for (int64_t i = 0; i < n; ++i) ASSERT_EQ(d1[i], d2[i]) << quant::kv_type_name(t) << " " << i;
                // Three rows at once (the second one twice), as load_row gives each.
                std::vector<uint8_t> row2(row.size());
                quant::kv_encode_row(t, b.data(), row2.data(), n);
                const uint8_t* rows[3] = {row.data(), row2.data(), row2.data()};
                std::vector<float> d3(3 * n, -1.0f);
                k->load_rows(t, rows, 3, d3.data(), n);
                ref->load_row(t, row2.data(), d2.data(), n);
                for (int64_t i = 0; i < n; ++i) {
                    ASSERT_EQ(d3[i], d1[i]) << "load_rows " << quant::kv_type_name(t) << " " << i;
                    ASSERT_EQ(d3[n + i], d2[i]) << "load_rows " << quant::kv_type_name(t) << " " << i;
                    ASSERT_EQ(d3[2 * n + i], d2[i]) << "load_rows " << quant::kv_type_name(t) << " " << i;
                }
            }
        }
}

// The blocked forms the attention op uses: scores equals dot() calls of the same table bit for
// bit, whatever the numbers of queries and keys (tails of the 16-key blocks) (the op's results must not depend on how queries are grouped), and pv_tile equals the
// per-key scale_axpy loop of the same table bit for bit; both are checked against the scalar
// table too (bit for bit for AVX2, whose operations the scalar table follows).
TEST(AttnKernels, BlockedFormsMatchPerKeyForms) {
    std::vector<const cpu::AttnKernels*> tables{cpu::attn_kernels_scalar()};
    if (cpu::detected_isa() != cpu::Isa::scalar && cpu::attn_kernels_avx2()) tables.push_back(cpu::attn_kernels_avx2());
    if (cpu::detected_isa() == cpu::Isa::avx512 && cpu::attn_kernels_avx512()) tables.push_back(cpu::attn_kernels_avx512());
    if (cpu::detected_isa() == cpu::Isa::neon && cpu::attn_kernels_neon()) tables.push_back(cpu::attn_kernels_neon());
    const cpu::AttnKernels* ref = cpu::attn_kernels_scalar();
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (const cpu::AttnKernels* k : tables)
        for (int64_t n : {1, 16, 31, 64, 65, 128, 200, 300, 512, 576}) {
            SCOPED_TRACE(std::string(cpu::isa_name(k->isa)) + " n=" + std::to_string(n));
            for (int nq : {1, 3, 4, 16}) {
                for (int64_t nk : {1, 5, 16, 17, 32}) {
                    std::vector<float> qs(nq * n), kt(nk * n), s(nq * 40, -7.0f);
                    for (auto& v : qs) v = nd(rng);
                    for (auto& v : kt) v = nd(rng);
                    std::vector<const float*> qa(nq);
                    for (int q = 0; q < nq; ++q) qa[q] = &qs[q * n];
                    const float scale = 0.125f;
                    k->scores(qa.data(), nq, kt.data(), nk, n, scale, s.data(), 40);
                    for (int q = 0; q < nq; ++q) {
                        for (int64_t j = 0; j < nk; ++j) {
                            const float d = k->dot(qa[q], &kt[j * n], n);
                            ASSERT_EQ(s[q * 40 + j], d * scale) << "scores q=" << q << " j=" << j << " nq=" << nq << " nk=" << nk;
                            EXPECT_NEAR(d, ref->dot(qa[q], &kt[j * n], n), 1e-4 * std::sqrt((double)n));
                        }
                        for (int64_t j = nk; j < 40; ++j) ASSERT_EQ(s[q * 40 + j], -7.0f) << "written past the tile";
                    }
                }
            }
            for (int nq : {1, 2, 3, 4, 5, 9}) {
                const int64_t nk = 13, ps = 16, vs = nq % 2 ? n + 64 : n;  // V rows inside longer rows (MLA)
                std::vector<float> acc(nq * n), acc2, v(nk * vs), p(nq * ps, 0.0f), rescale(nq);
                for (auto& x : acc) x = nd(rng);
                for (auto& x : v) x = nd(rng);
                for (int q = 0; q < nq; ++q) {
                    rescale[q] = q == 1 ? 1.0f : std::exp(-std::fabs(nd(rng)));
                    for (int64_t j = 0; j < nk; ++j) p[q * ps + j] = (j + q) % 5 == 0 ? 0.0f : std::exp(-std::fabs(nd(rng)));
                }
                acc2 = acc;
                std::vector<float> acc3 = acc;
                k->pv_tile(acc.data(), n, rescale.data(), p.data(), ps, nq, v.data(), vs, nk, n);
                ref->pv_tile(acc3.data(), n, rescale.data(), p.data(), ps, nq, v.data(), vs, nk, n);
                for (int q = 0; q < nq; ++q) {
                    float* y = acc2.data() + q * n;
                    bool first = true;
                    for (int64_t j = 0; j < nk; ++j) {
                        if (p[q * ps + j] == 0.0f && !first) continue;
                        k->scale_axpy(y, first ? rescale[q] : 1.0f, p[q * ps + j], v.data() + j * vs, n);
                        first = false;
                    }
                }
                for (int64_t i = 0; i < nq * n; ++i) {
                    ASSERT_EQ(acc[i], acc2[i]) << "pv_tile vs scale_axpy loop, nq=" << nq << " i=" << i;
                    ASSERT_NEAR(acc[i], acc3[i], 1e-5f * (1 + std::fabs(acc3[i]))) << "vs scalar table";
                    if ((k->isa == cpu::Isa::avx2 || k->isa == cpu::Isa::neon)) {
                        ASSERT_EQ(acc[i], acc3[i]) << "vs scalar table, nq=" << nq << " i=" << i;
                    }
                }
            }
        }
}
