// Metadata keys and tensor names must be non-empty UTF-8 without NUL bytes (docs/gguf.md §12 item 5):
// the public API hands them out and looks them up as C strings. Found by model_load_fuzz: a key with an
// embedded NUL made ikllm_model_meta_key() return a name that ikllm_model_meta_value() could not find
// (the input is tests/fuzz/regressions/model_load_fuzz/nul-in-metadata-key.gguf).
#include <unistd.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace {

using ikllm::gguf::File;
using ikllm::gguf::Writer;

bool f32_geometry(uint32_t type, ikllm::gguf::TypeGeometry* out) {
    if (type != 0) return false;
    *out = {"f32", 1, 4, 0, 1};
    return true;
}

std::string temp_path(const char* name) {
    return "/tmp/ikllm_gguf_names_" + std::to_string(getpid()) + "_" + name + ".gguf";
}

// Writes a file with one metadata key and one tensor, opens it, and returns "" or the error message.
std::string open_with(const std::string& key, const std::string& tensor) {
    Writer w;
    w.set_str("general.architecture", "llama");
    w.set_u32(key, 1);
    const float data[2] = {1.0f, 2.0f};
    w.add_tensor(tensor, 0, {2}, data, sizeof data);
    const std::string p = temp_path("f");
    w.write(p);
    std::string msg;
    try {
        auto f = File::open(p, &f32_geometry);
        EXPECT_NE(f->find(key), nullptr);
        EXPECT_NE(f->find_tensor(tensor), nullptr);
    } catch (const ikllm::Error& e) {
        EXPECT_EQ(e.status, ikllm::Status::invalid_file) << e.what();
        msg = e.what();
    }
    ::unlink(p.c_str());
    return msg;
}

TEST(GgufNames, KeysMustBeNonEmptyUtf8WithoutNul) {
    EXPECT_NE(open_with(std::string("tokenizer.ggml.unknown_\x90\0\0\0n_id", 31), "t").find("metadata key"), std::string::npos);
    EXPECT_NE(open_with(std::string("a\0b", 3), "t").find("contains a NUL byte"), std::string::npos);
    EXPECT_NE(open_with("", "t").find("is empty"), std::string::npos);
    EXPECT_NE(open_with("bad.\xff", "t").find("is not valid UTF-8"), std::string::npos);
    EXPECT_NE(open_with("overlong.\xc0\xaf", "t").find("is not valid UTF-8"), std::string::npos);
    EXPECT_NE(open_with("surrogate.\xed\xa0\x80", "t").find("is not valid UTF-8"), std::string::npos);
    EXPECT_NE(open_with("truncated.\xe2\x82", "t").find("is not valid UTF-8"), std::string::npos);
    // Valid keys, ASCII or not, are fine.
    EXPECT_EQ(open_with("llama.block_count", "t"), "");
    EXPECT_EQ(open_with("custom.caf\xc3\xa9.\xf0\x9f\x98\x80", "t"), "");
}

TEST(GgufNames, TensorNamesMustBeNonEmptyUtf8WithoutNul) {
    EXPECT_NE(open_with("k", std::string("blk.0\0.attn_q.weight", 20)).find("tensor name"), std::string::npos);
    EXPECT_NE(open_with("k", "").find("is empty"), std::string::npos);
    EXPECT_NE(open_with("k", "w\xfe").find("is not valid UTF-8"), std::string::npos);
    EXPECT_EQ(open_with("k", "blk.0.attn_q.weight"), "");
}

}  // namespace
