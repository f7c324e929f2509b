// Embeddings mode through the C API: hidden states are the LM head's input (W_out . h = logits),
// logits are unchanged by the mode, pooling follows its definition per sequence (by position,
// across micro-batches), and every misuse gives a clear error. Pooling math is also checked
// on hand-made rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ikllm.h"
#include "session/pooling.h"
#include "test_support.h"

namespace {

// ---- pooling math on hand-made rows (no model) ----------------------------------------
TEST(Pooling, MeanClsLastAndNormalisation) {
    // 5 tokens, n_embd 2: seq 1 at batch 0,2,4 (positions 7,5,6), seq 0 at batch 1,3 (positions 0,1).
    const float h[] = {1, 2, 10, 20, 3, 4, 30, 40, 5, 6};
    const int32_t seq[] = {1, 0, 1, 0, 1}, pos[] = {7, 0, 5, 1, 6};
    using ikllm::Pooling;
    auto mean = ikllm::pool_sequences(h, 5, 2, seq, pos, 3, Pooling::mean, false);
    ASSERT_EQ(mean.row_of_seq[2], -1);  // absent sequence
    const float* m0 = mean.data.data() + mean.row_of_seq[0] * 2;
    const float* m1 = mean.data.data() + mean.row_of_seq[1] * 2;
    EXPECT_FLOAT_EQ(m0[0], 20.0f);
    EXPECT_FLOAT_EQ(m0[1], 30.0f);
    EXPECT_FLOAT_EQ(m1[0], 3.0f);
    EXPECT_FLOAT_EQ(m1[1], 4.0f);
    auto cls = ikllm::pool_sequences(h, 5, 2, seq, pos, 3, Pooling::cls, false);
    EXPECT_FLOAT_EQ(cls.data[cls.row_of_seq[1] * 2], 3.0f);  // position 5 = batch 2
    EXPECT_FLOAT_EQ(cls.data[cls.row_of_seq[0] * 2], 10.0f);
    auto last = ikllm::pool_sequences(h, 5, 2, seq, pos, 3, Pooling::last, true);
    const float* l1 = last.data.data() + last.row_of_seq[1] * 2;  // position 7 = batch 0: (1,2)/sqrt(5)
    EXPECT_NEAR(l1[0], 1 / std::sqrt(5.0f), 1e-7);
    EXPECT_NEAR(l1[1], 2 / std::sqrt(5.0f), 1e-7);
    float zero[3] = {0, 0, 0};
    ikllm::l2_normalize(zero, 3);
    EXPECT_EQ(zero[0], 0.0f);
    ikllm::Pooling p;
    EXPECT_TRUE(ikllm::pooling_from_name("first", &p) && p == Pooling::cls);
    EXPECT_FALSE(ikllm::pooling_from_name("rank", &p));
}

// ---- through the C API on a reference model ------------------------------------------
struct Fixture {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    Fixture() {
        const std::string path = ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf";
        EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
        EXPECT_EQ(ikllm_model_load(lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &model), IKLLM_OK)
            << ikllm_last_error();
    }
    ~Fixture() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
    ikllm_session* session(int embeddings, const char* pooling = "", int normalize = 1, int n_seq = 3,
                           int n_batch = 512) {
        ikllm_options* o = nullptr;
        EXPECT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &o), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(o, "n_ctx", 256), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(o, "n_seq_max", n_seq), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(o, "n_batch", n_batch), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(o, "n_threads", 2), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(o, "embeddings", embeddings), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_string(o, "pooling", pooling), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(o, "embd_normalize", normalize), IKLLM_OK);
        ikllm_session* s = nullptr;
        EXPECT_EQ(ikllm_session_create(model, o, &s), IKLLM_OK) << ikllm_last_error();
        ikllm_options_free(o);
        return s;
    }
};

const std::vector<int32_t> kTokens = {1, 622, 1887, 1394, 720, 272, 1570, 798, 1183, 1240};  // vocabulary of 2000

std::vector<float> row(const float* p, int32_t n) { return std::vector<float>(p, p + n); }

double rms_rel(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += (double)(a[i] - b[i]) * (a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return std::sqrt(num / den);
}

TEST(SessionEmbed, OptionsAreListedAndChecked) {
    ikllm_options* o = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &o), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_string(o, "pooling", "median"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(ikllm_last_error(), "pooling"), nullptr);
    EXPECT_EQ(ikllm_options_set_int(o, "embeddings", 2), IKLLM_ERR_INVALID_ARGUMENT);
    for (const char* p : {"", "none", "mean", "cls", "first", "last"})
        EXPECT_EQ(ikllm_options_set_string(o, "pooling", p), IKLLM_OK) << p;
    int found = 0;
    for (int32_t i = 0; i < ikllm_option_count(IKLLM_OPTIONS_SESSION); ++i) {
        const char* name = nullptr;
        ASSERT_EQ(ikllm_option_info(IKLLM_OPTIONS_SESSION, i, &name, nullptr, nullptr, nullptr, nullptr, nullptr),
                  IKLLM_OK);
        for (const char* k : {"embeddings", "pooling", "embd_normalize"}) found += std::strcmp(name, k) == 0;
    }
    EXPECT_EQ(found, 3);
    ikllm_options_free(o);
}

TEST(SessionEmbed, ErrorsAreClear) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    const float* out = reinterpret_cast<const float*>(0x1);
    int32_t n = 0;
    // Embeddings off.
    ikllm_session* off = f.session(0);
    EXPECT_EQ(ikllm_session_pooling(off), -1);
    ASSERT_EQ(ikllm_session_decode(off, kTokens.data(), nullptr, nullptr, nullptr, (int32_t)kTokens.size(), 0), IKLLM_OK);
    EXPECT_EQ(ikllm_session_hidden_state(off, 0, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(out, nullptr);
    EXPECT_NE(std::strstr(ikllm_last_error(), "embeddings=1"), nullptr) << ikllm_last_error();
    out = reinterpret_cast<const float*>(0x1);
    EXPECT_EQ(ikllm_session_embeddings(off, 0, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(out, nullptr);
    EXPECT_NE(std::strstr(ikllm_last_error(), "embeddings=1"), nullptr) << ikllm_last_error();
    ikllm_session_free(off);

    // Embeddings on, mean pooling: before any decode, then bad indices and sequences.
    ikllm_session* s = f.session(1, "mean");
    EXPECT_EQ(ikllm_session_pooling(s), IKLLM_POOLING_MEAN);
    EXPECT_EQ(ikllm_session_hidden_state(s, -1, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_embeddings(s, 0, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(ikllm_last_error(), "decode"), nullptr) << ikllm_last_error();
    const std::vector<int32_t> seqs = {0, 0, 0, 1, 1};
    ASSERT_EQ(ikllm_session_decode(s, kTokens.data(), nullptr, seqs.data(), nullptr, 5, 0), IKLLM_OK);
    EXPECT_EQ(ikllm_session_hidden_state(s, 5, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(ikllm_last_error(), "batch index 5"), nullptr) << ikllm_last_error();
    EXPECT_EQ(ikllm_session_embeddings(s, 2, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);  // no tokens in the batch
    EXPECT_NE(std::strstr(ikllm_last_error(), "no tokens"), nullptr) << ikllm_last_error();
    EXPECT_EQ(ikllm_session_embeddings(s, 3, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);  // >= n_seq_max
    EXPECT_EQ(ikllm_session_embeddings(s, -1, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_embeddings(s, 0, nullptr, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_hidden_state(nullptr, 0, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_pooling(nullptr), -1);
    // The LM head ran only for the default want_logits token (the last).
    const float* lg = nullptr;
    EXPECT_EQ(ikllm_session_logits(s, 0, &lg, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_logits(s, 4, &lg, nullptr), IKLLM_OK);
    // A failing decode leaves the previous outputs in place.
    ASSERT_EQ(ikllm_session_embeddings(s, 1, &out, &n), IKLLM_OK);
    const std::vector<float> before = row(out, n);
    const int32_t bad_token = 1 << 30;
    EXPECT_EQ(ikllm_session_decode(s, &bad_token, nullptr, nullptr, nullptr, 1, 0), IKLLM_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(ikllm_session_embeddings(s, 1, &out, &n), IKLLM_OK);
    EXPECT_EQ(row(out, n), before);
    ikllm_session_free(s);

    // Pooling none: hidden states only.
    ikllm_session* none = f.session(1, "none");
    EXPECT_EQ(ikllm_session_pooling(none), IKLLM_POOLING_NONE);
    ASSERT_EQ(ikllm_session_decode(none, kTokens.data(), nullptr, nullptr, nullptr, 3, 0), IKLLM_OK);
    EXPECT_EQ(ikllm_session_hidden_state(none, 2, &out, &n), IKLLM_OK);
    EXPECT_EQ(ikllm_session_embeddings(none, 0, &out, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(ikllm_last_error(), "none"), nullptr) << ikllm_last_error();
    ikllm_session_free(none);

    // The model has no pooling_type key: the default is none.
    ikllm_session* def = f.session(1, "");
    EXPECT_EQ(ikllm_session_pooling(def), IKLLM_POOLING_NONE);
    ikllm_session_free(def);
}

TEST(SessionEmbed, HiddenStatesAreTheLmHeadInput) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    const int32_t T = (int32_t)kTokens.size();
    const int32_t n_embd = ikllm_model_n_embd(f.model), n_vocab = ikllm_model_n_vocab(f.model);
    std::vector<int32_t> all(T, 1);
    // Logits without the mode...
    ikllm_session* off = f.session(0);
    ASSERT_EQ(ikllm_session_decode(off, kTokens.data(), nullptr, nullptr, all.data(), T, 0), IKLLM_OK);
    std::vector<std::vector<float>> plain;
    for (int32_t i = 0; i < T; ++i) {
        const float* lg = nullptr;
        ASSERT_EQ(ikllm_session_logits(off, i, &lg, nullptr), IKLLM_OK);
        plain.push_back(row(lg, n_vocab));
    }
    ikllm_session_free(off);
    // ...are the same with it (same per-row norm, same product).
    ikllm_session* s = f.session(1, "none");
    ASSERT_EQ(ikllm_session_decode(s, kTokens.data(), nullptr, nullptr, all.data(), T, 0), IKLLM_OK);
    size_t w_size = 0;
    ASSERT_EQ(ikllm_model_tensor_dequantize(f.model, "output.weight", nullptr, 0, &w_size), IKLLM_ERR_BUFFER_TOO_SMALL);
    ASSERT_EQ(w_size, (size_t)n_vocab * n_embd);
    std::vector<float> W(w_size);
    ASSERT_EQ(ikllm_model_tensor_dequantize(f.model, "output.weight", W.data(), W.size(), &w_size), IKLLM_OK);
    for (int32_t i = 0; i < T; ++i) {
        const float* lg = nullptr;
        const float* h = nullptr;
        int32_t n = 0;
        ASSERT_EQ(ikllm_session_logits(s, i, &lg, nullptr), IKLLM_OK);
        EXPECT_EQ(row(lg, n_vocab), plain[i]) << "logits changed by embeddings mode at " << i;
        ASSERT_EQ(ikllm_session_hidden_state(s, i, &h, &n), IKLLM_OK);
        ASSERT_EQ(n, n_embd);
        std::vector<float> prod(n_vocab);
        for (int32_t v = 0; v < n_vocab; ++v) {
            double acc = 0;
            for (int32_t j = 0; j < n_embd; ++j) acc += (double)W[(size_t)v * n_embd + j] * h[j];
            prod[v] = (float)acc;
        }
        EXPECT_LT(rms_rel(prod, plain[i]), 1e-5) << "W_out . h != logits at " << i;
    }
    const float* last = nullptr;
    const float* minus1 = nullptr;
    ASSERT_EQ(ikllm_session_hidden_state(s, T - 1, &last, nullptr), IKLLM_OK);
    ASSERT_EQ(ikllm_session_hidden_state(s, -1, &minus1, nullptr), IKLLM_OK);
    EXPECT_EQ(last, minus1);
    ikllm_session_free(s);
}

TEST(SessionEmbed, PoolingPerSequenceByPositionAcrossMicroBatches) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    const int32_t n_embd = ikllm_model_n_embd(f.model);
    // Two sequences interleaved, sequence 1 given in reverse position order; micro-batches of 3.
    const std::vector<int32_t> tokens = {1, 1, 622, 1183, 1887, 1240, 1394};
    const std::vector<int32_t> seqs = {0, 1, 0, 1, 0, 1, 0};
    const std::vector<int32_t> pos = {0, 2, 1, 1, 2, 0, 3};
    const std::vector<int32_t> none(tokens.size(), 0);
    for (const char* pooling : {"mean", "cls", "last"}) {
        ikllm_session* s = f.session(1, pooling, 0, 2, 3);
        ASSERT_EQ(ikllm_session_decode(s, tokens.data(), pos.data(), seqs.data(), none.data(), (int32_t)tokens.size(), 0),
                  IKLLM_OK);
        for (int32_t q = 0; q < 2; ++q) {
            std::vector<double> want(n_embd, 0.0);
            int32_t count = 0, best = -1;
            for (int32_t i = 0; i < (int32_t)tokens.size(); ++i) {
                if (seqs[i] != q) continue;
                const float* h = nullptr;
                ASSERT_EQ(ikllm_session_hidden_state(s, i, &h, nullptr), IKLLM_OK);
                for (int32_t j = 0; j < n_embd; ++j) want[j] += h[j];
                ++count;
                const bool better = best < 0 || (!std::strcmp(pooling, "cls") ? pos[i] < pos[best] : pos[i] > pos[best]);
                if (better) best = i;
            }
            if (std::strcmp(pooling, "mean") != 0) {
                const float* h = nullptr;
                ASSERT_EQ(ikllm_session_hidden_state(s, best, &h, nullptr), IKLLM_OK);
                for (int32_t j = 0; j < n_embd; ++j) want[j] = h[j];
                count = 1;
            }
            const float* e = nullptr;
            ASSERT_EQ(ikllm_session_embeddings(s, q, &e, nullptr), IKLLM_OK);
            for (int32_t j = 0; j < n_embd; ++j) EXPECT_NEAR(e[j], want[j] / count, 1e-6) << pooling << " seq " << q;
        }
        ikllm_session_free(s);
    }
    // The micro-batched hidden states equal one-batch ones (sequence 0 alone, same positions).
    ikllm_session* a = f.session(1, "mean", 1, 1, 2);
    ikllm_session* b = f.session(1, "mean", 1, 1, 512);
    ASSERT_EQ(ikllm_session_decode(a, kTokens.data(), nullptr, nullptr, nullptr, 7, 0), IKLLM_OK);
    ASSERT_EQ(ikllm_session_decode(b, kTokens.data(), nullptr, nullptr, nullptr, 7, 0), IKLLM_OK);
    const float *ea = nullptr, *eb = nullptr;
    ASSERT_EQ(ikllm_session_embeddings(a, 0, &ea, nullptr), IKLLM_OK);
    ASSERT_EQ(ikllm_session_embeddings(b, 0, &eb, nullptr), IKLLM_OK);
    EXPECT_LT(rms_rel(row(ea, n_embd), row(eb, n_embd)), 1e-5);
    double norm = 0;
    for (int32_t j = 0; j < n_embd; ++j) norm += (double)ea[j] * ea[j];
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-6);
    ikllm_session_free(a);
    ikllm_session_free(b);
}

}  // namespace
