// Repacking plain rows into row-interleaved groups is lossless: on random block bytes (every
// bit pattern is a valid block), dequantizing the repacked group gives the plain type's values
// bit for bit (docs: quant-formats.md §12). Exceptions: the sign of zero (and inf/NaN arithmetic)
// of Q5_0_R4 / Q6_0_R4, whose decoder computes (d*q) + (-c*d) (§13.2), and the sign of NaN when a
// random scale is NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "quant/repack.h"
#include "quant/unpack_interleaved.h"
#include "quant_gti_support.h"

using namespace ikllm;
using namespace ikllm::test;
using namespace ikllm::quant;

namespace {

const uint32_t kInterleaved[] = {
    T_Q4_0_R8,   T_Q8_0_R8,   T_MXFP4_R8,   T_IQ4_NL_R4,  T_Q5_0_R4,    T_Q6_0_R4,   T_Q4_0_4X4,  T_Q4_0_4X8,
    T_Q4_0_8X8,  T_Q2_K_R4,   T_Q3_K_R4,    T_Q4_K_R4,    T_Q5_K_R4,    T_Q6_K_R4,   T_IQ4_XS_R8, T_IQ2_K_R4,
    T_IQ3_K_R4,  T_IQ4_K_R4,  T_IQ5_K_R4,   T_IQ4_KS_R4,  T_IQ5_KS_R4,  T_IQ2_XXS_R4, T_IQ2_XS_R4, T_IQ2_S_R4,
    T_IQ3_XXS_R4, T_IQ3_S_R4, T_IQ2_BN_R4,  T_BF16_R16,   T_Q8_KV_R8,
};

bool values_match(uint32_t type, float base, float rep) {
    if (gti_bits(base) == gti_bits(rep)) return true;
    if (std::isnan(base) && std::isnan(rep)) return true;  // NaN scale: sign/payload may differ
    if (type == T_Q5_0_R4 || type == T_Q6_0_R4) return (base == 0 && rep == 0) || !std::isfinite(base);
    return false;
}

class QuantGtiRepack : public ::testing::TestWithParam<uint32_t> {};

}  // namespace

TEST_P(QuantGtiRepack, DequantOfRepackEqualsPlainRows) {
    const uint32_t to = GetParam();
    const uint32_t from = repack_base(to);
    ASSERT_NE(from, 0u);
    const TypeTraits* tf = find_type(from);
    const TypeTraits* tt = find_type(to);
    ASSERT_TRUE(tf && tt);
    if (!tf->dequant) GTEST_SKIP() << "base type " << tf->name << " has no decoder yet";
    ASSERT_NE(tt->dequant, nullptr);
    std::mt19937 rng(1234 + to);
    const int64_t N = tt->interleave;
    for (int64_t ne0 : {256, 512, 768}) {
        for (int64_t groups : {1, 3}) {
            SCOPED_TRACE(std::string(tt->name) + " ne0=" + std::to_string(ne0));
            const int64_t nrows = N * groups;
            const size_t rb_in = row_bytes(*tf, ne0), rb_out = row_bytes(*tt, ne0);
            std::vector<uint8_t> src(rb_in * (size_t)nrows), dst(rb_out * (size_t)nrows);
            for (auto& b : src) b = (uint8_t)rng();
            uint32_t got = 0;
            if (repack_target(from) == to) {
                ASSERT_TRUE(repack_rows(from, &got, src.data(), dst.data(), ne0, nrows));
                EXPECT_EQ(got, to);
            } else {
                ASSERT_TRUE(repack_rows_to(from, to, src.data(), dst.data(), ne0, nrows));
            }
            std::vector<float> plain((size_t)(nrows * ne0)), rep((size_t)(nrows * ne0));
            for (int64_t r = 0; r < nrows; ++r) tf->dequant(src.data() + rb_in * (size_t)r, plain.data() + r * ne0, ne0);
            for (int64_t g = 0; g < groups; ++g)
                tt->dequant(dst.data() + rb_out * (size_t)(g * N), rep.data() + g * N * ne0, ne0);
            int bad = 0;
            for (size_t i = 0; i < plain.size(); ++i)
                if (!values_match(to, plain[i], rep[i]) && bad++ < 5)
                    ADD_FAILURE() << "row " << i / ne0 << " col " << i % ne0 << ": plain " << plain[i] << " repacked "
                                  << rep[i];
            ASSERT_EQ(bad, 0);
        }
    }
    // A row count that is not a multiple of the interleave has no repacked form.
    if (N > 1) {
        std::vector<uint8_t> src(row_bytes(*tf, 256) * (size_t)(N + 1)), dst(src.size() * 2);
        EXPECT_FALSE(repack_rows_to(from, to, src.data(), dst.data(), 256, N + 1));
    }
}

// The quantizer of an interleaved type is the base quantizer followed by the repack.
TEST_P(QuantGtiRepack, QuantizerEqualsBaseQuantizerThenRepack) {
    const uint32_t to = GetParam();
    const TypeTraits* tf = find_type(repack_base(to));
    const TypeTraits* tt = find_type(to);
    if (to == T_BF16_R16) GTEST_SKIP() << "BF16_R16 truncates (own quantizer, checked against the reference)";
    if (!tf->quantize || !tf->dequant) GTEST_SKIP() << "base type " << tf->name << " has no quantizer yet";
    ASSERT_NE(tt->quantize, nullptr);
    std::mt19937 rng(99 + to);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t ne0 = 512, N = tt->interleave;
    std::vector<float> x((size_t)(N * ne0));
    for (auto& v : x) v = nd(rng);
    std::vector<uint8_t> q(row_bytes(*tt, ne0) * (size_t)N), qb(row_bytes(*tf, ne0) * (size_t)N);
    tt->quantize(x.data(), q.data(), ne0, nullptr);
    for (int64_t r = 0; r < N; ++r)
        tf->quantize(x.data() + r * ne0, qb.data() + row_bytes(*tf, ne0) * (size_t)r, ne0, nullptr);
    std::vector<float> a(x.size()), b(x.size());
    tt->dequant(q.data(), a.data(), ne0);
    for (int64_t r = 0; r < N; ++r) tf->dequant(qb.data() + row_bytes(*tf, ne0) * (size_t)r, b.data() + r * ne0, ne0);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(values_match(to, b[i], a[i])) << tt->name << " at " << i;
}

INSTANTIATE_TEST_SUITE_P(All, QuantGtiRepack, ::testing::ValuesIn(kInterleaved),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                             return std::string(find_type(info.param)->name);
                         });

// Interleaved rows back to the plain rows (quant/unpack_interleaved.h, derived from the repack
// by probing): byte for byte on random rows, and through another form of the same base.
TEST_P(QuantGtiRepack, UnpackGivesThePlainRowsBack) {
    const uint32_t it = GetParam();
    if (!unpack_supported(it)) GTEST_SKIP() << find_type(it)->name << ": its repack is not a bit permutation";
    const uint32_t base = repack_base(it);
    const TypeTraits& bt = *find_type(base);
    const TypeTraits& tt = *find_type(it);
    std::mt19937 rng(99 + it);
    const int64_t N = tt.interleave;
    for (int64_t ne0 : {256, 768}) {
        const int64_t nrows = 2 * std::max<int64_t>(N, 8);
        const size_t rb = row_bytes(bt, ne0);
        std::vector<uint8_t> src(rb * (size_t)nrows), packed(row_bytes(tt, ne0) * (size_t)nrows), back(src.size());
        for (auto& b : src) b = (uint8_t)rng();
        ASSERT_TRUE(repack_rows_to(base, it, src.data(), packed.data(), ne0, nrows));
        ASSERT_TRUE(unpack_rows(it, packed.data(), back.data(), ne0, nrows));
        ASSERT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0) << tt.name << " ne0 " << ne0;
        std::fill(back.begin(), back.end(), 0);
        ASSERT_TRUE(convert_rows(it, base, packed.data(), back.data(), ne0, nrows));
        ASSERT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0);
        // To every other form of the base: the same bytes as repacking the plain rows.
        for (uint32_t other : kInterleaved) {
            if (other == it || repack_base(other) != base || nrows % convert_group_rows(it, other)) continue;
            std::vector<uint8_t> want(row_bytes(*find_type(other), ne0) * (size_t)nrows), got(want.size());
            ASSERT_TRUE(repack_rows_to(base, other, src.data(), want.data(), ne0, nrows));
            ASSERT_TRUE(convert_rows(it, other, packed.data(), got.data(), ne0, nrows)) << find_type(other)->name;
            ASSERT_EQ(want, got) << tt.name << " -> " << find_type(other)->name;
        }
    }
    std::vector<uint8_t> junk(row_bytes(tt, 256) * (size_t)(N + 1)), out(junk.size());
    if (N > 1) {
        EXPECT_FALSE(unpack_rows(it, junk.data(), out.data(), 256, N + 1));  // not whole groups
    }
}

// The file forms this CPU backend converts back (backends/cpu: slower than their base here)
// must be covered, and the forms with per-row metadata; types whose repack transforms values are not.
TEST(QuantGtiUnpack, CoversTheKQuantAndLegacyForms) {
    for (uint32_t t : {T_Q2_K_R4, T_Q3_K_R4, T_Q4_K_R4, T_Q6_K_R4, T_IQ4_XS_R8, T_IQ4_K_R4, T_Q4_0_R8, T_Q8_0_R8,
                       T_Q4_K_R8, T_Q6_K_R8, T_IQ4_K_R8, T_IQ4_XS_X8, T_IQ4_KS_R4, T_IQ5_KS_R4, T_IQ2_KS_R8, T_IQ3_KS_R8, T_IQ4_KS_R8, T_IQ5_KS_R8, T_IQ2_KL_R8})
        EXPECT_TRUE(unpack_supported(t)) << find_type(t)->name;
    EXPECT_FALSE(unpack_supported(T_IQ1_S_R4));  // its own format, no base
    EXPECT_FALSE(unpack_supported(T_Q4_K));      // not interleaved
    std::string list;
    for (uint32_t t : kInterleaved) list += std::string(find_type(t)->name) + (unpack_supported(t) ? "+ " : "- ");
    std::printf("unpack: %s\n", list.c_str());
}
