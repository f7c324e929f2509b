// Helpers shared by the libFuzzer targets in tests/fuzz and by tests/unit/fuzz_regressions_test.cpp,
// which includes the targets' sources to replay their regression inputs in ordinary (gcc) builds.
// Header-only so that each target stays one .cpp file.
#pragma once
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ikllm.h"

// The property checks of the targets: a violation aborts, so libFuzzer records it as a crash.
#define IKLLM_FUZZ_CHECK(cond, what)                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "fuzz check failed: %s: %s (%s:%d)\n", what, #cond, __FILE__, __LINE__); \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

namespace ikllm::fuzz {

// Strict UTF-8 (Unicode Table 3-7: no overlongs, surrogates or code points above U+10FFFF).
inline bool valid_utf8(const char* text, size_t n) {
    const auto* s = reinterpret_cast<const uint8_t*>(text);
    size_t i = 0;
    while (i < n) {
        const uint8_t b = s[i];
        int len = 0;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b < 0x80) len = 1;
        else if (b >= 0xC2 && b <= 0xDF) len = 2;
        else if (b == 0xE0) { len = 3; lo = 0xA0; }
        else if (b == 0xED) { len = 3; hi = 0x9F; }
        else if (b >= 0xE1 && b <= 0xEF) len = 3;
        else if (b == 0xF0) { len = 4; lo = 0x90; }
        else if (b >= 0xF1 && b <= 0xF3) len = 4;
        else if (b == 0xF4) { len = 4; hi = 0x8F; }
        else return false;
        if (n - i < (size_t)len) return false;
        for (int j = 1; j < len; ++j) {
            const uint8_t c = s[i + j];
            const uint8_t l = j == 1 ? lo : 0x80, h = j == 1 ? hi : 0xBF;
            if (c < l || c > h) return false;
        }
        i += (size_t)len;
    }
    return true;
}
inline bool valid_utf8(std::string_view s) { return valid_utf8(s.data(), s.size()); }

// A fresh private directory in /dev/shm (memory-backed; $TMPDIR or /tmp when absent) for the
// files one input is written to; removed with its files when the object goes away.
class TempDir {
public:
    TempDir() {
        const char* base = "/dev/shm";
        struct stat st;
        if (::stat(base, &st) != 0 || !S_ISDIR(st.st_mode)) {
            base = std::getenv("TMPDIR");
            if (!base || !*base) base = "/tmp";
        }
        std::string templ = std::string(base) + "/ikllm-fuzz-XXXXXX";
        std::vector<char> buf(templ.begin(), templ.end());
        buf.push_back('\0');
        if (::mkdtemp(buf.data())) path_ = buf.data();
        IKLLM_FUZZ_CHECK(!path_.empty(), "cannot create a temporary directory");
    }
    ~TempDir() {
        if (DIR* d = ::opendir(path_.c_str())) {
            while (dirent* e = ::readdir(d))
                if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                    ::unlink((path_ + "/" + e->d_name).c_str());
            ::closedir(d);
        }
        ::rmdir(path_.c_str());
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    // Writes bytes to NAME inside the directory and returns the full path.
    std::string write(const std::string& name, const uint8_t* data, size_t size) const {
        const std::string p = path_ + "/" + name;
        FILE* f = std::fopen(p.c_str(), "wb");
        IKLLM_FUZZ_CHECK(f != nullptr, "cannot create a temporary file");
        const size_t w = size ? std::fwrite(data, 1, size, f) : 0;
        IKLLM_FUZZ_CHECK(std::fclose(f) == 0 && w == size, "cannot write a temporary file");
        return p;
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// ../shared next to the source tree (IKLLM_SHARED_DIR overrides), "" when absent.
inline std::string shared_dir() {
    if (const char* e = std::getenv("IKLLM_SHARED_DIR"); e && *e) return e;
#ifdef IKLLM_SHARED_DIR
    return IKLLM_SHARED_DIR;
#else
    return "";
#endif
}

inline bool is_file(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Vocabularies the tokenizer targets load once per process: $IKLLM_FUZZ_VOCABS (':'-separated
// GGUF paths) or a fixed set from refdata covering every tokenizer model and several
// pre-tokenizers. Missing files are skipped.
inline std::vector<std::string> vocab_paths() {
    std::vector<std::string> out;
    if (const char* e = std::getenv("IKLLM_FUZZ_VOCABS"); e && *e) {
        std::string s = e;
        size_t start = 0;
        while (start <= s.size()) {
            const size_t end = s.find(':', start);
            const std::string p = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
            if (!p.empty() && is_file(p)) out.push_back(p);
            if (end == std::string::npos) break;
            start = end + 1;
        }
        return out;
    }
    const std::string r = shared_dir() + "/refdata/";
    static const char* const kDefault[] = {
        "vocab/ggml-vocab-llama-spm.gguf",       // SentencePiece BPE
        "vocab/ggml-vocab-llama-bpe.gguf",       // byte-level BPE, llama3 pre-tokenizer
        "vocab/ggml-vocab-qwen2.gguf",           // qwen2 pre-tokenizer
        "vocab/ggml-vocab-gpt-2.gguf",           // gpt2 pre-tokenizer
        "vocab/ggml-vocab-deepseek-coder.gguf",  // deepseek-coder pre-tokenizer
        "vocab/ggml-vocab-falcon.gguf",          // falcon pre-tokenizer
        "vocab/ggml-vocab-bert-bge.gguf",        // WordPiece
        "vocab/ggml-vocab-phi-3.gguf",           // SentencePiece with user-defined specials
        "models/llama-tiny-f16.gguf",            // truncated vocabulary inside a model
    };
    if (shared_dir().empty()) return out;
    for (const char* v : kDefault)
        if (is_file(r + v)) out.push_back(r + v);
    return out;
}

// Models loaded with vocab_only, once per process (read-only afterwards; freed at exit so that
// LeakSanitizer stays quiet).
struct Vocabs {
    ikllm_lib* lib = nullptr;
    std::vector<ikllm_model*> models;
    std::vector<std::string> names;
    Vocabs() = default;
    Vocabs(Vocabs&& o) noexcept : lib(o.lib), models(std::move(o.models)), names(std::move(o.names)) {
        o.lib = nullptr;
        o.models.clear();
    }
    Vocabs(const Vocabs&) = delete;
    Vocabs& operator=(const Vocabs&) = delete;
    ~Vocabs() {
        for (ikllm_model* m : models) ikllm_model_free(m);
        ikllm_lib_free(lib);
    }
};
inline const Vocabs& vocabs() {
    static const Vocabs v = [] {
        Vocabs r;
        if (ikllm_lib_create(0, &r.lib) != IKLLM_OK) return r;
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
        ikllm_options_set_int(o, "vocab_only", 1);
        for (const std::string& p : vocab_paths()) {
            ikllm_model* m = nullptr;
            if (ikllm_model_load(r.lib, p.c_str(), o, nullptr, nullptr, nullptr, &m) == IKLLM_OK) {
                r.models.push_back(m);
                r.names.push_back(p);
            } else {
                std::fprintf(stderr, "fuzz: cannot load vocabulary %s: %s\n", p.c_str(), ikllm_last_error());
            }
        }
        ikllm_options_free(o);
        if (r.models.empty()) std::fprintf(stderr, "fuzz: no vocabulary found (set IKLLM_FUZZ_VOCABS); inputs are ignored\n");
        return r;
    }();
    return v;
}

// Status codes an API call may return for hostile input; anything else (INTERNAL: a stray
// std::exception) is a finding.
inline bool expected_error(ikllm_status s) {
    return s == IKLLM_ERR_INVALID_ARGUMENT || s == IKLLM_ERR_IO || s == IKLLM_ERR_INVALID_FILE ||
           s == IKLLM_ERR_UNSUPPORTED || s == IKLLM_ERR_NOT_FOUND;
}

}  // namespace ikllm::fuzz
