// Quantizer quality: for every K / ik-K type, quantize the F32 originals of refdata's
// llama-q-f32 model and compare the round-trip RMSE with that of the reference quantizer's
// files (refdata/quant/llama-q-*.gguf, dequantized with our bit-exact decoders).
#include <gtest/gtest.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include "quant/families.h"
#include "quant_kiqk_testutil.h"
#include "test_support.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

struct Geo {
    const char* name;
    int bytes;
    int meta;
};
const std::map<uint32_t, Geo>& geometry() {
    static const std::map<uint32_t, Geo> g = {
        {10, {"q2_K", 84, 0}},     {11, {"q3_K", 110, 0}},    {12, {"q4_K", 144, 0}},   {13, {"q5_K", 176, 0}},
        {14, {"q6_K", 210, 0}},    {23, {"iq4_xs", 136, 0}},  {137, {"iq2_k", 76, 0}},  {138, {"iq3_k", 110, 0}},
        {139, {"iq4_k", 144, 0}},  {140, {"iq5_k", 176, 0}},  {141, {"iq6_k", 212, 0}}, {145, {"iq2_ks", 70, 2}},
        {156, {"iq3_ks", 102, 2}}, {144, {"iq4_ks", 136, 4}}, {146, {"iq4_kss", 128, 4}}, {152, {"iq5_ks", 168, 4}},
        {157, {"iq2_kl", 86, 2}},
    };
    return g;
}

const FamilyEntry* find_entry(uint32_t id) {
    for (FamilyTable t : {kquant_family(), iqk_family()})
        for (size_t i = 0; i < t.count; ++i)
            if (t.entries[i].id == id) return &t.entries[i];
    return nullptr;
}

struct Acc {
    double ref_se = 0, our_se = 0, n = 0;
    int tensors = 0;
    double seconds = 0;
};

TEST(QuantKiqkRmse, WithinTwoPercentOfReferenceQuantizer) {
    IKLLM_REQUIRE_REFDATA();
    namespace fs = std::filesystem;
    const std::string root = test::refdata_dir();
    const auto orig = test::kiqk::read_gguf(root + "/models/llama-q-f32.gguf");
    std::map<uint32_t, Acc> acc;
    std::map<std::pair<uint32_t, std::string>, bool> done;  // same tensor quantized identically in several files
    for (const auto& ent : fs::directory_iterator(root + "/quant")) {
        const std::string fname = ent.path().filename().string();
        if (fname.rfind("llama-q-", 0) != 0) continue;
        const auto file = test::kiqk::read_gguf(ent.path().string());
        for (const auto& [name, t] : file.tensors) {
            auto git = geometry().find(t.type);
            if (git == geometry().end()) continue;
            if (done[{t.type, name}]) continue;
            done[{t.type, name}] = true;
            const auto oit = orig.tensors.find(name);
            ASSERT_NE(oit, orig.tensors.end());
            const float* x = (const float*)orig.data(oit->second);
            const FamilyEntry* e = find_entry(t.type);
            ASSERT_NE(e, nullptr);
            ASSERT_NE(e->quantize, nullptr);
            const int64_t ne0 = t.ne[0], nrows = t.ne[1] * t.ne[2] * t.ne[3];
            const size_t rb = git->second.meta + git->second.bytes * (ne0 / 256);
            std::vector<float> y(ne0);
            std::vector<uint8_t> buf(rb);
            Acc& a = acc[t.type];
            const auto t0 = std::chrono::steady_clock::now();
            for (int64_t r = 0; r < nrows; ++r) {
                const float* xr = x + r * ne0;
                e->dequant(file.data(t) + r * rb, y.data(), ne0);
                for (int64_t j = 0; j < ne0; ++j) a.ref_se += (double)(y[j] - xr[j]) * (y[j] - xr[j]);
                e->quantize(xr, buf.data(), ne0, nullptr);
                e->dequant(buf.data(), y.data(), ne0);
                for (int64_t j = 0; j < ne0; ++j) a.our_se += (double)(y[j] - xr[j]) * (y[j] - xr[j]);
            }
            a.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            a.n += (double)ne0 * nrows;
            a.tensors++;
        }
    }
    std::printf("%-8s %7s %12s %12s %8s %6s\n", "type", "tensors", "ref_rmse", "our_rmse", "ratio", "sec");
    for (const auto& [id, a] : acc) {
        const double rr = std::sqrt(a.ref_se / a.n), ro = std::sqrt(a.our_se / a.n);
        std::printf("%-8s %7d %12.6g %12.6g %8.4f %6.2f\n", geometry().at(id).name, a.tensors, rr, ro, ro / rr, a.seconds);
        EXPECT_LE(ro, rr * 1.02) << geometry().at(id).name;
    }
}

}  // namespace
