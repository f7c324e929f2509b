// Dequantization of the grid, trellis, ternary and row-interleaved types against the reference
// dumps in refdata/refs/*/deq (first rows bit-exact, whole-tensor sums to float rounding), and
// repacking of plain tensors against the interleaved tensors the reference quantizer wrote.
#include <gtest/gtest.h>

#include <cmath>
#include <dirent.h>
#include <set>

#include "quant/repack.h"
#include "quant_gti_support.h"

using namespace ikllm;
using namespace ikllm::test;
using namespace ikllm::quant;

namespace {

// Types owned by the grid / trellis / ternary / interleaved families.
bool owned_type(uint32_t id) {
    static const std::set<uint32_t> kOwned = {
        T_IQ2_XXS, T_IQ2_XS, T_IQ2_S, T_IQ3_XXS, T_IQ3_S, T_IQ1_S, T_IQ1_M, T_IQ1_KT, T_IQ2_KT, T_IQ3_KT,
        T_IQ4_KT, T_IQ1_BN, T_IQ2_BN, T_Q8_KV};
    return kOwned.count(id) || find_type(id)->interleave > 1;
}

std::vector<std::string> models_with_deq() {
    std::vector<std::string> out;
    const std::string dir = refdata_dir() + "/refs";
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            const std::string name = e->d_name;
            if (name[0] != '.' && file_exists(dir + "/" + name + "/deq/index.tsv") &&
                file_exists(refdata_dir() + "/quant/" + name + ".gguf"))
                out.push_back(name);
        }
        closedir(d);
    }
    return out;
}

}  // namespace

TEST(QuantGtiDeq, MatchesReferenceDumps) {
    IKLLM_REQUIRE_REFDATA();
    std::set<std::string> checked;
    for (const std::string& model : models_with_deq()) {
        auto file = gti_open_quant(model);
        for (const GtiIndexRow& r : gti_read_index(model)) {
            if (!owned_type(r.type)) continue;
            SCOPED_TRACE(model + " " + r.tensor + " " + r.type_name);
            const gguf::TensorInfo* ti = file->find_tensor(r.tensor);
            ASSERT_NE(ti, nullptr);
            ASSERT_EQ(ti->type, r.type);
            ASSERT_NE(find_type(r.type)->dequant, nullptr) << "no decoder";
            const std::vector<float> ref =
                read_f32_file(refdata_dir() + "/refs/" + model + "/deq/" + r.tensor + ".f32");
            ASSERT_EQ((int64_t)ref.size(), r.rows_dumped * r.ne0);
            const std::vector<float> all = gti_decode(*ti, ti->n_rows());
            int64_t mismatches = 0;
            for (size_t i = 0; i < ref.size(); ++i)
                if (gti_bits(ref[i]) != gti_bits(all[i]) && mismatches++ < 5)
                    ADD_FAILURE() << "element " << i << ": ref " << ref[i] << " got " << all[i];
            EXPECT_EQ(mismatches, 0);
            double sum = 0, sumsq = 0;
            for (float v : all) {
                sum += v;
                sumsq += (double)v * v;
            }
            EXPECT_NEAR(sum, r.sum_all, 1e-5 * (std::fabs(r.sum_all) + r.sumsq_all));
            EXPECT_NEAR(sumsq, r.sumsq_all, 1e-6 * r.sumsq_all);
            checked.insert(r.type_name);
        }
    }
    std::string list;
    for (const auto& s : checked) list += s + " ";
    std::printf("[gti] types checked bit-exactly against the reference: %s\n", list.c_str());
    EXPECT_GE(checked.size(), 20u);
}

// The reference quantizer writes an interleaved tensor by quantizing the plain type and
// repacking; the same tensor quantized to the plain type appears in another file of the matrix.
TEST(QuantGtiDeq, RepackOfPlainTensorEqualsReferenceInterleavedBytes) {
    IKLLM_REQUIRE_REFDATA();
    struct Pair {
        const char *plain_model, *interleaved_model, *tensor;
    };
    const Pair pairs[] = {
        {"llama-q-Q4_0", "llama-q-Q4_0_R8", "blk.0.attn_k.weight"},
        {"llama-q-Q8_0", "llama-q-Q8_0_R8", "blk.0.attn_k.weight"},
        {"llama-q-Q4_K_M", "llama-q-Q4_K_R4", "blk.0.attn_k.weight"},
        {"llama-q-Q6_K", "llama-q-Q6_K_R4", "blk.0.attn_k.weight"},
        {"llama-q-IQ4_XS", "llama-q-IQ4_XS_R8", "blk.0.attn_k.weight"},
        {"llama-q-IQ2_K", "llama-q-IQ2_K_R4", "blk.0.attn_k.weight"},
        {"llama-q-IQ2_K", "llama-q-IQ2_K_R4", "blk.0.attn_output.weight"},
        {"llama-q-IQ2_K", "llama-q-IQ2_K_R4", "blk.0.attn_v.weight"},
        {"llama-q-IQ3_K", "llama-q-IQ3_K_R4", "blk.0.attn_k.weight"},
        {"llama-q-IQ4_K", "llama-q-IQ4_K_R4", "blk.0.attn_k.weight"},
        {"llama-q-IQ4_K", "llama-q-IQ4_KS_R4", "blk.0.attn_v.weight"},
        {"llama-q-IQ4_KS", "llama-q-IQ4_KS_R4", "blk.0.attn_k.weight"},
        {"llama-q-IQ2_XXS", "llama-q-IQ2_XXS_R4", "blk.0.attn_k.weight"},
        {"llama-q-IQ3_XXS", "llama-q-IQ2_M_R4", "blk.0.attn_k.weight"},
        {"llama-q-IQ2_XXS", "llama-q-IQ2_XXS_R4", "output.weight"},
    };
    int compared = 0;
    for (const Pair& p : pairs) {
        SCOPED_TRACE(std::string(p.plain_model) + " -> " + p.interleaved_model + " " + p.tensor);
        auto fa = gti_open_quant(p.plain_model);
        auto fb = gti_open_quant(p.interleaved_model);
        const gguf::TensorInfo* a = fa->find_tensor(p.tensor);
        const gguf::TensorInfo* b = fb->find_tensor(p.tensor);
        ASSERT_TRUE(a && b);
        ASSERT_EQ(a->ne[0], b->ne[0]);
        ASSERT_EQ(a->n_rows(), b->n_rows());
        ASSERT_EQ(repack_base(b->type), a->type) << "interleaved type " << b->type;
        std::vector<uint8_t> out(b->nbytes);
        ASSERT_TRUE(repack_rows_to(a->type, b->type, a->data, out.data(), a->ne[0], a->n_rows()));
        EXPECT_EQ(0, std::memcmp(out.data(), b->data, b->nbytes));
        ++compared;
    }
    EXPECT_EQ(compared, (int)(sizeof(pairs) / sizeof(pairs[0])));
}
