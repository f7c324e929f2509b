// load_vocab on small hand-written GGUF files: defaults, overrides and rejection of
// inconsistent tokenizer metadata (docs/tokenizers.md §1, §3, §4; GGUF layout: docs/gguf.md).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

using namespace ikllm;
using namespace ikllm::tok;

namespace {

// Minimal GGUF v3 writer for metadata-only files.
class GgufWriter {
public:
    void str(const std::string& key, const std::string& v) { head(key, 8); put_str(v); ++n_; }
    void u32(const std::string& key, uint32_t v) { head(key, 4); put(v); ++n_; }
    void i32(const std::string& key, int32_t v) { head(key, 5); put(v); ++n_; }
    void boolean(const std::string& key, bool v) { head(key, 7); put(uint8_t(v)); ++n_; }
    void strs(const std::string& key, const std::vector<std::string>& v) {
        head(key, 9);
        put(uint32_t(8));
        put(uint64_t(v.size()));
        for (const auto& s : v) put_str(s);
        ++n_;
    }
    void f32s(const std::string& key, const std::vector<float>& v) { nums(key, 6, v); }
    void i32s(const std::string& key, const std::vector<int32_t>& v) { nums(key, 5, v); }
    void u8s(const std::string& key, const std::vector<uint8_t>& v) { nums(key, 0, v); }

    std::string write(const std::string& name) const {
        std::string out;
        auto app = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
        const uint32_t magic = 0x46554747, version = 3;
        const uint64_t n_tensors = 0, n_kv = n_;
        app(&magic, 4);
        app(&version, 4);
        app(&n_tensors, 8);
        app(&n_kv, 8);
        out += body_;
        const std::string path = ::testing::TempDir() + name + "_" + std::to_string(::getpid()) + ".gguf";
        FILE* f = std::fopen(path.c_str(), "wb");
        EXPECT_NE(f, nullptr);
        std::fwrite(out.data(), 1, out.size(), f);
        std::fclose(f);
        return path;
    }

private:
    template <class T>
    void put(T v) { body_.append(reinterpret_cast<const char*>(&v), sizeof v); }
    void put_str(const std::string& s) { put(uint64_t(s.size())); body_ += s; }
    void head(const std::string& key, uint32_t type) { put_str(key); put(type); }
    template <class T>
    void nums(const std::string& key, uint32_t elem, const std::vector<T>& v) {
        head(key, 9);
        put(elem);
        put(uint64_t(v.size()));
        for (T x : v) put(x);
        ++n_;
    }
    std::string body_;
    uint64_t n_ = 0;
};

bool no_tensors(uint32_t, gguf::TypeGeometry*) { return false; }

VocabData load_from(const GgufWriter& w, const std::string& name) {
    const std::string path = w.write(name);
    auto f = gguf::File::open(path, no_tensors);
    VocabData v = load_vocab(*f);
    std::remove(path.c_str());
    return v;
}

Status load_status(const GgufWriter& w, const std::string& name) {
    try {
        load_from(w, name);
    } catch (const Error& e) {
        return e.status;
    }
    return Status::ok;
}

// A 6-token SentencePiece vocabulary.
GgufWriter spm_base() {
    GgufWriter w;
    w.str("general.name", "tiny");
    w.str("tokenizer.ggml.model", "llama");
    w.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "\xE2\x96\x81" "a"});
    w.f32s("tokenizer.ggml.scores", {0, 0, 0, -1, -2, -0.5f});
    w.i32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1});
    return w;
}

}  // namespace

TEST(TokenizerLoader, SpmDefaults) {
    const VocabData v = load_from(spm_base(), "spm_defaults");
    EXPECT_EQ(v.model, VocabModel::spm);
    EXPECT_EQ(v.tokens.size(), 6u);
    EXPECT_EQ(v.ids.bos, 1);
    EXPECT_EQ(v.ids.eos, 2);
    EXPECT_EQ(v.ids.unk, 0);
    EXPECT_TRUE(v.add_bos);
    EXPECT_FALSE(v.add_eos);
    EXPECT_TRUE(v.add_space_prefix);
    const Tokenizer t(v);
    EXPECT_EQ(t.encode("a a", true, false), (std::vector<int32_t>{1, 5, 5}));
    EXPECT_EQ(t.decode(t.encode("a a", false, false), true, false), "a a");
}

TEST(TokenizerLoader, Overrides) {
    GgufWriter w = spm_base();
    w.boolean("tokenizer.ggml.add_bos_token", false);
    w.boolean("tokenizer.ggml.add_eos_token", true);
    w.boolean("tokenizer.ggml.add_space_prefix", false);
    w.u32("tokenizer.ggml.eos_token_id", 4);
    w.u32("tokenizer.ggml.bos_token_id", 600);  // out of range: ignored, default stays
    w.u32("tokenizer.ggml.eot_token_id", 2);
    const VocabData v = load_from(w, "spm_overrides");
    EXPECT_FALSE(v.add_bos);
    EXPECT_TRUE(v.add_eos);
    EXPECT_FALSE(v.add_space_prefix);
    EXPECT_EQ(v.ids.eos, 4);
    EXPECT_EQ(v.ids.bos, 1);
    EXPECT_EQ(v.ids.eot, 2);
    const Tokenizer t(v);
    EXPECT_EQ(t.encode("a", true, false), (std::vector<int32_t>{4, 4}));  // no space prefix, EOS appended
    EXPECT_TRUE(t.is_eog(4));
    EXPECT_TRUE(t.is_eog(2));
}

TEST(TokenizerLoader, BpeDefaultsAndPre) {
    GgufWriter w;
    w.str("tokenizer.ggml.model", "gpt2");
    w.str("tokenizer.ggml.pre", "llama-bpe");
    std::vector<std::string> toks;
    for (char c = 'a'; c <= 'p'; ++c) toks.push_back(std::string(1, c));
    toks.push_back("ab");
    w.strs("tokenizer.ggml.tokens", toks);
    w.strs("tokenizer.ggml.merges", {"a b"});
    const VocabData v = load_from(w, "bpe_pre");
    EXPECT_EQ(v.model, VocabModel::bpe);
    EXPECT_EQ(v.pre, "llama-bpe");
    EXPECT_TRUE(v.add_bos);      // LLAMA3 group default
    EXPECT_EQ(v.ids.bos, 11);    // historical default (§3)
    EXPECT_EQ(v.ids.eos, 11);
    const Tokenizer t(v);
    EXPECT_EQ(t.encode("abc", false, false), (std::vector<int32_t>{16, 2}));
    EXPECT_EQ(t.encode("abc", true, false), (std::vector<int32_t>{11, 16, 2}));
}

TEST(TokenizerLoader, Rejections) {
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "llama");
        w.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
        w.f32s("tokenizer.ggml.scores", {0, 0});
        EXPECT_EQ(load_status(w, "short_scores"), Status::invalid_file);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "llama");
        w.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
        w.i32s("tokenizer.ggml.token_type", {1});
        EXPECT_EQ(load_status(w, "short_types"), Status::invalid_file);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "llama");
        w.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
        w.u8s("tokenizer.ggml.scores", {0, 0, 0});  // wrong element type
        EXPECT_EQ(load_status(w, "u8_scores"), Status::invalid_file);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "llama");
        EXPECT_EQ(load_status(w, "no_tokens"), Status::invalid_file);
    }
    {
        GgufWriter w;
        w.strs("tokenizer.ggml.tokens", {"a"});
        EXPECT_EQ(load_status(w, "no_model"), Status::invalid_file);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "klingon");
        w.strs("tokenizer.ggml.tokens", {"a"});
        EXPECT_EQ(load_status(w, "bad_model"), Status::invalid_file);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "t5");
        w.strs("tokenizer.ggml.tokens", {"a"});
        EXPECT_EQ(load_status(w, "t5"), Status::unsupported);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "gpt2");
        w.strs("tokenizer.ggml.tokens", {"a", "b"});
        EXPECT_EQ(load_status(w, "no_merges"), Status::invalid_file);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "gpt2");
        w.str("tokenizer.ggml.pre", "martian");
        w.strs("tokenizer.ggml.tokens", {"a", "b"});
        w.strs("tokenizer.ggml.merges", {"a b"});
        EXPECT_EQ(load_status(w, "bad_pre"), Status::unsupported);
    }
    {
        GgufWriter w;
        w.str("tokenizer.ggml.model", "llama");
        w.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
        w.u32("tokenizer.ggml.add_bos_token", 1);  // must be bool
        EXPECT_EQ(load_status(w, "int_flag"), Status::invalid_file);
    }
    {
        // Duplicate token texts are rejected when the tokenizer is built.
        GgufWriter w;
        w.str("tokenizer.ggml.model", "llama");
        w.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "x", "x"});
        const VocabData v = load_from(w, "dup");
        try {
            Tokenizer t(v);
            ADD_FAILURE() << "duplicate accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.status, Status::invalid_file);
        }
    }
}

TEST(TokenizerLoader, EmptyTokenTextsGetPlaceholders) {
    GgufWriter w;
    w.str("tokenizer.ggml.model", "llama");
    w.strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "", ""});
    const VocabData v = load_from(w, "empty_text");
    EXPECT_EQ(v.tokens[3], "[EMPTY_3]");
    EXPECT_EQ(v.tokens[4], "[EMPTY_4]");
    EXPECT_NO_THROW(Tokenizer t(v));
}
