// Misuse of the C API, case by case: NULL handles and pointers, wrong buffer sizes, out-of-range
// sequence ids / positions / tokens / batch indices, decode on a full cache, and objects used
// after their model handle was freed. Each call must return an error status with a message (or
// the documented neutral value for getters), never crash, and leave the objects usable — the
// last check of each test decodes again and compares logits with a fresh session. Runs under
// ASan/UBSan in test.sh.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ikllm.h"
#include "test_support.h"

namespace {

std::string model_path() { return ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf"; }

struct Fixture {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    ikllm_session* session = nullptr;
    ikllm_sampler* sampler = nullptr;
    ikllm_detok* detok = nullptr;
    int32_t n_vocab = 0;
    Fixture() {
        EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
        EXPECT_EQ(ikllm_model_load(lib, model_path().c_str(), nullptr, nullptr, nullptr, nullptr, &model), IKLLM_OK)
            << ikllm_last_error();
        n_vocab = ikllm_model_n_vocab(model);
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
        ikllm_options_set_int(o, "n_ctx", 16);
        ikllm_options_set_int(o, "n_seq_max", 2);
        ikllm_options_set_int(o, "n_threads", 2);
        EXPECT_EQ(ikllm_session_create(model, o, &session), IKLLM_OK) << ikllm_last_error();
        ikllm_options_free(o);
        EXPECT_EQ(ikllm_sampler_create(model, nullptr, &sampler), IKLLM_OK);
        EXPECT_EQ(ikllm_detok_create(model, 0, &detok), IKLLM_OK);
    }
    ~Fixture() {
        ikllm_detok_free(detok);
        ikllm_sampler_free(sampler);
        ikllm_session_free(session);
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};

// Logits after decoding `toks` into a fresh session of the same model.
std::vector<float> fresh_logits(const ikllm_model* model, const std::vector<ikllm_token>& toks) {
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(model, nullptr, &s), IKLLM_OK);
    EXPECT_EQ(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, (int32_t)toks.size(), 0), IKLLM_OK);
    const float* lg = nullptr;
    int32_t nv = 0;
    EXPECT_EQ(ikllm_session_logits(s, -1, &lg, &nv), IKLLM_OK);
    std::vector<float> r(lg, lg + nv);
    ikllm_session_free(s);
    return r;
}

void expect_error(const char* what, ikllm_status st, int want = -1) {
    EXPECT_NE(st, IKLLM_OK) << what << " was accepted";
    if (want >= 0) {
        EXPECT_EQ((int)st, want) << what << ": " << ikllm_status_name(st) << " " << ikllm_last_error();
    }
    EXPECT_GT(std::strlen(ikllm_last_error()), 3u) << what << ": no message";
}

TEST(Misuse, NullHandlesAndPointers) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    ikllm_token t = 1;
    const float* lg = nullptr;
    int32_t nv = 0;
    size_t needed = 0;
    char buf[64];
    const char* text = nullptr;
    size_t len = 0;
    const ikllm_status inv = IKLLM_ERR_INVALID_ARGUMENT;
    // Handle-taking calls with a NULL handle.
    expect_error("tokenize(NULL model)", ikllm_tokenize(nullptr, "a", 1, 0, &t, 1, &needed), inv);
    expect_error("token_to_piece(NULL)", ikllm_token_to_piece(nullptr, 1, 0, buf, sizeof buf, &needed), inv);
    expect_error("detokenize(NULL)", ikllm_detokenize(nullptr, &t, 1, 0, buf, sizeof buf, &needed), inv);
    expect_error("session_create(NULL model)", ikllm_session_create(nullptr, nullptr, nullptr), inv);
    expect_error("sampler_create(NULL model)", ikllm_sampler_create(nullptr, nullptr, nullptr), inv);
    expect_error("detok_create(NULL model)", ikllm_detok_create(nullptr, 0, nullptr), inv);
    expect_error("decode(NULL session)", ikllm_session_decode(nullptr, &t, nullptr, nullptr, nullptr, 1, 0), inv);
    expect_error("logits(NULL session)", ikllm_session_logits(nullptr, -1, &lg, &nv), inv);
    expect_error("seq_remove(NULL)", ikllm_session_seq_remove(nullptr, 0, 0, -1), inv);
    expect_error("seq_copy(NULL)", ikllm_session_seq_copy(nullptr, 0, 1, 0, -1), inv);
    expect_error("seq_keep(NULL)", ikllm_session_seq_keep(nullptr, 0), inv);
    expect_error("seq_shift(NULL)", ikllm_session_seq_shift(nullptr, 0, 0, -1, 1), inv);
    expect_error("clear(NULL)", ikllm_session_clear(nullptr), inv);
    expect_error("sample(NULL sampler)", ikllm_sampler_sample(nullptr, f.session, -1, &t), inv);
    expect_error("sample(NULL session)", ikllm_sampler_sample(f.sampler, nullptr, -1, &t), inv);
    expect_error("accept(NULL)", ikllm_sampler_accept(nullptr, &t, 1), inv);
    expect_error("detok_push(NULL)", ikllm_detok_push(nullptr, 1, &text, &len), inv);
    expect_error("detok_flush(NULL)", ikllm_detok_flush(nullptr, &text, &len), inv);
    expect_error("state_save(NULL)", ikllm_session_state_save(nullptr, nullptr, 0, nullptr, 0, nullptr, 0, &needed), inv);
    expect_error("options_set_int(NULL)", ikllm_options_set_int(nullptr, "n_ctx", 1), inv);
    expect_error("model_meta_value(NULL)", ikllm_model_meta_value(nullptr, "general.architecture", 0, buf, sizeof buf, &needed), inv);
    // NULL output / input pointers with valid handles.
    expect_error("tokenize(NULL text, len>0)", ikllm_tokenize(f.model, nullptr, 5, 0, &t, 1, &needed), inv);
    expect_error("decode(NULL tokens)", ikllm_session_decode(f.session, nullptr, nullptr, nullptr, nullptr, 1, 0), inv);
    expect_error("logits(NULL out)", ikllm_session_logits(f.session, -1, nullptr, &nv), inv);
    expect_error("detok_push(NULL out)", ikllm_detok_push(f.detok, 1, nullptr, &len), inv);
    expect_error("model_load(NULL path)", ikllm_model_load(f.lib, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), inv);
    expect_error("model_load(NULL lib)", ikllm_model_load(nullptr, "x", nullptr, nullptr, nullptr, nullptr, nullptr), inv);
    // Getters answer neutral values.
    EXPECT_EQ(ikllm_model_n_vocab(nullptr), 0);
    EXPECT_STREQ(ikllm_model_architecture(nullptr), "");
    EXPECT_EQ(ikllm_session_n_ctx(nullptr), 0);
    EXPECT_EQ(ikllm_session_seq_pos_max(nullptr, 0), -1);
    EXPECT_EQ(ikllm_model_special_token(nullptr, IKLLM_TOKEN_BOS), -1);
    EXPECT_EQ(ikllm_model_meta_key(f.model, -1), nullptr);
    EXPECT_EQ(ikllm_model_meta_key(f.model, 1 << 30), nullptr);
    // Frees accept NULL.
    ikllm_session_free(nullptr);
    ikllm_model_free(nullptr);
    ikllm_sampler_free(nullptr);
    ikllm_detok_free(nullptr);
    ikllm_options_free(nullptr);
    ikllm_lib_free(nullptr);
    // Wrong options kind.
    ikllm_options* mo = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
    ikllm_session* s2 = nullptr;
    expect_error("session_create(model options)", ikllm_session_create(f.model, mo, &s2), inv);
    EXPECT_EQ(s2, nullptr);
    expect_error("set n_ctx on model options", ikllm_options_set_int(mo, "n_ctx", 8));
    expect_error("set_float on an int option", ikllm_options_set_string(mo, "use_mmap", "yes"));
    ikllm_options_free(mo);
}

TEST(Misuse, BufferSizesFollowTheConvention) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    const char* text = "Hello world, a longer sentence for the tokenizer.";
    size_t needed = 0;
    ikllm_token one = 0;
    EXPECT_EQ(ikllm_tokenize(f.model, text, std::strlen(text), 0, &one, 1, &needed), IKLLM_ERR_BUFFER_TOO_SMALL);
    ASSERT_GT(needed, 1u);
    std::vector<ikllm_token> toks(needed);
    size_t n2 = 0;
    EXPECT_EQ(ikllm_tokenize(f.model, text, std::strlen(text), 0, toks.data(), toks.size(), &n2), IKLLM_OK);
    EXPECT_EQ(n2, needed);
    EXPECT_EQ(ikllm_tokenize(f.model, text, std::strlen(text), 0, nullptr, 0, &n2), IKLLM_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(n2, needed);

    char small[4];
    EXPECT_EQ(ikllm_detokenize(f.model, toks.data(), toks.size(), 0, small, sizeof small, &needed),
              IKLLM_ERR_BUFFER_TOO_SMALL);
    ASSERT_GT(needed, sizeof small);
    std::string out(needed, '\0');
    EXPECT_EQ(ikllm_detokenize(f.model, toks.data(), toks.size(), 0, out.data(), out.size(), &needed), IKLLM_OK);
    EXPECT_EQ(std::strlen(out.c_str()) + 1, needed);
    EXPECT_EQ(ikllm_model_meta_value(f.model, "general.architecture", 0, small, 2, &needed), IKLLM_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(needed, std::strlen("llama") + 1);
    EXPECT_EQ(ikllm_model_meta_value(f.model, "no.such.key", 0, small, sizeof small, &needed), IKLLM_ERR_NOT_FOUND);
    std::vector<float> tiny(3);
    EXPECT_EQ(ikllm_model_tensor_dequantize(f.model, "output_norm.weight", tiny.data(), tiny.size(), &needed),
              IKLLM_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(needed, (size_t)ikllm_model_n_embd(f.model));
    EXPECT_EQ(ikllm_session_state_save(f.session, nullptr, 0, nullptr, 0, small, sizeof small, &needed),
              IKLLM_ERR_BUFFER_TOO_SMALL);
    EXPECT_GT(needed, sizeof small);
}

TEST(Misuse, OutOfRangeIdsPositionsTokensAndAFullCache) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    const std::vector<ikllm_token> prompt = {1, 15, 27, 99};
    const std::vector<float> want = fresh_logits(f.model, prompt);
    const ikllm_status inv = IKLLM_ERR_INVALID_ARGUMENT;
    ikllm_token bad[2] = {f.n_vocab, 5};
    expect_error("token == n_vocab", ikllm_session_decode(f.session, bad, nullptr, nullptr, nullptr, 1, 0), inv);
    bad[0] = -1;
    expect_error("token < 0", ikllm_session_decode(f.session, bad, nullptr, nullptr, nullptr, 1, 0), inv);
    ikllm_token ok1 = 5;
    int32_t seq = 2;  // n_seq_max = 2
    expect_error("seq id == n_seq_max", ikllm_session_decode(f.session, &ok1, nullptr, &seq, nullptr, 1, 0), inv);
    seq = -1;
    expect_error("seq id < 0", ikllm_session_decode(f.session, &ok1, nullptr, &seq, nullptr, 1, 0), inv);
    int32_t pos = -3;
    expect_error("negative position", ikllm_session_decode(f.session, &ok1, &pos, nullptr, nullptr, 1, 0), inv);
    expect_error("n_tokens 0", ikllm_session_decode(f.session, &ok1, nullptr, nullptr, nullptr, 0, 0));
    expect_error("n_tokens < 0", ikllm_session_decode(f.session, &ok1, nullptr, nullptr, nullptr, -4, 0));
    expect_error("decode flags", ikllm_session_decode(f.session, &ok1, nullptr, nullptr, nullptr, 1, 77));
    const float* lg = nullptr;
    int32_t nv = 0;
    expect_error("logits before any decode", ikllm_session_logits(f.session, -1, &lg, &nv));
    expect_error("seq_remove bad id", ikllm_session_seq_remove(f.session, 9, 0, -1), inv);
    expect_error("seq_copy bad dst", ikllm_session_seq_copy(f.session, 0, 7, 0, -1), inv);
    expect_error("seq_keep bad id", ikllm_session_seq_keep(f.session, -2), inv);
    const char* text = nullptr;
    size_t len = 0;
    expect_error("detok_push out-of-range token", ikllm_detok_push(f.detok, f.n_vocab + 5, &text, &len), inv);
    char buf[16];
    size_t needed = 0;
    expect_error("token_to_piece out of range", ikllm_token_to_piece(f.model, -7, 0, buf, sizeof buf, &needed), inv);
    EXPECT_EQ(ikllm_token_is_eog(f.model, -7), 0);
    ikllm_token t = -1;
    expect_error("accept out-of-range token", ikllm_sampler_accept(f.sampler, &bad[0], 1), inv);

    // Now a real prompt; batch indices outside it are errors.
    ASSERT_EQ(ikllm_session_decode(f.session, prompt.data(), nullptr, nullptr, nullptr, (int32_t)prompt.size(), 0),
              IKLLM_OK);
    expect_error("logits index == n_tokens", ikllm_session_logits(f.session, (int32_t)prompt.size(), &lg, &nv), inv);
    expect_error("logits index without want_logits", ikllm_session_logits(f.session, 0, &lg, &nv));
    expect_error("sample index out of range", ikllm_sampler_sample(f.sampler, f.session, 99, &t), inv);
    int32_t repeat = 2;  // sequence 0 already holds position 2
    expect_error("position already held", ikllm_session_decode(f.session, &ok1, &repeat, nullptr, nullptr, 1, 0));
    // Fill the 16-cell cache with sequence 1, then one more token is IKLLM_CONTEXT_FULL.
    std::vector<ikllm_token> filler(12, 7);
    std::vector<int32_t> ones(12, 1);
    ASSERT_EQ(ikllm_session_decode(f.session, filler.data(), nullptr, ones.data(), nullptr, 12, 0), IKLLM_OK);
    int32_t one = 1;
    const ikllm_status full = ikllm_session_decode(f.session, &ok1, nullptr, &one, nullptr, 1, 0);
    EXPECT_EQ(full, IKLLM_CONTEXT_FULL) << ikllm_status_name(full) << " " << ikllm_last_error();
    std::vector<ikllm_token> big(40, 3);
    EXPECT_NE(ikllm_session_decode(f.session, big.data(), nullptr, nullptr, nullptr, 40, 0), IKLLM_OK);
    EXPECT_EQ(ikllm_session_seq_pos_max(f.session, 0), (int32_t)prompt.size() - 1) << "cache changed by a failure";
    EXPECT_EQ(ikllm_session_seq_pos_max(f.session, 1), 11);
    // Still usable: drop sequence 1 and decode the prompt again into sequence 1 -> same logits.
    ASSERT_EQ(ikllm_session_seq_remove(f.session, 1, 0, -1), IKLLM_OK);
    ASSERT_EQ(ikllm_session_decode(f.session, prompt.data(), nullptr, ones.data(), nullptr, (int32_t)prompt.size(), 0),
              IKLLM_OK);
    ASSERT_EQ(ikllm_session_logits(f.session, -1, &lg, &nv), IKLLM_OK);
    ASSERT_EQ(nv, (int32_t)want.size());
    for (int32_t i = 0; i < nv; ++i) ASSERT_NEAR(lg[i], want[i], 1e-4f) << i;
}

// MemAvailable + SwapFree in bytes (what the library checks a KV cache against).
uint64_t available_bytes() {
    FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kib = 0, avail = 0, swap = 0;
    while (std::fgets(line, sizeof line, f)) {
        if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) avail = kib;
        if (std::sscanf(line, "SwapFree: %llu kB", &kib) == 1) swap = kib;
    }
    std::fclose(f);
    return (avail + swap) * 1024;
}

TEST(Misuse, KvCacheBeyondMemoryIsRefusedWithBytesNeeded) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    uint64_t per_token = 0;
    ASSERT_EQ(ikllm_model_kv_bytes_per_token(f.model, "f32", &per_token), IKLLM_OK);
    const int32_t n_ctx = 16 * 1024 * 1024;  // the largest n_ctx the option allows
    const uint64_t need = per_token * (uint64_t)n_ctx;
    if (need <= available_bytes()) GTEST_SKIP() << "this machine could hold " << need << " bytes of KV cache";
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
    ikllm_options_set_int(o, "n_ctx", n_ctx);
    ikllm_options_set_string(o, "kv_type", "f32");
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(f.model, o, &s), IKLLM_ERR_OUT_OF_MEMORY) << ikllm_last_error();
    EXPECT_EQ(s, nullptr);
    EXPECT_EQ(ikllm_last_error_bytes_needed(), need) << ikllm_last_error();
    EXPECT_NE(std::strstr(ikllm_last_error(), "n_ctx"), nullptr) << ikllm_last_error();
    ikllm_options_free(o);
}

TEST(Misuse, ObjectsOutliveTheirModelHandle) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    ikllm_model* model = nullptr;
    ASSERT_EQ(ikllm_model_load(lib, model_path().c_str(), nullptr, nullptr, nullptr, nullptr, &model), IKLLM_OK);
    const std::vector<ikllm_token> prompt = {1, 15, 27, 99};
    const std::vector<float> want = fresh_logits(model, prompt);
    ikllm_session* s = nullptr;
    ikllm_detok* d = nullptr;
    ikllm_sampler* smp = nullptr;
    ASSERT_EQ(ikllm_session_create(model, nullptr, &s), IKLLM_OK);
    ASSERT_EQ(ikllm_detok_create(model, 0, &d), IKLLM_OK);
    ASSERT_EQ(ikllm_sampler_create(model, nullptr, &smp), IKLLM_OK);
    ikllm_model_free(model);  // the application drops its handle first...
    ikllm_lib_free(lib);      // ...and the library instance too
    ASSERT_EQ(ikllm_session_decode(s, prompt.data(), nullptr, nullptr, nullptr, (int32_t)prompt.size(), 0), IKLLM_OK);
    const float* lg = nullptr;
    int32_t nv = 0;
    ASSERT_EQ(ikllm_session_logits(s, -1, &lg, &nv), IKLLM_OK);
    EXPECT_EQ(std::vector<float>(lg, lg + nv), want);
    ikllm_token t = -1;
    ASSERT_EQ(ikllm_sampler_sample(smp, s, -1, &t), IKLLM_OK);
    const char* text = nullptr;
    size_t len = 0;
    EXPECT_EQ(ikllm_detok_push(d, t, &text, &len), IKLLM_OK);
    ikllm_session_free(s);
    ikllm_detok_free(d);  // the last reference: the model goes now (LeakSanitizer checks it does)
    ikllm_sampler_free(smp);
}

}  // namespace
