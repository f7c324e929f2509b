// ikllm_session_score_tokens: log-probabilities of a token sequence, checked against the
// log-softmax (computed here in double) of logits from one plain decode of the whole sequence,
// plus its buffer, context-full, cancel and bad-input behaviour.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ikllm.h"
#include "test_support.h"

namespace {

struct Fixture {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    ~Fixture() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};

ikllm_session* make_session(ikllm_model* m, int n_ctx, int n_batch, int n_seq = 1) {
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
    ikllm_options_set_int(o, "n_ctx", n_ctx);
    ikllm_options_set_int(o, "n_batch", n_batch);
    ikllm_options_set_int(o, "n_seq_max", n_seq);
    ikllm_options_set_int(o, "n_threads", 2);
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(m, o, &s), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(o);
    return s;
}

// A deterministic pseudo-random token sequence starting with BOS.
std::vector<int32_t> tokens(int n, int n_vocab) {
    std::vector<int32_t> t = {1};
    uint32_t x = 12345;
    while ((int)t.size() < n) {
        x = x * 1664525u + 1013904223u;
        t.push_back(3 + (int32_t)((x >> 8) % (uint32_t)(n_vocab - 3)));
    }
    return t;
}

class ScoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        IKLLM_REQUIRE_REFDATA();
        ASSERT_EQ(ikllm_lib_create(0, &f_.lib), IKLLM_OK);
        const std::string path = ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf";
        ASSERT_EQ(ikllm_model_load(f_.lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &f_.model), IKLLM_OK)
            << ikllm_last_error();
        n_vocab_ = ikllm_model_n_vocab(f_.model);
        toks_ = tokens(40, n_vocab_);
        // Reference: every position's logits from ONE decode, log-softmax in double.
        ikllm_session* s = make_session(f_.model, 64, 64);
        std::vector<int32_t> want(toks_.size(), 1);
        ASSERT_EQ(ikllm_session_decode(s, toks_.data(), nullptr, nullptr, want.data(), (int32_t)toks_.size(), 0),
                  IKLLM_OK);
        for (size_t i = 0; i < toks_.size(); ++i) {
            const float* lg = nullptr;
            ASSERT_EQ(ikllm_session_logits(s, (int32_t)i, &lg, nullptr), IKLLM_OK);
            if (i + 1 == toks_.size()) last_logits_.assign(lg, lg + n_vocab_);
            if (i + 1 == toks_.size()) break;
            double mx = lg[0], sum = 0;
            for (int v = 1; v < n_vocab_; ++v) mx = std::max(mx, (double)lg[v]);
            for (int v = 0; v < n_vocab_; ++v) sum += std::exp((double)lg[v] - mx);
            ref_.push_back((double)lg[toks_[i + 1]] - mx - std::log(sum));
        }
        ikllm_session_free(s);
    }
    Fixture f_;
    int n_vocab_ = 0;
    std::vector<int32_t> toks_;
    std::vector<double> ref_;  // ref_[i] = ln p(toks_[i + 1] | toks_[0..i])
    std::vector<float> last_logits_;
};

TEST_F(ScoreTest, MatchesLogSoftmaxOfOneDecodeAcrossMicroBatches) {
    for (int n_batch : {40, 16, 7, 1}) {
        ikllm_session* s = make_session(f_.model, 64, n_batch);
        std::vector<float> out(toks_.size() - 1);
        size_t needed = 0;
        ASSERT_EQ(ikllm_session_score_tokens(s, 0, toks_.data(), (int32_t)toks_.size(), 0, out.data(), out.size(),
                                             &needed, nullptr, nullptr),
                  IKLLM_OK)
            << ikllm_last_error();
        EXPECT_EQ(needed, toks_.size() - 1);
        for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], ref_[i], 1e-4) << "n_batch " << n_batch << " i " << i;
        // The logits after the last token stay readable.
        const float* lg = nullptr;
        ASSERT_EQ(ikllm_session_logits(s, -1, &lg, nullptr), IKLLM_OK);
        for (int v = 0; v < n_vocab_; v += 97) EXPECT_NEAR(lg[v], last_logits_[v], 1e-3);
        EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), (int)toks_.size() - 1);
        ikllm_session_free(s);
    }
}

TEST_F(ScoreTest, FirstSkipsTheHeadAndContinuationUsesTheCache) {
    ikllm_session* s = make_session(f_.model, 96, 8, 2);
    // Second half of the window only (the perplexity convention), in sequence 1.
    const int n = (int)toks_.size(), first = n / 2;
    std::vector<float> out(n - 1 - first);
    ASSERT_EQ(ikllm_session_score_tokens(s, 1, toks_.data(), n, first, out.data(), out.size(), nullptr, nullptr, nullptr),
              IKLLM_OK)
        << ikllm_last_error();
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], ref_[first + i], 1e-4);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), -1);
    // Sequence 0: decode a prefix, then score the rest as its continuation.
    const int pre = 13;
    ASSERT_EQ(ikllm_session_decode(s, toks_.data(), nullptr, nullptr, nullptr, pre, 0), IKLLM_OK);
    std::vector<float> rest(n - pre - 1);
    ASSERT_EQ(ikllm_session_score_tokens(s, 0, toks_.data() + pre, n - pre, 0, rest.data(), rest.size(), nullptr,
                                         nullptr, nullptr),
              IKLLM_OK)
        << ikllm_last_error();
    for (size_t i = 0; i < rest.size(); ++i) EXPECT_NEAR(rest[i], ref_[pre + i], 1e-4);
    ikllm_session_free(s);
}

int32_t cancel_at_half(void* calls, float p) {
    ++*static_cast<int*>(calls);
    return p >= 0.5f;
}

TEST_F(ScoreTest, FailuresLeaveTheSequenceAsItWas) {
    ikllm_session* s = make_session(f_.model, 40, 8);
    ASSERT_EQ(ikllm_session_decode(s, toks_.data(), nullptr, nullptr, nullptr, 5, 0), IKLLM_OK);
    const int n = 30;
    std::vector<float> out(n - 1);
    size_t needed = 0;
    // Buffer too small: nothing decoded, *needed says how many.
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, toks_.data() + 5, n, 0, out.data(), 3, &needed, nullptr, nullptr),
              IKLLM_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(needed, (size_t)(n - 1));
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), 4);
    // Cancelled by the progress callback after some micro-batches.
    int calls = 0;
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, toks_.data() + 5, n, 0, out.data(), out.size(), nullptr, cancel_at_half,
                                         &calls),
              IKLLM_CANCELLED);
    EXPECT_GE(calls, 2);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), 4);
    // More tokens than free cells.
    std::vector<float> big(toks_.size() - 1);
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, toks_.data(), (int32_t)toks_.size(), 0, big.data(), big.size(), nullptr,
                                         nullptr, nullptr),
              IKLLM_CONTEXT_FULL);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), 4);
    // A bad id late in the sequence is refused before anything is decoded.
    std::vector<int32_t> bad(toks_.begin(), toks_.begin() + 20);
    bad[17] = n_vocab_;
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, bad.data(), 20, 0, out.data(), out.size(), nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), 4);
    // Argument checks.
    EXPECT_EQ(ikllm_session_score_tokens(nullptr, 0, toks_.data(), 4, 0, out.data(), 3, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, toks_.data(), 4, 4, out.data(), 3, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_score_tokens(s, 1, toks_.data(), 4, 0, out.data(), 3, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, toks_.data(), 0, 0, out.data(), 3, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, toks_.data(), 4, 0, nullptr, 3, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    // One token scores nothing but is decoded.
    EXPECT_EQ(ikllm_session_score_tokens(s, 0, toks_.data() + 5, 1, 0, nullptr, 0, &needed, nullptr, nullptr), IKLLM_OK);
    EXPECT_EQ(needed, 0u);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), 5);
    ikllm_session_free(s);
}

}  // namespace
