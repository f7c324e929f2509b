// Encoders of the grid i-quants (docs: quant-formats.md §9). Any encoder is valid for the format,
// so these check round trips and quality: on the reference matrix's tensors our error (without an
// importance matrix) must be close to the reference quantizer's (which used one).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quant_gti_support.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

double rel_rmse(const std::vector<float>& x, const std::vector<float>& y) {
    double e = 0, s = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        e += (double)(x[i] - y[i]) * (x[i] - y[i]);
        s += (double)x[i] * x[i];
    }
    return std::sqrt(e / s);
}

std::vector<float> round_trip(uint32_t type, const std::vector<float>& x, int64_t ne0) {
    const TypeTraits* t = find_type(type);
    const int64_t nrows = (int64_t)x.size() / ne0;
    std::vector<uint8_t> q(row_bytes(*t, ne0));
    std::vector<float> y(x.size());
    for (int64_t r = 0; r < nrows; ++r) {
        t->quantize(x.data() + r * ne0, q.data(), ne0, nullptr);
        t->dequant(q.data(), y.data() + r * ne0, ne0);
    }
    return y;
}

}  // namespace

TEST(QuantGtiGridQuantize, QualityComparableToReferenceFiles) {
    IKLLM_REQUIRE_REFDATA();
    auto src = gguf::File::open(test::refdata_dir() + "/models/llama-q-f32.gguf", test::gti_geometry);
    struct Case {
        const char* model;
        const char* tensor;
        uint32_t type;
    };
    const Case cases[] = {
        {"llama-q-IQ2_XXS", "blk.0.attn_k.weight", T_IQ2_XXS}, {"llama-q-IQ2_XS", "blk.0.attn_k.weight", T_IQ2_XS},
        {"llama-q-IQ3_XXS", "blk.0.attn_k.weight", T_IQ2_S},   {"llama-q-IQ3_XXS", "blk.0.ffn_gate.weight", T_IQ3_XXS},
        {"llama-q-IQ3_S", "blk.0.attn_k.weight", T_IQ3_S},     {"llama-q-IQ1_S", "blk.0.attn_k.weight", T_IQ1_S},
        {"llama-q-IQ1_M", "blk.0.attn_k.weight", T_IQ1_M},
    };
    for (const Case& c : cases) {
        const gguf::TensorInfo* f = src->find_tensor(c.tensor);
        ASSERT_TRUE(f && f->type == T_F32);
        const float* xs = reinterpret_cast<const float*>(f->data);
        const std::vector<float> x(xs, xs + f->n_elements());
        auto ref = test::gti_open_quant(c.model);
        const gguf::TensorInfo* r = ref->find_tensor(c.tensor);
        ASSERT_TRUE(r && r->type == c.type) << c.model << " " << c.tensor;
        const double ref_err = rel_rmse(x, test::gti_decode(*r, r->n_rows()));
        const double ours = rel_rmse(x, round_trip(c.type, x, f->ne[0]));
        std::printf("[gti] %-8s %s: reference %.4f, ours %.4f\n", find_type(c.type)->name, c.tensor, ref_err, ours);
        EXPECT_LT(ours, 1.15 * ref_err) << find_type(c.type)->name;
    }
}

TEST(QuantGtiGridQuantize, ZeroAndTinyBlocks) {
    for (uint32_t type : {(uint32_t)T_IQ2_XXS, (uint32_t)T_IQ2_XS, (uint32_t)T_IQ2_S, (uint32_t)T_IQ3_XXS,
                          (uint32_t)T_IQ3_S, (uint32_t)T_IQ1_S, (uint32_t)T_IQ1_M}) {
        const TypeTraits* t = find_type(type);
        ASSERT_TRUE(t && t->quantize);
        std::vector<float> x(512, 0.0f);
        for (int i = 256; i < 512; ++i) x[(size_t)i] = (i % 7 - 3) * 1e-3f;  // second block non-zero
        const std::vector<float> y = round_trip(type, x, 512);
        for (int i = 0; i < 256; ++i) EXPECT_EQ(y[(size_t)i], 0.0f) << t->name;
        double e = 0, s = 0;
        for (int i = 256; i < 512; ++i) {
            e += (x[(size_t)i] - y[(size_t)i]) * (x[(size_t)i] - y[(size_t)i]);
            s += x[(size_t)i] * x[(size_t)i];
        }
        EXPECT_LT(std::sqrt(e / s), 0.8) << t->name;
    }
}
