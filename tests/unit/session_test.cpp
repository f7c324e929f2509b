// Session behaviour through the C API: batch invariance (several sequences in one batch give
// the logits each gives alone) and the sequence operations (copy, remove, keep, shift).
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

bool load(Fixture& f, const std::string& path) {
    if (ikllm_lib_create(0, &f.lib) != IKLLM_OK) return false;
    return ikllm_model_load(f.lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &f.model) == IKLLM_OK;
}

ikllm_session* make_session(ikllm_model* m, int n_seq, int n_ctx = 256, int n_batch = 512) {
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
    ikllm_options_set_int(o, "n_ctx", n_ctx);
    ikllm_options_set_int(o, "n_seq_max", n_seq);
    ikllm_options_set_int(o, "n_batch", n_batch);
    ikllm_options_set_int(o, "n_threads", 2);
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(m, o, &s), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(o);
    return s;
}

std::vector<float> logits_of(ikllm_session* s, int index) {
    const float* p = nullptr;
    int32_t n = 0;
    EXPECT_EQ(ikllm_session_logits(s, index, &p, &n), IKLLM_OK) << ikllm_last_error();
    return p ? std::vector<float>(p, p + n) : std::vector<float>();
}

double rms_rel(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += (double)(a[i] - b[i]) * (a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

// Logits of the last token after decoding `toks` at positions start.. in a fresh session.
std::vector<float> alone(ikllm_model* m, const std::vector<int32_t>& toks, int start = 0) {
    ikllm_session* s = make_session(m, 1);
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < toks.size(); ++i) pos[i] = start + (int)i;
    EXPECT_EQ(ikllm_session_decode(s, toks.data(), pos.data(), nullptr, nullptr, (int32_t)toks.size(), 0), IKLLM_OK)
        << ikllm_last_error();
    auto l = logits_of(s, -1);
    ikllm_session_free(s);
    return l;
}

class SessionTest : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        IKLLM_REQUIRE_REFDATA();
        path_ = ikllm::test::refdata_dir() + "/models/" + GetParam();
        ASSERT_TRUE(load(f_, path_)) << ikllm_last_error();
    }
    Fixture f_;
    std::string path_;
};

const std::vector<int32_t> kA = {1, 450, 1996, 1354, 1701, 432, 1204, 975, 278, 1366, 1203};
const std::vector<int32_t> kB = {1, 306, 763, 304, 1574, 263, 1298, 1889};

TEST_P(SessionTest, BatchOfTwoSequencesEqualsEachAlone) {
    ikllm_session* s = make_session(f_.model, 2);
    std::vector<int32_t> toks, seq, want;
    for (size_t i = 0; i < kA.size(); ++i) { toks.push_back(kA[i]); seq.push_back(0); want.push_back(i + 1 == kA.size()); }
    for (size_t i = 0; i < kB.size(); ++i) { toks.push_back(kB[i]); seq.push_back(1); want.push_back(i + 1 == kB.size()); }
    ASSERT_EQ(ikllm_session_decode(s, toks.data(), nullptr, seq.data(), want.data(), (int32_t)toks.size(), 0), IKLLM_OK)
        << ikllm_last_error();
    auto la = logits_of(s, (int)kA.size() - 1);
    auto lb = logits_of(s, (int)toks.size() - 1);
    EXPECT_LT(rms_rel(la, alone(f_.model, kA)), 1e-5);
    EXPECT_LT(rms_rel(lb, alone(f_.model, kB)), 1e-5);
    // Interleaved order too, and a next step decoded for both sequences in one batch.
    int32_t next[2] = {kA[3], kB[2]};
    int32_t nseq[2] = {0, 1};
    int32_t nwant[2] = {1, 1};
    ASSERT_EQ(ikllm_session_decode(s, next, nullptr, nseq, nwant, 2, 0), IKLLM_OK) << ikllm_last_error();
    auto a2 = kA; a2.push_back(kA[3]);
    auto b2 = kB; b2.push_back(kB[2]);
    EXPECT_LT(rms_rel(logits_of(s, 0), alone(f_.model, a2)), 1e-5);
    EXPECT_LT(rms_rel(logits_of(s, 1), alone(f_.model, b2)), 1e-5);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), (int)kA.size());
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 1), (int)kB.size());
    ikllm_session_free(s);
}

TEST_P(SessionTest, CopyForksASequence) {
    ikllm_session* s = make_session(f_.model, 2);
    ASSERT_EQ(ikllm_session_decode(s, kA.data(), nullptr, nullptr, nullptr, (int32_t)kA.size(), 0), IKLLM_OK);
    ASSERT_EQ(ikllm_session_seq_copy(s, 0, 1, 0, -1), IKLLM_OK);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 1), (int)kA.size() - 1);
    int32_t toks[2] = {kB[1], kB[2]};
    int32_t seq[2] = {0, 1};
    int32_t want[2] = {1, 1};
    ASSERT_EQ(ikllm_session_decode(s, toks, nullptr, seq, want, 2, 0), IKLLM_OK) << ikllm_last_error();
    auto a0 = kA; a0.push_back(kB[1]);
    auto a1 = kA; a1.push_back(kB[2]);
    EXPECT_LT(rms_rel(logits_of(s, 0), alone(f_.model, a0)), 1e-5);
    EXPECT_LT(rms_rel(logits_of(s, 1), alone(f_.model, a1)), 1e-5);
    // keep(1) drops sequence 0 entirely; the shared prefix stays for 1.
    ASSERT_EQ(ikllm_session_seq_keep(s, 1), IKLLM_OK);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), -1);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 1), (int)kA.size());
    ikllm_session_free(s);
}

TEST_P(SessionTest, RemoveThenRedecodeMatches) {
    ikllm_session* s = make_session(f_.model, 1);
    ASSERT_EQ(ikllm_session_decode(s, kA.data(), nullptr, nullptr, nullptr, (int32_t)kA.size(), 0), IKLLM_OK);
    const int keep = 5;
    ASSERT_EQ(ikllm_session_seq_remove(s, 0, keep, -1), IKLLM_OK);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), keep - 1);
    std::vector<int32_t> tail(kA.begin() + keep, kA.end());
    ASSERT_EQ(ikllm_session_decode(s, tail.data(), nullptr, nullptr, nullptr, (int32_t)tail.size(), 0), IKLLM_OK)
        << ikllm_last_error();
    EXPECT_LT(rms_rel(logits_of(s, -1), alone(f_.model, kA)), 1e-5);
    ikllm_session_free(s);
}

TEST_P(SessionTest, ShiftKeepsRelativePositions) {
    // RoPE attention depends only on relative positions: a prompt shifted by +7 and continued
    // must give the logits of the same tokens decoded fresh at positions 7...
    ikllm_session* s = make_session(f_.model, 1);
    std::vector<int32_t> head(kA.begin(), kA.end() - 1);
    ASSERT_EQ(ikllm_session_decode(s, head.data(), nullptr, nullptr, nullptr, (int32_t)head.size(), 0), IKLLM_OK);
    ASSERT_EQ(ikllm_session_seq_shift(s, 0, 0, -1, 7), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), (int)head.size() - 1 + 7);
    int32_t last = kA.back();
    ASSERT_EQ(ikllm_session_decode(s, &last, nullptr, nullptr, nullptr, 1, 0), IKLLM_OK);
    // Keys were rounded to f16 once more after re-rotation: allow that.
    EXPECT_LT(rms_rel(logits_of(s, -1), alone(f_.model, kA, 7)), 2e-3);
    ikllm_session_free(s);
}

TEST_P(SessionTest, BadArgumentsAreErrorsAndLeaveTheCacheAlone) {
    ikllm_session* s = make_session(f_.model, 1, 16);
    int32_t bad = 1 << 30;
    EXPECT_EQ(ikllm_session_decode(s, &bad, nullptr, nullptr, nullptr, 1, 0), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ikllm_last_error()).find("out of range"), std::string::npos);
    int32_t seq = 3, tok = 1;
    EXPECT_EQ(ikllm_session_decode(s, &tok, nullptr, &seq, nullptr, 1, 0), IKLLM_ERR_INVALID_ARGUMENT);
    std::vector<int32_t> many(17, 1);
    EXPECT_EQ(ikllm_session_decode(s, many.data(), nullptr, nullptr, nullptr, 17, 0), IKLLM_CONTEXT_FULL);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), -1);  // unchanged
    ASSERT_EQ(ikllm_session_decode(s, kA.data(), nullptr, nullptr, nullptr, (int32_t)kA.size(), 0), IKLLM_OK);
    int32_t pos = 2;
    EXPECT_EQ(ikllm_session_decode(s, &tok, &pos, nullptr, nullptr, 1, 0), IKLLM_ERR_INVALID_ARGUMENT);  // held already
    const float* p;
    EXPECT_EQ(ikllm_session_logits(s, 0, &p, nullptr), IKLLM_ERR_INVALID_ARGUMENT);  // no logits requested
    EXPECT_EQ(ikllm_session_decode(nullptr, &tok, nullptr, nullptr, nullptr, 1, 0), IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_session_free(s);
}

INSTANTIATE_TEST_SUITE_P(Models, SessionTest, ::testing::Values("llama-tiny-f16.gguf", "qwen3-tiny-f16.gguf"));

TEST(Sampler, SameSeedSameTokensAndGreedyIsArgmax) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    ASSERT_TRUE(load(f, ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf"));
    std::vector<float> logits(2000);
    for (int i = 0; i < 2000; ++i) logits[i] = std::sin(i * 0.37f) * 3;
    auto run = [&](uint64_t seed, double temp) {
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o);
        ikllm_options_set_int(o, "seed", (int64_t)seed);
        ikllm_options_set_float(o, "temperature", temp);
        ikllm_sampler* smp = nullptr;
        EXPECT_EQ(ikllm_sampler_create(f.model, o, &smp), IKLLM_OK);
        ikllm_options_free(o);
        std::vector<int32_t> out;
        for (int i = 0; i < 32; ++i) {
            int32_t t;
            EXPECT_EQ(ikllm_sampler_sample_logits(smp, logits.data(), 2000, &t), IKLLM_OK);
            out.push_back(t);
        }
        ikllm_sampler_free(smp);
        return out;
    };
    EXPECT_EQ(run(7, 1.0), run(7, 1.0));
    EXPECT_NE(run(7, 1.0), run(8, 1.0));
    const int argmax = (int)(std::max_element(logits.begin(), logits.end()) - logits.begin());
    for (int32_t t : run(1, 0.0)) EXPECT_EQ(t, argmax);
}

// ignore_eos removes the whole end-of-generation set from the candidates, under greedy and
// random draws alike; without it the same logits do produce those tokens.
TEST(Sampler, IgnoreEosNeverSamplesEndOfGeneration) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    ASSERT_TRUE(load(f, ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf"));
    const int32_t n_vocab = ikllm_model_n_vocab(f.model);
    std::vector<int32_t> eog;
    for (int32_t id = 0; id < n_vocab; ++id)
        if (ikllm_token_is_eog(f.model, id)) eog.push_back(id);
    ASSERT_FALSE(eog.empty()) << "the test model has no end-of-generation token";
    // The EOG tokens dominate: greedy would pick one, and a hot draw nearly always would.
    std::vector<float> logits(n_vocab, 0.0f);
    for (size_t i = 0; i < eog.size(); ++i) logits[eog[i]] = 20.0f + (float)i;
    auto run = [&](int64_t ignore, double temp) {
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o);
        EXPECT_EQ(ikllm_options_set_int(o, "ignore_eos", ignore), IKLLM_OK);
        ikllm_options_set_float(o, "temperature", temp);
        ikllm_options_set_int(o, "top_k", 0);
        ikllm_options_set_float(o, "top_p", 1.0);
        ikllm_options_set_float(o, "min_p", 0.0);
        ikllm_sampler* smp = nullptr;
        EXPECT_EQ(ikllm_sampler_create(f.model, o, &smp), IKLLM_OK);
        ikllm_options_free(o);
        int n_eog = 0;
        for (int i = 0; i < 64; ++i) {
            int32_t t = -1;
            EXPECT_EQ(ikllm_sampler_sample_logits(smp, logits.data(), n_vocab, &t), IKLLM_OK);
            n_eog += ikllm_token_is_eog(f.model, t);
        }
        ikllm_sampler_free(smp);
        return n_eog;
    };
    EXPECT_EQ(run(0, 0.0), 64);
    EXPECT_GT(run(0, 1.0), 60);
    EXPECT_EQ(run(1, 0.0), 0);
    EXPECT_EQ(run(1, 1.0), 0);
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o);
    EXPECT_NE(ikllm_options_set_int(o, "ignore_eos", 2), IKLLM_OK);  // a flag: 0 or 1
    ikllm_options_free(o);
}

}  // namespace
