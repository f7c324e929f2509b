// Split GGUF sets (-00001-of-0000N.gguf): a model cut into parts loads from its first part and
// computes the same logits as the single file; a missing part is a clear error.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "ikllm.h"
#include "model/model.h"
#include "test_support.h"

namespace {

std::vector<float> last_logits(const std::string& path, ikllm_status* st) {
    ikllm_lib* lib = nullptr;
    ikllm_lib_create(0, &lib);
    ikllm_model* m = nullptr;
    std::vector<float> out;
    *st = ikllm_model_load(lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &m);
    if (*st == IKLLM_OK) {
        ikllm_session* s = nullptr;
        EXPECT_EQ(ikllm_session_create(m, nullptr, &s), IKLLM_OK);
        const int32_t toks[5] = {1, 450, 1996, 1354, 1701};
        EXPECT_EQ(ikllm_session_decode(s, toks, nullptr, nullptr, nullptr, 5, 0), IKLLM_OK);
        const float* p = nullptr;
        int32_t n = 0;
        EXPECT_EQ(ikllm_session_logits(s, -1, &p, &n), IKLLM_OK);
        out.assign(p, p + n);
        ikllm_session_free(s);
    }
    ikllm_model_free(m);
    ikllm_lib_free(lib);
    return out;
}

TEST(SplitFiles, ThreePartsLoadLikeOneFile) {
    IKLLM_REQUIRE_REFDATA();
    const std::string src = ikllm::test::refdata_dir() + "/models/llama-q-f32.gguf";
    auto f = ikllm::gguf::File::open(src, &ikllm::type_geometry);
    const auto& ts = f->tensors();
    const int parts = 3;
    const std::string prefix = ::testing::TempDir() + "/ikllm_split";
    std::vector<std::string> paths;
    for (int k = 0; k < parts; ++k) {
        ikllm::gguf::Writer w;
        if (k == 0) w.copy_kvs(*f);
        ikllm::gguf::Value v;
        v.type = ikllm::gguf::ValueType::u16;
        v.u = (uint64_t)k;
        w.set("split.no", v);
        v.u = parts;
        w.set("split.count", v);
        w.set_i32("split.tensors.count", (int32_t)ts.size());
        for (size_t i = k; i < ts.size(); i += parts) {
            const auto& t = ts[i];
            w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.nbytes);
        }
        char name[64];
        std::snprintf(name, sizeof name, "-%05d-of-%05d.gguf", k + 1, parts);
        paths.push_back(prefix + name);
        w.write(paths.back());
    }
    ikllm_status st;
    const auto ref = last_logits(src, &st);
    ASSERT_EQ(st, IKLLM_OK) << ikllm_last_error();
    const auto got = last_logits(paths[0], &st);
    ASSERT_EQ(st, IKLLM_OK) << ikllm_last_error();
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << i;

    // Loading a later part, or a set with a part missing, is an error that says so.
    last_logits(paths[1], &st);
    EXPECT_NE(st, IKLLM_OK);
    std::remove(paths[2].c_str());
    last_logits(paths[0], &st);
    EXPECT_EQ(st, IKLLM_ERR_IO);
    EXPECT_NE(std::string(ikllm_last_error()).find("missing split part 3"), std::string::npos) << ikllm_last_error();
    for (auto& p : paths) std::remove(p.c_str());
}

}  // namespace
