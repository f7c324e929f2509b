// Trellis types (docs: quant-formats.md §10): the generator's published test vectors, and the
// encoders' quality on Gaussian data (the format fixes only decoding; any encoder is valid, so
// quality is checked against the error budget of the bit rate).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

#include "quant/trellis_gen.h"
#include "quant_gti_support.h"

using namespace ikllm;
using namespace ikllm::quant;

TEST(QuantGtiTrellis, GeneratorMatchesSpecVectors) {
    struct Vec {
        uint32_t code, offset;
        int G;
        int v[8];
    };
    const Vec vecs[] = {
        {0, 4096, 8, {-47, -36, -39, -86, -38, -38, -47, -35}},
        {1, 4096, 8, {21, 1, 59, -23, 33, 8, 13, 43}},
        {12345, 4096, 8, {-47, -24, 21, -50, 30, 42, 29, -26}},
        {65535, 4096, 8, {26, -32, -16, -9, -25, -62, 17, 10}},
        {32767, 36864, 4, {26, -32, -16, -9}},
    };
    for (const Vec& t : vecs) {
        int v[8];
        kt_generate(t.code, t.offset, t.G, v);
        for (int j = 0; j < t.G; ++j) EXPECT_EQ(v[j], t.v[j]) << "code " << t.code << " j " << j;
    }
}

// IQ4_KT with an odd scale word uses offset 4096 + 32768, i.e. the 16-bit code c | 1 << 15.
TEST(QuantGtiTrellis, Iq4OddHalfIsUpperCodeRange) {
    int a[4], b[4];
    for (uint32_t c : {0u, 1u, 777u, 32767u}) {
        kt_generate(c, kKtOffsetIq4Odd, 4, a);
        kt_generate(c | 32768u, kKtOffset, 4, b);
        for (int j = 0; j < 4; ++j) EXPECT_EQ(a[j], b[j]);
    }
}

namespace {

double rel_rmse(uint32_t type, const std::vector<float>& x, int64_t ne0, const std::vector<float>* imatrix) {
    const TypeTraits* t = find_type(type);
    const int64_t nrows = (int64_t)x.size() / ne0;
    std::vector<uint8_t> q(row_bytes(*t, ne0) * (size_t)nrows);
    std::vector<float> y(x.size());
    for (int64_t r = 0; r < nrows; ++r) {
        uint8_t* qr = q.data() + row_bytes(*t, ne0) * (size_t)r;
        t->quantize(x.data() + r * ne0, qr, ne0, imatrix ? imatrix->data() : nullptr);
        t->dequant(qr, y.data() + r * ne0, ne0);
    }
    double e = 0, s = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        e += (double)(x[i] - y[i]) * (x[i] - y[i]);
        s += (double)x[i] * x[i];
    }
    return std::sqrt(e / s);
}

}  // namespace

TEST(QuantGtiTrellis, EncodersReachTheirBitRateBudget) {
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t ne0 = 512, nrows = 8;
    std::vector<float> x((size_t)(ne0 * nrows));
    for (auto& v : x) v = 0.03f * nd(rng);
    // Gaussian rate-distortion bound: rel. RMSE >= 2^-R (R = 2.125, 3.125, 4 bits); allow a margin.
    struct Case {
        uint32_t type;
        double max_rel;
    };
    for (const Case& c : {Case{T_IQ1_KT, 0.50}, Case{T_IQ2_KT, 0.40}, Case{T_IQ3_KT, 0.22}, Case{T_IQ4_KT, 0.12}}) {
        const TypeTraits* t = find_type(c.type);
        ASSERT_TRUE(t && t->quantize);
        const auto t0 = std::chrono::steady_clock::now();
        const double e = rel_rmse(c.type, x, ne0, nullptr);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("[gti] %s: relative RMSE %.4f (%.2fs incl. code book index)\n", t->name, e, secs);
        EXPECT_LT(e, c.max_rel) << t->name;
        EXPECT_GT(e, std::pow(2.0, -(8.0 * t->block_bytes / 256.0)) * 0.9) << "better than rate-distortion?";
    }
}

TEST(QuantGtiTrellis, ZeroRowAndImatrix) {
    for (uint32_t type : {(uint32_t)T_IQ1_KT, (uint32_t)T_IQ2_KT, (uint32_t)T_IQ3_KT, (uint32_t)T_IQ4_KT}) {
        const TypeTraits* t = find_type(type);
        std::vector<float> x(256, 0.0f), y(256, 1.0f), im(256, 1.0f);
        std::vector<uint8_t> q(row_bytes(*t, 256));
        t->quantize(x.data(), q.data(), 256, im.data());
        t->dequant(q.data(), y.data(), 256);
        for (float v : y) EXPECT_EQ(v, 0.0f) << t->name;
    }
}

// On the reference matrix's attn_k tensor, our encoder (without importance matrix) should be
// in the same quality range as the reference quantizer (which used one).
TEST(QuantGtiTrellis, QualityComparableToReferenceFiles) {
    IKLLM_REQUIRE_REFDATA();
    auto src = gguf::File::open(test::refdata_dir() + "/models/llama-q-f32.gguf", test::gti_geometry);
    const gguf::TensorInfo* f = src->find_tensor("blk.0.attn_k.weight");
    ASSERT_TRUE(f && f->type == T_F32);
    const int64_t ne0 = f->ne[0], nrows = f->n_rows();
    const float* xs = reinterpret_cast<const float*>(f->data);
    std::vector<float> x(xs, xs + ne0 * nrows);
    struct Case {
        const char* model;
        uint32_t type;
    };
    for (const Case& c : {Case{"llama-q-IQ1_KT", T_IQ1_KT}, Case{"llama-q-IQ2_KT", T_IQ2_KT}, Case{"llama-q-IQ3_KT", T_IQ3_KT}, Case{"llama-q-IQ4_KT", T_IQ4_KT}}) {
        auto ref = test::gti_open_quant(c.model);
        const gguf::TensorInfo* r = ref->find_tensor("blk.0.attn_k.weight");
        ASSERT_TRUE(r && r->type == c.type);
        const std::vector<float> yr = test::gti_decode(*r, nrows);
        double e = 0, s = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            e += (double)(x[i] - yr[i]) * (x[i] - yr[i]);
            s += (double)x[i] * x[i];
        }
        const double ref_err = std::sqrt(e / s), ours = rel_rmse(c.type, x, ne0, nullptr);
        std::printf("[gti] %s on attn_k: reference %.4f, ours %.4f\n", find_type(c.type)->name, ref_err, ours);
        EXPECT_LT(ours, 1.1 * ref_err);
    }
}
