// Run-time repack at model level (model option "repack", src/model/repack_weights.cpp): the CPU
// backend picks each type's interleaved form (with AVX-512 ikllm's own Q4_K_R8 / Q6_K_R8 /
// IQ4_K_R8 / IQ4_XS_X8 / Q2_K_R8 / Q3_K_R8 / Q5_K_R8 / IQ2_K_R8 / IQ3_K_R8 / IQ2_KS_R8 / IQ3_KS_R8 / IQ4_KS_R8 / IQ5_KS_R8 / IQ2_KL_R8, else the reference's Q4_K_R4 and the others as stored), the converted weights decode to exactly the stored
// values, and the token embeddings stay plain (they are looked up row by row). Logits of repacked models against the reference engine:
// refdata_logits_rtr (check_logits.py with -rtr).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "api/api_internal.h"
#include "ikllm.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"
#include "kernel_test_util.h"
#include "test_support.h"

namespace {

struct Loaded {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    Loaded(const std::string& stem, int repack) {
        ikllm_lib_create(0, &lib);
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
        EXPECT_EQ(ikllm_options_set_int(o, "repack", repack), IKLLM_OK);
        const std::string p = ikllm::test::refdata_dir() + "/quant/" + stem + ".gguf";
        EXPECT_EQ(ikllm_model_load(lib, p.c_str(), o, nullptr, nullptr, nullptr, &model), IKLLM_OK) << ikllm_last_error();
        ikllm_options_free(o);
    }
    ~Loaded() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
    std::map<std::string, const ikllm::Tensor*> weights() const {
        std::map<std::string, const ikllm::Tensor*> out;
        for (const auto& t : model->m->weights) out[t->name] = t.get();
        return out;
    }
};

}  // namespace

TEST(ModelRepack, KQuantMatricesTakeTheCpusLayoutWithTheirValues) {
    IKLLM_REQUIRE_REFDATA();
    for (const char* stem : {"llama-q-Q4_K_M", "qwen3moe-tiny-Q4_K_M", "deepseek2-tiny-IQ4_K", "llama-q-IQ4_XS", "llama-q-Q4_K_R4",
                             "llama-q-Q6_K_R4", "llama-q-IQ4_K_R4", "llama-q-Q2_K",
                             "llama-q-Q3_K_M", "llama-q-Q5_K_M", "llama-q-IQ2_K", "llama-q-IQ3_K",
                             "llama-q-IQ2_KS", "llama-q-IQ3_KS", "llama-q-IQ4_KS", "llama-q-IQ5_KS",
                             "llama-q-IQ2_KL"}) {
        SCOPED_TRACE(stem);
        Loaded plain(stem, 0), packed(stem, 1);
        ASSERT_TRUE(plain.model && packed.model);
        // With AVX-512 ikllm's own 8-row forms; otherwise Q4_K -> Q4_K_R4, the others as stored.
        const bool avx512 = ikllm::cpu::best_isa() == ikllm::cpu::Isa::avx512;
        const std::map<uint32_t, uint32_t> want = {
            {ikllm::quant::T_Q4_K, avx512 ? ikllm::quant::T_Q4_K_R8 : ikllm::quant::T_Q4_K_R4},
            {ikllm::quant::T_Q6_K, avx512 ? ikllm::quant::T_Q6_K_R8 : ikllm::quant::T_Q6_K},
            {ikllm::quant::T_IQ4_K, avx512 ? ikllm::quant::T_IQ4_K_R8 : ikllm::quant::T_IQ4_K},
            {ikllm::quant::T_IQ4_XS, avx512 ? ikllm::quant::T_IQ4_XS_X8 : ikllm::quant::T_IQ4_XS},
            {ikllm::quant::T_Q2_K, avx512 ? ikllm::quant::T_Q2_K_R8 : ikllm::quant::T_Q2_K},
            {ikllm::quant::T_Q3_K, avx512 ? ikllm::quant::T_Q3_K_R8 : ikllm::quant::T_Q3_K},
            {ikllm::quant::T_Q5_K, avx512 ? ikllm::quant::T_Q5_K_R8 : ikllm::quant::T_Q5_K},
            {ikllm::quant::T_IQ2_K, avx512 ? ikllm::quant::T_IQ2_K_R8 : ikllm::quant::T_IQ2_K},
            {ikllm::quant::T_IQ3_K, avx512 ? ikllm::quant::T_IQ3_K_R8 : ikllm::quant::T_IQ3_K},
            {ikllm::quant::T_IQ2_KS, avx512 ? ikllm::quant::T_IQ2_KS_R8 : ikllm::quant::T_IQ2_KS},
            {ikllm::quant::T_IQ3_KS, avx512 ? ikllm::quant::T_IQ3_KS_R8 : ikllm::quant::T_IQ3_KS},
            {ikllm::quant::T_IQ4_KS, avx512 ? ikllm::quant::T_IQ4_KS_R8 : ikllm::quant::T_IQ4_KS},
            {ikllm::quant::T_IQ5_KS, avx512 ? ikllm::quant::T_IQ5_KS_R8 : ikllm::quant::T_IQ5_KS},
            {ikllm::quant::T_IQ2_KL, avx512 ? ikllm::quant::T_IQ2_KL_R8 : ikllm::quant::T_IQ2_KL},
            // The reference's file forms: back to the plain rows and on to ikllm's layouts where
            // those are faster (AVX-512), else kept; IQ4_K_R4 is kept (its numerics are the
            // reference's for such files).
            {ikllm::quant::T_Q4_K_R4, avx512 ? ikllm::quant::T_Q4_K_R8 : ikllm::quant::T_Q4_K_R4},
            {ikllm::quant::T_Q6_K_R4, avx512 ? ikllm::quant::T_Q6_K_R8 : ikllm::quant::T_Q6_K_R4},
            {ikllm::quant::T_IQ4_K_R4, ikllm::quant::T_IQ4_K_R4}};
        const auto a = plain.weights(), b = packed.weights();
        int converted = 0;
        for (const auto& [name, t] : a) {
            const ikllm::Tensor* u = b.at(name);
            if (name == "token_embd.weight") {  // looked up row by row: kept as stored
                EXPECT_EQ(u->type, t->type) << name;
                continue;
            }
            if (!want.count(t->type) || t->ne[1] % 8) continue;
            ASSERT_EQ(u->type, want.at(t->type)) << name;
            ASSERT_EQ(u->nb[1], t->nb[1]) << name;  // same room: converted where it lies
            const std::vector<float> x = ikllm::test::dequant_tensor_rows(*t), y = ikllm::test::dequant_tensor_rows(*u);
            ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0) << name;
            ++converted;
        }
        EXPECT_GT(converted, 3);
    }
}
