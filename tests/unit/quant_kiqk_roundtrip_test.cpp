// Quantize -> dequantize round trips of the K / ik-K types on synthetic data: error bounds
// relative to the Lloyd-Max optimum for Gaussian data, degenerate rows, importance-matrix use,
// and the Q8_K / Q8_K32 / Q8_K128 activation encoders against the rules of quant-formats.md §15.
#include <gtest/gtest.h>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "core/error.h"
#include "quant/act_q8_k.h"
#include "quant/families.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

struct TypeCase {
    uint32_t id;
    const char* name;
    int bytes, meta;
    double bits;  // bits per weight spent on codes (levels = 2^bits)
};

// Lloyd-Max (optimal non-uniform scalar quantizer) RMSE / sigma for a Gaussian source.
double lloyd_max_rel_rmse(double bits) {
    if (bits <= 2.0) return std::sqrt(0.1175);
    if (bits <= 2.5) return std::sqrt(0.066);  // interpolated (IQ2_KL: 32 pair codes, 2.5 bits)
    if (bits <= 3.0) return std::sqrt(0.03454);
    if (bits <= 4.0) return std::sqrt(0.009497);
    if (bits <= 5.0) return std::sqrt(0.002499);
    return std::sqrt(0.000642);
}

const std::vector<TypeCase>& cases() {
    static const std::vector<TypeCase> c = {
        {T_Q2_K, "q2_K", 84, 0, 2},     {T_Q3_K, "q3_K", 110, 0, 3},     {T_Q4_K, "q4_K", 144, 0, 4},
        {T_Q5_K, "q5_K", 176, 0, 5},    {T_Q6_K, "q6_K", 210, 0, 6},     {T_IQ4_XS, "iq4_xs", 136, 0, 4},
        {T_IQ2_K, "iq2_k", 76, 0, 2},   {T_IQ3_K, "iq3_k", 110, 0, 3},   {T_IQ4_K, "iq4_k", 144, 0, 4},
        {T_IQ5_K, "iq5_k", 176, 0, 5},  {T_IQ6_K, "iq6_k", 212, 0, 6},   {T_IQ2_KS, "iq2_ks", 70, 2, 2},
        {T_IQ3_KS, "iq3_ks", 102, 2, 3}, {T_IQ4_KS, "iq4_ks", 136, 4, 4}, {T_IQ4_KSS, "iq4_kss", 128, 4, 4},
        {T_IQ5_KS, "iq5_ks", 168, 4, 5}, {T_IQ2_KL, "iq2_kl", 86, 2, 2.5},
    };
    return c;
}

const FamilyEntry* entry(uint32_t id) {
    for (FamilyTable t : {kquant_family(), iqk_family()})
        for (size_t i = 0; i < t.count; ++i)
            if (t.entries[i].id == id) return &t.entries[i];
    return nullptr;
}

std::vector<float> round_trip(const TypeCase& tc, const std::vector<float>& x, int64_t ne0, const float* imatrix) {
    const FamilyEntry* e = entry(tc.id);
    const size_t rb = tc.meta + (size_t)tc.bytes * (ne0 / 256);
    const int64_t rows = (int64_t)x.size() / ne0;
    std::vector<uint8_t> buf(rb * rows);
    std::vector<float> y(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        e->quantize(x.data() + r * ne0, buf.data() + r * rb, ne0, imatrix);
        e->dequant(buf.data() + r * rb, y.data() + r * ne0, ne0);
    }
    return y;
}

class KiqkRoundTrip : public ::testing::TestWithParam<size_t> {};

TEST_P(KiqkRoundTrip, GaussianErrorNearOptimum) {
    const TypeCase& tc = cases()[GetParam()];
    ASSERT_NE(entry(tc.id), nullptr);
    ASSERT_NE(entry(tc.id)->quantize, nullptr);
    std::mt19937 rng(42 + tc.id);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    const int64_t ne0 = 1024, rows = 16;
    std::vector<float> x(ne0 * rows);
    for (auto& v : x) v = nd(rng);
    const std::vector<float> y = round_trip(tc, x, ne0, nullptr);
    double se = 0, ss = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i]));
        se += (double)(y[i] - x[i]) * (y[i] - x[i]);
        ss += (double)x[i] * x[i];
    }
    const double rel = std::sqrt(se / ss);
    // Block-scaled formats pay for scale precision and outliers; stay within 40% of the
    // per-weight optimum of an ideal quantizer with the same number of levels.
    EXPECT_LT(rel, 1.4 * lloyd_max_rel_rmse(tc.bits)) << tc.name;
    EXPECT_GT(rel, 0.5 * lloyd_max_rel_rmse(tc.bits)) << tc.name << ": implausibly small error";
}

TEST_P(KiqkRoundTrip, DegenerateRows) {
    const TypeCase& tc = cases()[GetParam()];
    const int64_t ne0 = 512;
    // all zeros -> exact zeros
    std::vector<float> x(ne0, 0.0f);
    std::vector<float> y = round_trip(tc, x, ne0, nullptr);
    for (float v : y) ASSERT_EQ(v, 0.0f) << tc.name;
    // one large outlier among tiny values: finite, outlier kept within 10%
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1e-3f);
    for (auto& v : x) v = nd(rng);
    x[300] = 5.0f;
    y = round_trip(tc, x, ne0, nullptr);
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << tc.name;
    EXPECT_NEAR(y[300], 5.0f, 0.5f) << tc.name;
    // constant row (no negative values): mean kept within 10%
    std::fill(x.begin(), x.end(), 0.25f);
    y = round_trip(tc, x, ne0, nullptr);
    double mean = 0;
    for (float v : y) mean += v;
    EXPECT_NEAR(mean / ne0, 0.25, 0.025) << tc.name;
    // very small magnitudes (fp16 subnormal territory for the block scales)
    for (auto& v : x) v = nd(rng) * 1e-4f;
    y = round_trip(tc, x, ne0, nullptr);
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << tc.name;
}

TEST_P(KiqkRoundTrip, NonFiniteInputDoesNotCrash) {
    const TypeCase& tc = cases()[GetParam()];
    const int64_t ne0 = 512;
    std::vector<float> x(ne0, 0.01f);
    x[3] = NAN;
    x[300] = INFINITY;
    x[301] = -INFINITY;
    round_trip(tc, x, ne0, nullptr);  // output unspecified; must not crash or read out of bounds
    std::vector<float> im(ne0, 1.0f);
    im[7] = NAN;
    im[8] = -1.0f;
    x.assign(ne0, 0.01f);
    const std::vector<float> y = round_trip(tc, x, ne0, im.data());
    for (float v : y) EXPECT_TRUE(std::isfinite(v)) << tc.name;
}

TEST_P(KiqkRoundTrip, ImportanceMatrixSteersError) {
    const TypeCase& tc = cases()[GetParam()];
    std::mt19937 rng(99 + tc.id);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    const int64_t ne0 = 512, rows = 16;
    std::vector<float> x(ne0 * rows);
    for (auto& v : x) v = nd(rng);
    // every 4th column matters 1000x more (inside every sub-block, so codes and scales can follow)
    std::vector<float> im(ne0);
    for (int64_t j = 0; j < ne0; ++j) im[j] = j % 4 == 0 ? 1000.0f : 1.0f;
    auto err_important = [&](const std::vector<float>& y) {
        double e = 0;
        for (size_t i = 0; i < x.size(); ++i)
            if ((i % ne0) % 4 == 0) e += (double)(y[i] - x[i]) * (y[i] - x[i]);
        return e;
    };
    const double plain = err_important(round_trip(tc, x, ne0, nullptr));
    const double weighted = err_important(round_trip(tc, x, ne0, im.data()));
    EXPECT_LT(weighted, 0.9 * plain) << tc.name;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, KiqkRoundTrip, ::testing::Range<size_t>(0, 17),
                         [](const ::testing::TestParamInfo<size_t>& i) { return std::string(cases()[i.param].name); });

// ---- activation encoders ---------------------------------------------------------------------

int rne(float v) { return (int)std::nearbyint(v); }

std::vector<float> activation_row(int64_t ne0, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(ne0);
    for (auto& v : x) v = nd(rng);
    // exact ties at x*id = k + 0.5 are exercised by values on the grid of the max
    x[5] = 0.0f;
    x[17] = -x[3];
    return x;
}

TEST(KiqkActivations, Q8KFollowsSpec) {
    const int64_t ne0 = 768;
    for (uint32_t seed : {1u, 2u, 3u}) {
        std::vector<float> x = activation_row(ne0, seed);
        if (seed == 3) std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero block
        std::vector<uint8_t> out(q8_k_row_bytes(ne0));
        ASSERT_EQ(out.size(), 3u * 296);
        encode_q8_k_row(x.data(), out.data(), ne0);
        for (int b = 0; b < 3; ++b) {
            const float* xb = x.data() + 256 * b;
            const uint8_t* o = out.data() + 296 * b;
            float amax = 0;
            for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(xb[j]));
            const float d = amax / 127.0f;
            const float id = amax != 0 ? 127.0f / amax : 0.0f;
            float od, osum;
            std::memcpy(&od, o, 4);
            std::memcpy(&osum, o + 4, 4);
            EXPECT_EQ(od, d);
            int total = 0;
            for (int s = 0; s < 16; ++s) {
                int bs = 0;
                for (int j = 16 * s; j < 16 * s + 16; ++j) {
                    const int q = rne(xb[j] * id);
                    ASSERT_EQ((int8_t)o[8 + j], q) << "block " << b << " j " << j;
                    bs += q;
                }
                int16_t ob;
                std::memcpy(&ob, o + 264 + 2 * s, 2);
                EXPECT_EQ(ob, bs);
                total += bs;
            }
            EXPECT_EQ(osum, d * (float)total);
        }
    }
}

TEST(KiqkActivations, Q8K32AndQ8K128FollowSpec) {
    const int64_t ne0 = 512;
    const std::vector<float> x = activation_row(ne0, 11);
    std::vector<uint8_t> k(q8_k_row_bytes(ne0)), k32(q8_k32_row_bytes(ne0)), k128(q8_k128_row_bytes(ne0));
    ASSERT_EQ(k128.size(), 4u * 140);
    encode_q8_k_row(x.data(), k.data(), ne0);
    encode_q8_k32_row(x.data(), k32.data(), ne0);
    encode_q8_k128_row(x.data(), k128.data(), ne0);
    for (int b = 0; b < 2; ++b) {
        const uint8_t* a = k.data() + 296 * b;
        const uint8_t* c = k32.data() + 296 * b;
        EXPECT_EQ(0, std::memcmp(a, c, 4));              // same d
        EXPECT_EQ(0, std::memcmp(a + 8, c + 8, 256));    // same codes
        float d, sum = 0.0f, osum;
        std::memcpy(&d, c, 4);
        std::memcpy(&osum, c + 4, 4);
        for (int i = 0; i < 8; ++i) {
            int qs = 0;
            for (int j = 0; j < 32; ++j) qs += (int8_t)c[8 + 32 * i + j];
            float bs;
            std::memcpy(&bs, c + 264 + 4 * i, 4);
            EXPECT_EQ(bs, d * (float)qs);
            sum = sum + bs;
        }
        EXPECT_EQ(osum, sum);
    }
    for (int b = 0; b < 4; ++b) {
        const float* xb = x.data() + 128 * b;
        const uint8_t* o = k128.data() + 140 * b;
        float amax = 0;
        for (int j = 0; j < 128; ++j) amax = std::max(amax, std::fabs(xb[j]));
        float od;
        std::memcpy(&od, o, 4);
        EXPECT_EQ(od, amax / 127.0f);
        const float id = 127.0f / amax;
        for (int s = 0; s < 4; ++s) {
            int bs = 0;
            for (int j = 32 * s; j < 32 * s + 32; ++j) {
                ASSERT_EQ((int8_t)o[12 + j], rne(xb[j] * id));
                bs += rne(xb[j] * id);
            }
            int16_t ob;
            std::memcpy(&ob, o + 4 + 2 * s, 2);
            EXPECT_EQ(ob, bs);
        }
    }
}

}  // namespace

namespace {
TEST(KiqkRoundTrip, PartialBlocksAreRejected) {
    std::vector<float> x(300, 0.0f);
    std::vector<uint8_t> buf(1024);
    for (const TypeCase& tc : cases()) {
        const FamilyEntry* e = entry(tc.id);
        EXPECT_THROW(e->quantize(x.data(), buf.data(), 300, nullptr), ikllm::Error) << tc.name;
        EXPECT_THROW(e->dequant(buf.data(), x.data(), 300), ikllm::Error) << tc.name;
    }
}
}  // namespace
