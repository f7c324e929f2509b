// Quantizers of the ternary / 8-bit interleaved types whose algorithm the spec fixes exactly
// (Q8_KV, Q8_K_R8, BF16_R16): quantizing the float model of the reference matrix must give the
// bytes the reference quantizer wrote. Plus quality checks of the ternary quantizers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quant_gti_support.h"

using namespace ikllm;
using namespace ikllm::test;
using namespace ikllm::quant;

namespace {

void expect_quantizer_matches_file(const char* model) {
    auto src = gguf::File::open(refdata_dir() + "/models/llama-q-f32.gguf", gti_geometry);
    auto ref = gti_open_quant(model);
    int compared = 0;
    for (const gguf::TensorInfo& t : ref->tensors()) {
        const TypeTraits* tt = find_type(t.type);
        if (t.type == T_F32 || t.type == T_Q8_0 || t.type == T_BF16) continue;  // not ours
        SCOPED_TRACE(std::string(model) + " " + t.name + " " + tt->name);
        const gguf::TensorInfo* f = src->find_tensor(t.name);
        ASSERT_TRUE(f && f->type == T_F32);
        ASSERT_NE(tt->quantize, nullptr);
        const int64_t ne0 = t.ne[0], N = tt->interleave;
        const size_t rb = row_bytes(*tt, ne0);
        std::vector<uint8_t> out(rb * (size_t)t.n_rows());
        const float* x = reinterpret_cast<const float*>(f->data);
        for (int64_t g = 0; g < t.n_rows() / N; ++g)
            tt->quantize(x + g * N * ne0, out.data() + rb * (size_t)(g * N), ne0, nullptr);
        size_t diff = 0;
        for (size_t i = 0; i < out.size(); ++i) diff += out[i] != t.data[i];
        EXPECT_EQ(diff, 0u) << "bytes differ out of " << out.size();
        ++compared;
    }
    EXPECT_GT(compared, 0);
}

}  // namespace

TEST(QuantGtiQuantize, Q8KVMatchesReference) {
    IKLLM_REQUIRE_REFDATA();
    expect_quantizer_matches_file("llama-q-Q8_KV");
}
TEST(QuantGtiQuantize, Q8KR8MatchesReference) {
    IKLLM_REQUIRE_REFDATA();
    expect_quantizer_matches_file("llama-q-Q8_K_R8");
}
TEST(QuantGtiQuantize, BF16R16MatchesReference) {
    IKLLM_REQUIRE_REFDATA();
    expect_quantizer_matches_file("llama-q-BF16_R16");
}

// IQ1_BN / IQ2_BN (§11.1, §11.2): ternary codes by |x| < max/2, decoded as d * (trit - 1).
TEST(QuantGtiQuantize, TernaryRoundTrip) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> pick(0, 2);
    const int64_t ne0 = 512;
    for (uint32_t type : {(uint32_t)T_IQ1_BN, (uint32_t)T_IQ2_BN}) {
        const TypeTraits* t = find_type(type);
        ASSERT_TRUE(t && t->quantize && t->dequant);
        std::vector<float> x(ne0), y(ne0);
        for (auto& v : x) v = 0.75f * (float)(pick(rng) - 1);  // exactly ternary input
        x[3] = -0.75f;
        std::vector<uint8_t> q(row_bytes(*t, ne0));
        t->quantize(x.data(), q.data(), ne0, nullptr);
        t->dequant(q.data(), y.data(), ne0);
        for (int64_t i = 0; i < ne0; ++i) ASSERT_EQ(y[i], x[i]) << t->name << " at " << i;
    }
}
