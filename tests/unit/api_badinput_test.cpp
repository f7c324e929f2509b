// Bad model files through the C API: truncations at many offsets, impossible counts, unknown
// types, missing/extra tensors, wrong shapes. Each must give a clear error status and message
// and leave nothing allocated (this test also runs under ASan/UBSan in test.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "ikllm.h"
#include "model/model.h"
#include "quant/type_traits.h"
#include "test_support.h"

namespace {

std::string tmp_path(const char* name) { return ::testing::TempDir() + "/ikllm_bad_" + name; }

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), (std::streamsize)bytes.size());
}

// Loads through the API; returns the status, checks the contract on failure.
ikllm_status try_load(const std::string& path, std::string* msg = nullptr) {
    ikllm_lib* lib = nullptr;
    EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    ikllm_model* m = reinterpret_cast<ikllm_model*>(0x1);
    ikllm_status st = ikllm_model_load(lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &m);
    if (st != IKLLM_OK) {
        EXPECT_EQ(m, nullptr);
        EXPECT_GT(std::strlen(ikllm_last_error()), 10u) << "no useful message";
        if (msg) *msg = ikllm_last_error();
    }
    ikllm_model_free(m);
    ikllm_lib_free(lib);
    return st;
}

std::string small_model() { return ikllm::test::refdata_dir() + "/quant/llama-q-Q4_0.gguf"; }

TEST(BadInput, TruncatedFilesAreRejectedAtEveryCut) {
    IKLLM_REQUIRE_REFDATA();
    const std::string buf = ikllm::test::read_text_file(small_model());
    ASSERT_GT(buf.size(), 1000u);
    ASSERT_EQ(try_load(small_model()), IKLLM_OK) << ikllm_last_error();
    std::mt19937 rng(5);
    std::vector<size_t> cuts = {0, 1, 3, 4, 7, 8, 15, 16, 23, 24, 25, 100, buf.size() / 2, buf.size() - 1};
    for (int i = 0; i < 40; ++i) cuts.push_back(rng() % buf.size());
    const std::string p = tmp_path("trunc.gguf");
    for (size_t c : cuts) {
        write_bytes(p, buf.substr(0, c));
        const ikllm_status st = try_load(p);
        EXPECT_TRUE(st == IKLLM_ERR_INVALID_FILE || st == IKLLM_ERR_UNSUPPORTED) << "cut at " << c << ": " << st;
    }
    std::remove(p.c_str());
}

TEST(BadInput, ImpossibleHeaderValues) {
    IKLLM_REQUIRE_REFDATA();
    const std::string buf = ikllm::test::read_text_file(small_model());
    const std::string p = tmp_path("hdr.gguf");
    struct Patch { size_t off; uint64_t val; int bytes; ikllm_status want; };
    const Patch patches[] = {
        {0, 0x12345678, 4, IKLLM_ERR_INVALID_FILE},       // magic
        {4, 1, 4, IKLLM_ERR_UNSUPPORTED},                 // version 1
        {4, 0xffffffff, 4, IKLLM_ERR_UNSUPPORTED},        // unknown version
        {8, 1ull << 62, 8, IKLLM_ERR_INVALID_FILE},       // n_tensors huge
        {16, 1ull << 62, 8, IKLLM_ERR_INVALID_FILE},      // n_kv huge
        {24, 1ull << 40, 8, IKLLM_ERR_INVALID_FILE},      // first key length huge
    };
    for (const Patch& pt : patches) {
        std::string b = buf;
        std::memcpy(&b[pt.off], &pt.val, pt.bytes);
        write_bytes(p, b);
        std::string msg;
        EXPECT_EQ(try_load(p, &msg), pt.want) << "patch at " << pt.off << ": " << msg;
    }
    std::mt19937 rng(11);  // random byte flips in the header: any status but never a crash
    for (int i = 0; i < 60; ++i) {
        std::string b = buf;
        for (int k = 0; k < 3; ++k) b[8 + rng() % 4000] = (char)rng();
        write_bytes(p, b);
        try_load(p);
    }
    std::remove(p.c_str());
}

// Rewrites the reference model with one change made by `edit` on its tensors.
struct TensorCopy { std::string name; uint32_t type; std::vector<int64_t> ne; const uint8_t* data; uint64_t bytes; };
template <typename Edit>
std::string rewrite(const char* name, Edit edit) {
    auto f = ikllm::gguf::File::open(small_model(), &ikllm::type_geometry);
    std::vector<TensorCopy> ts;
    for (auto& t : f->tensors()) ts.push_back({t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.nbytes});
    ikllm::gguf::Writer w;
    w.copy_kvs(*f);
    edit(w, ts);
    for (auto& t : ts) w.add_tensor(t.name, t.type, t.ne, t.data, t.bytes);
    const std::string p = tmp_path(name);
    w.write(p);
    return p;
}

TEST(BadInput, SchemaViolationsNameTheTensor) {
    IKLLM_REQUIRE_REFDATA();
    std::string msg;
    // Sanity: an unmodified rewrite loads.
    std::string p = rewrite("same.gguf", [](auto&, auto&) {});
    EXPECT_EQ(try_load(p, &msg), IKLLM_OK) << msg;

    p = rewrite("missing.gguf", [](auto&, std::vector<TensorCopy>& ts) {
        ts.erase(std::remove_if(ts.begin(), ts.end(), [](auto& t) { return t.name == "blk.0.attn_k.weight"; }), ts.end());
    });
    EXPECT_EQ(try_load(p, &msg), IKLLM_ERR_INVALID_FILE);
    EXPECT_NE(msg.find("blk.0.attn_k.weight"), std::string::npos) << msg;

    p = rewrite("shape.gguf", [](auto&, std::vector<TensorCopy>& ts) {
        for (auto& t : ts)
            if (t.name == "output_norm.weight") { t.ne[0] /= 2; t.bytes /= 2; }
    });
    EXPECT_EQ(try_load(p, &msg), IKLLM_ERR_INVALID_FILE);
    EXPECT_NE(msg.find("output_norm.weight"), std::string::npos) << msg;

    p = rewrite("type.gguf", [](auto&, std::vector<TensorCopy>& ts) {
        for (auto& t : ts)
            if (t.name == "blk.0.ffn_up.weight") t.type = 4;  // removed q4_2 id
    });
    EXPECT_EQ(try_load(p, &msg), IKLLM_ERR_UNSUPPORTED);
    EXPECT_NE(msg.find("blk.0.ffn_up.weight"), std::string::npos) << msg;

    // ikllm's run-time layouts (Q4_K_R8: made by run-time repack only) are not file types.
    p = rewrite("runtime_type.gguf", [](auto&, std::vector<TensorCopy>& ts) {
        for (auto& t : ts)
            if (t.name == "blk.0.ffn_up.weight") t.type = ikllm::quant::T_Q4_K_R8;
    });
    EXPECT_EQ(try_load(p, &msg), IKLLM_ERR_UNSUPPORTED);
    EXPECT_NE(msg.find("blk.0.ffn_up.weight"), std::string::npos) << msg;

    p = rewrite("extra.gguf", [](auto&, std::vector<TensorCopy>& ts) {
        TensorCopy extra = ts.back();
        extra.name = "blk.0.mystery.weight";
        ts.push_back(extra);
    });
    EXPECT_EQ(try_load(p, &msg), IKLLM_ERR_INVALID_FILE);
    EXPECT_NE(msg.find("mystery"), std::string::npos) << msg;

    p = rewrite("arch.gguf", [](ikllm::gguf::Writer& w, auto&) { w.set_str("general.architecture", "nonesuch"); });
    EXPECT_EQ(try_load(p, &msg), IKLLM_ERR_UNSUPPORTED);
    EXPECT_NE(msg.find("nonesuch"), std::string::npos) << msg;

    p = rewrite("heads.gguf", [](ikllm::gguf::Writer& w, auto&) { w.set_u32("llama.attention.head_count_kv", 3); });
    EXPECT_EQ(try_load(p, &msg), IKLLM_ERR_INVALID_FILE) << msg;
}

TEST(BadInput, MissingFileAndNullArguments) {
    EXPECT_EQ(try_load("/nonexistent/dir/model.gguf"), IKLLM_ERR_IO);
    ikllm_model* m = nullptr;
    EXPECT_EQ(ikllm_model_load(nullptr, "x", nullptr, nullptr, nullptr, nullptr, &m), IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    EXPECT_EQ(ikllm_model_load(lib, nullptr, nullptr, nullptr, nullptr, nullptr, &m), IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_lib* other = reinterpret_cast<ikllm_lib*>(0x1);
    EXPECT_EQ(ikllm_lib_create(1, &other), IKLLM_ERR_INVALID_ARGUMENT);  // flags must be 0
    EXPECT_EQ(other, nullptr);
    ikllm_lib_free(lib);
    ikllm_lib_free(nullptr);
    ikllm_model_free(nullptr);
}

TEST(Options, UnknownKeysAndRangesAreErrors) {
    ikllm_options* o = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &o), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_int(o, "n_ctx", 1024), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_int(o, "n_ctxx", 1024), IKLLM_ERR_NOT_FOUND);
    EXPECT_EQ(ikllm_options_set_int(o, "n_ctx", 0), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_options_set_string(o, "kv_type", "q3"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_options_set_from_text(o, "n_batch", "12x"), IKLLM_ERR_INVALID_ARGUMENT);
    int64_t v = 0;
    EXPECT_EQ(ikllm_options_get_int(o, "n_ctx", &v), IKLLM_OK);
    EXPECT_EQ(v, 1024);
    EXPECT_GE(ikllm_option_count(IKLLM_OPTIONS_SESSION), 5);
    for (int i = 0; i < ikllm_option_count(IKLLM_OPTIONS_SAMPLER); ++i) {
        const char *name, *def, *mn, *mx, *doc;
        int32_t type;
        ASSERT_EQ(ikllm_option_info(IKLLM_OPTIONS_SAMPLER, i, &name, &type, &def, &mn, &mx, &doc), IKLLM_OK);
        EXPECT_GT(std::strlen(doc), 5u);
    }
    ikllm_options_free(o);
}

}  // namespace
