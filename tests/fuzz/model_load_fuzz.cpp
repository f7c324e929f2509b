// Fuzz target: model construction through the public ABI. The input is written to a temporary
// GGUF file and loaded with ikllm_model_load; the input length picks the load options (bit 0:
// repack, bit 1: read into memory instead of mmap, bit 2: check_tensors), so mutations cover them.
// A model that loads must then answer every query and run a tiny session: a 3-token batch and
// one incremental step, so that hyper-parameters and shapes that the loader accepted but the
// graph cannot honour show up here. Properties: only "hostile input" statuses come back
// (never IKLLM_ERR_INTERNAL), and nothing crashes or leaks.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_common.h"

namespace ikllm::fuzz::model_target {

constexpr size_t kMaxDequantElements = 1u << 20;

// IKLLM_FUZZ_VERBOSE=1 prints every failing call (to see how far an input gets).
void check_status(ikllm_status s, const char* call) {
    static const bool verbose = std::getenv("IKLLM_FUZZ_VERBOSE") != nullptr;
    if (verbose && s != IKLLM_OK) std::fprintf(stderr, "%s: %s: %s\n", call, ikllm_status_name(s), ikllm_last_error());
    if (s == IKLLM_OK || expected_error(s)) return;
    std::fprintf(stderr, "%s: unexpected status %s: %s\n", call, ikllm_status_name(s), ikllm_last_error());
    IKLLM_FUZZ_CHECK(false, "unexpected status");
}

void query(ikllm_model* m) {
    (void)ikllm_model_architecture(m);
    (void)ikllm_model_name(m);
    (void)ikllm_model_placement(m);
    uint64_t kv = 0;
    check_status(ikllm_model_kv_bytes_per_token(m, "f16", &kv), "kv_bytes_per_token");
    const int32_t n_meta = ikllm_model_meta_count(m);
    for (int32_t i = 0; i < n_meta; ++i) {
        const char* key = ikllm_model_meta_key(m, i);
        IKLLM_FUZZ_CHECK(key != nullptr, "meta key");
        size_t needed = 0;
        char small[16];
        ikllm_status s = ikllm_model_meta_value(m, key, IKLLM_META_FULL, small, sizeof small, &needed);
        IKLLM_FUZZ_CHECK(s == IKLLM_OK || s == IKLLM_ERR_BUFFER_TOO_SMALL, "meta value");
    }
    const int32_t n_tensors = ikllm_model_tensor_count(m);
    std::vector<float> buf;
    for (int32_t i = 0; i < n_tensors; ++i) {
        const char* name = nullptr;
        int32_t type = 0;
        int64_t ne[4];
        uint64_t bytes = 0;
        check_status(ikllm_model_tensor_info(m, i, &name, &type, ne, &bytes), "tensor_info");
        size_t needed = 0;
        ikllm_status s = ikllm_model_tensor_dequantize(m, name, nullptr, 0, &needed);
        if (s != IKLLM_ERR_BUFFER_TOO_SMALL) {
            check_status(s, "tensor_dequantize");
            continue;
        }
        if (needed > kMaxDequantElements) continue;
        buf.resize(needed);
        check_status(ikllm_model_tensor_dequantize(m, name, buf.data(), buf.size(), &needed), "tensor_dequantize");
    }
    for (int32_t i = 0; i < ikllm_model_chat_template_count(m); ++i) IKLLM_FUZZ_CHECK(ikllm_model_chat_template_name(m, i), "template name");
}

void run_session(ikllm_model* m) {
    const int32_t n_vocab = ikllm_model_n_vocab(m);
    if (n_vocab <= 0) return;
    ikllm_options* o = nullptr;
    check_status(ikllm_options_create(IKLLM_OPTIONS_SESSION, &o), "options_create");
    ikllm_options_set_int(o, "n_ctx", 16);
    ikllm_options_set_int(o, "n_batch", 8);
    ikllm_options_set_int(o, "n_threads", 1);
    ikllm_session* s = nullptr;
    ikllm_status st = ikllm_session_create(m, o, &s);
    ikllm_options_free(o);
    check_status(st, "session_create");
    if (st != IKLLM_OK) return;
    const ikllm_token bos = ikllm_model_special_token(m, IKLLM_TOKEN_BOS);
    const ikllm_token batch[3] = {bos >= 0 ? bos : 0, 1 % n_vocab, n_vocab - 1};
    st = ikllm_session_decode(s, batch, nullptr, nullptr, nullptr, 3, 0);
    check_status(st, "decode batch");
    if (st == IKLLM_OK) {
        const float* logits = nullptr;
        int32_t nv = 0;
        check_status(ikllm_session_logits(s, -1, &logits, &nv), "logits");
        IKLLM_FUZZ_CHECK(nv == n_vocab, "logits width");
        volatile float sink = logits[0] + logits[nv - 1];  // must be readable
        (void)sink;
        const ikllm_token next = n_vocab / 2;
        check_status(ikllm_session_decode(s, &next, nullptr, nullptr, nullptr, 1, 0), "decode step");
    }
    ikllm_session_free(s);
}

void tokenize(ikllm_model* m) {
    static const char kText[] = "Hello world! <s> 123 \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
    ikllm_token ids[64];
    size_t n = 0;
    ikllm_status s = ikllm_tokenize(m, kText, sizeof kText - 1, IKLLM_TOKENIZE_ADD_SPECIAL | IKLLM_TOKENIZE_PARSE_SPECIAL,
                                    ids, 64, &n);
    check_status(s == IKLLM_ERR_BUFFER_TOO_SMALL ? IKLLM_OK : s, "tokenize");
    if (s != IKLLM_OK) return;
    char text[1024];
    size_t needed = 0;
    s = ikllm_detokenize(m, ids, n, IKLLM_DETOK_RENDER_SPECIAL, text, sizeof text, &needed);
    if (s == IKLLM_OK) IKLLM_FUZZ_CHECK(valid_utf8(text, needed - 1), "detokenized text is UTF-8");
}

// One library instance per process (single-threaded sessions by default), freed at exit.
const ikllm_lib* lib() {
    struct Lib {
        ikllm_lib* p = nullptr;
        Lib() {
            ikllm_lib_create(0, &p);
            ikllm_lib_set_default_threads(p, 1);
        }
        ~Lib() { ikllm_lib_free(p); }
    };
    static const Lib l;
    return l.p;
}

int run(const uint8_t* data, size_t size) {
    TempDir dir;
    const std::string path = dir.write("model.gguf", data, size);
    ikllm_options* o = nullptr;
    check_status(ikllm_options_create(IKLLM_OPTIONS_MODEL, &o), "options_create");
    if (size & 1) ikllm_options_set_int(o, "repack", 2);  // 2: every interleaved form, whatever the CPU
    ikllm_options_set_int(o, "use_mmap", (size & 2) ? 0 : 1);  // both explicit: auto would always read
    if (size & 4) ikllm_options_set_int(o, "check_tensors", 1);
    ikllm_model* m = nullptr;
    const ikllm_status s = ikllm_model_load(const_cast<ikllm_lib*>(lib()), path.c_str(), o, nullptr, nullptr, nullptr, &m);
    ikllm_options_free(o);
    check_status(s, "model_load");
    IKLLM_FUZZ_CHECK((s == IKLLM_OK) == (m != nullptr), "model handle iff success");
    if (m) {
        query(m);
        tokenize(m);
        run_session(m);
        ikllm_model_free(m);
    }
    return 0;
}

}  // namespace ikllm::fuzz::model_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::model_target::run(data, size);
}
#endif
