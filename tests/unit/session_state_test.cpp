// Session state through the C API: save/restore round trips continue with bit-identical logits
// (standard and MLA caches, every KV type, several sequences with shared cells), restored
// sessions still match the reference engine's greedy steps, sampler RNG/history round trips,
// incompatible / truncated / corrupt states are clear errors that change nothing, atomic files,
// the prompt cache and the context shift.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "ikllm.h"
#include "test_support.h"

namespace {

using Tokens = std::vector<int32_t>;
using Bytes = std::vector<uint8_t>;

struct M {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    explicit M(const std::string& stem) {
        ikllm_lib_create(0, &lib);
        const std::string p = ikllm::test::refdata_dir() + "/models/" + stem + ".gguf";
        EXPECT_EQ(ikllm_model_load(lib, p.c_str(), nullptr, nullptr, nullptr, nullptr, &model), IKLLM_OK)
            << ikllm_last_error();
    }
    ~M() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};

struct SessionPtr {
    ikllm_session* s = nullptr;
    ~SessionPtr() { ikllm_session_free(s); }
    operator ikllm_session*() const { return s; }
};

ikllm_status make_session(ikllm_model* m, SessionPtr& out, int n_seq = 1, int n_ctx = 128, const char* kv = "f16") {
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
    ikllm_options_set_int(o, "n_ctx", n_ctx);
    ikllm_options_set_int(o, "n_seq_max", n_seq);
    ikllm_options_set_int(o, "n_threads", 2);
    EXPECT_EQ(ikllm_options_set_string(o, "kv_type", kv), IKLLM_OK);
    const ikllm_status st = ikllm_session_create(m, o, &out.s);
    ikllm_options_free(o);
    return st;
}

Tokens ref_tokens(const std::string& stem, const char* file = "tokens.txt") {
    std::istringstream in(ikllm::test::read_text_file(ikllm::test::refdata_dir() + "/refs/" + stem + "/" + file));
    Tokens t;
    for (int32_t x; in >> x;) t.push_back(x);
    return t;
}

std::vector<float> logits(ikllm_session* s, int index = -1) {
    const float* p = nullptr;
    int32_t n = 0;
    EXPECT_EQ(ikllm_session_logits(s, index, &p, &n), IKLLM_OK) << ikllm_last_error();
    return p ? std::vector<float>(p, p + n) : std::vector<float>();
}

// Decodes toks into one sequence (next positions); returns the last token's logits.
std::vector<float> feed(ikllm_session* s, const Tokens& toks, int32_t seq = 0) {
    std::vector<int32_t> seqs(toks.size(), seq);
    EXPECT_EQ(ikllm_session_decode(s, toks.data(), nullptr, seqs.data(), nullptr, (int32_t)toks.size(), 0), IKLLM_OK)
        << ikllm_last_error();
    return logits(s);
}

double rms_rel(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && !a.empty() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

Bytes save(ikllm_session* s, const int32_t* seqs = nullptr, int32_t n_seqs = 0, ikllm_sampler* smp = nullptr) {
    size_t need = 0;
    EXPECT_EQ(ikllm_session_state_save(s, seqs, n_seqs, smp, 0, nullptr, 0, &need), IKLLM_ERR_BUFFER_TOO_SMALL);
    Bytes b(need);
    size_t need2 = 0;
    EXPECT_EQ(ikllm_session_state_save(s, seqs, n_seqs, smp, 0, b.data(), b.size(), &need2), IKLLM_OK)
        << ikllm_last_error();
    EXPECT_EQ(need, need2);
    return b;
}

Tokens seq_tokens(ikllm_session* s, int32_t seq) {
    size_t n = 0;
    ikllm_session_seq_tokens(s, seq, nullptr, 0, &n);
    Tokens t(n);
    EXPECT_EQ(ikllm_session_seq_tokens(s, seq, t.data(), t.size(), &n), IKLLM_OK) << ikllm_last_error();
    return t;
}

Tokens slice(const Tokens& t, size_t a, size_t b) { return Tokens(t.begin() + a, t.begin() + b); }
Tokens concat(Tokens a, const Tokens& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::string temp_path(const std::string& name) {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/ikllm_state_" + std::to_string(::getpid()) + "_" + name;
}

void write_file(const std::string& path, const Bytes& b) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), (std::streamsize)b.size());
}

// ---- round trips over models x KV types ------------------------------------------------------

struct RoundTripCase {
    const char* model;
    const char* kv;
};

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

// Three sequences (two decoded in one batch, one forked from a prefix of the first and
// extended): save everything, run four more steps on all three, then restore into a fresh
// session and run the same steps: every logit row must be bit-identical.
TEST_P(RoundTrip, RestoredSessionContinuesBitIdentically) {
    IKLLM_REQUIRE_REFDATA();
    const RoundTripCase c = GetParam();
    M m(c.model);
    ASSERT_TRUE(m.model);
    const Tokens ref = ref_tokens(c.model);
    ASSERT_GE(ref.size(), 40u);
    SessionPtr a;
    ASSERT_EQ(make_session(m.model, a, 3, 128, c.kv), IKLLM_OK) << ikllm_last_error();
    const Tokens p0 = slice(ref, 0, 20), p1 = concat({1}, slice(ref, 20, 34));
    Tokens batch = concat(p0, p1);
    std::vector<int32_t> seq(batch.size(), 0);
    for (size_t i = p0.size(); i < batch.size(); ++i) seq[i] = 1;
    ASSERT_EQ(ikllm_session_decode(a, batch.data(), nullptr, seq.data(), nullptr, (int32_t)batch.size(), 0), IKLLM_OK)
        << ikllm_last_error();
    ASSERT_EQ(ikllm_session_seq_copy(a, 0, 2, 0, 8), IKLLM_OK);  // seq 2 shares 8 cells with seq 0
    feed(a, slice(ref, 34, 37), 2);

    const Bytes state = save(a);
    auto steps = [&](ikllm_session* s) {
        std::vector<std::vector<float>> rows;
        for (int step = 0; step < 4; ++step) {
            int32_t toks[3] = {ref[37 + step], ref[5 + step], ref[12 + step]};
            int32_t seqs[3] = {0, 1, 2}, want[3] = {1, 1, 1};
            EXPECT_EQ(ikllm_session_decode(s, toks, nullptr, seqs, want, 3, 0), IKLLM_OK) << ikllm_last_error();
            for (int i = 0; i < 3; ++i) rows.push_back(logits(s, i));
        }
        return rows;
    };
    const auto expect = steps(a);

    SessionPtr b;
    ASSERT_EQ(make_session(m.model, b, 3, 128, c.kv), IKLLM_OK);
    ASSERT_EQ(ikllm_session_state_load(b, state.data(), state.size(), nullptr, 0), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(seq_tokens(b, 0), p0);
    EXPECT_EQ(seq_tokens(b, 1), p1);
    EXPECT_EQ(seq_tokens(b, 2), concat(slice(p0, 0, 8), slice(ref, 34, 37)));
    const float* none = nullptr;
    EXPECT_EQ(ikllm_session_logits(b, -1, &none, nullptr), IKLLM_ERR_INVALID_ARGUMENT);  // logits are not saved
    const auto got = steps(b);
    ASSERT_EQ(got.size(), expect.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bit_equal(got[i], expect[i])) << "row " << i;
    // A second save of the restored session is the same bytes as the first.
    SessionPtr c2;
    ASSERT_EQ(make_session(m.model, c2, 3, 128, c.kv), IKLLM_OK);
    ASSERT_EQ(ikllm_session_state_load(c2, state.data(), state.size(), nullptr, 0), IKLLM_OK);
    EXPECT_EQ(save(c2), state);
}

INSTANTIATE_TEST_SUITE_P(
    ModelsAndKvTypes, RoundTrip,
    ::testing::Values(RoundTripCase{"llama-tiny-f16", "f16"}, RoundTripCase{"llama-tiny-f16", "bf16"},
                      RoundTripCase{"llama-tiny-f16", "q8_0"}, RoundTripCase{"llama-tiny-f16", "f32"},
                      RoundTripCase{"qwen3-tiny-f16", "q8_0"}, RoundTripCase{"deepseek2-tiny-f16", "f16"},
                      RoundTripCase{"deepseek2-tiny-f16", "bf16"}, RoundTripCase{"deepseek2-tiny-f16", "q8_0"},
                      RoundTripCase{"deepseek2-tiny-f16", "f32"}, RoundTripCase{"deepseek2-lite-tiny-f16", "q8_0"}),
    [](const auto& info) {
        std::string n = std::string(info.param.model) + "_" + info.param.kv;
        for (char& ch : n)
            if (ch == '-') ch = '_';
        return n;
    });

// The restored cache is the real context: greedy steps after a restore match the reference
// engine's steps.f32 (decoded one token at a time after the 48-token prompt).
TEST(SessionState, RestoredSessionMatchesReferenceSteps) {
    IKLLM_REQUIRE_REFDATA();
    for (const char* stem : {"llama-tiny-f16", "deepseek2-tiny-f16"}) {
        M m(stem);
        const Tokens prompt = ref_tokens(stem), greedy = ref_tokens(stem, "greedy.txt");
        const std::vector<float> steps =
            ikllm::test::read_f32_file(ikllm::test::refdata_dir() + "/refs/" + stem + "/steps.f32");
        const int32_t n_vocab = ikllm_model_n_vocab(m.model);
        ASSERT_EQ(steps.size(), greedy.size() * n_vocab);
        SessionPtr a, b;
        ASSERT_EQ(make_session(m.model, a, 1, 128), IKLLM_OK);
        feed(a, prompt);
        const Bytes state = save(a);
        ASSERT_EQ(make_session(m.model, b, 1, 128), IKLLM_OK);
        ASSERT_EQ(ikllm_session_state_load(b, state.data(), state.size(), nullptr, 0), IKLLM_OK);
        for (size_t i = 0; i < greedy.size(); ++i) {
            const auto got = feed(b, {greedy[i]});
            const std::vector<float> want(steps.begin() + i * n_vocab, steps.begin() + (i + 1) * n_vocab);
            EXPECT_LT(rms_rel(got, want), 3e-3) << stem << " step " << i;
        }
    }
}

// Saving one sequence of two and restoring it alone: same tokens, logits equal within rounding
// (the cell layout around it differs, so the attention sums may round differently).
TEST(SessionState, SubsetOfSequences) {
    IKLLM_REQUIRE_REFDATA();
    M m("llama-tiny-f16");
    const Tokens ref = ref_tokens("llama-tiny-f16");
    SessionPtr a, b;
    ASSERT_EQ(make_session(m.model, a, 2), IKLLM_OK);
    feed(a, slice(ref, 0, 16), 0);
    feed(a, slice(ref, 16, 30), 1);
    const int32_t one = 1;
    const Bytes state = save(a, &one, 1);
    EXPECT_LT(state.size(), save(a).size());
    const auto expect = feed(a, {ref[30]}, 1);
    ASSERT_EQ(make_session(m.model, b, 2), IKLLM_OK);
    feed(b, slice(ref, 2, 6), 0);
    ASSERT_EQ(ikllm_session_state_load(b, state.data(), state.size(), nullptr, 0), IKLLM_OK);
    EXPECT_EQ(seq_tokens(b, 0), slice(ref, 2, 6));  // other sequences are kept
    EXPECT_EQ(seq_tokens(b, 1), slice(ref, 16, 30));
    EXPECT_LT(rms_rel(feed(b, {ref[30]}, 1), expect), 1e-5);
    // REPLACE_ALL empties sequence 0 as well.
    ASSERT_EQ(ikllm_session_state_load(b, state.data(), state.size(), nullptr, IKLLM_STATE_REPLACE_ALL), IKLLM_OK);
    EXPECT_EQ(ikllm_session_seq_pos_max(b, 0), -1);
    EXPECT_EQ(seq_tokens(b, 1), slice(ref, 16, 30));
    // An empty sequence saved explicitly empties that sequence on restore.
    const int32_t zero = 0;
    SessionPtr e;
    ASSERT_EQ(make_session(m.model, e, 2), IKLLM_OK);
    const Bytes empty = save(e, &zero, 1);
    ASSERT_EQ(ikllm_session_state_load(a, empty.data(), empty.size(), nullptr, 0), IKLLM_OK);
    EXPECT_EQ(ikllm_session_seq_pos_max(a, 0), -1);
    EXPECT_EQ(ikllm_session_seq_pos_max(a, 1), 14);
    // Bad selections.
    size_t need = 0;
    const int32_t dup[2] = {1, 1}, out_of_range = 2;
    EXPECT_EQ(ikllm_session_state_save(a, dup, 2, nullptr, 0, nullptr, 0, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_save(a, &out_of_range, 1, nullptr, 0, nullptr, 0, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_save(a, nullptr, 0, nullptr, 1, nullptr, 0, &need), IKLLM_ERR_INVALID_ARGUMENT);
}

// ---- sampler state ------------------------------------------------------------------------

ikllm_sampler* make_sampler(ikllm_model* m, int64_t seed) {
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o);
    ikllm_options_set_int(o, "seed", seed);
    ikllm_options_set_float(o, "temperature", 1.5);
    ikllm_options_set_float(o, "repeat_penalty", 1.5);
    ikllm_options_set_int(o, "top_k", 0);
    ikllm_options_set_float(o, "top_p", 1.0);
    ikllm_options_set_float(o, "min_p", 0.0);
    ikllm_sampler* s = nullptr;
    EXPECT_EQ(ikllm_sampler_create(m, o, &s), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(o);
    return s;
}

Tokens draw(ikllm_sampler* smp, const std::vector<float>& l, int n) {
    Tokens out;
    for (int i = 0; i < n; ++i) {
        int32_t t = -1;
        EXPECT_EQ(ikllm_sampler_sample_logits(smp, l.data(), (int32_t)l.size(), &t), IKLLM_OK);
        out.push_back(t);
    }
    return out;
}

TEST(SessionState, SamplerRngAndHistoryRoundTrip) {
    IKLLM_REQUIRE_REFDATA();
    M m("llama-tiny-f16");
    SessionPtr s;
    ASSERT_EQ(make_session(m.model, s), IKLLM_OK);
    const std::vector<float> l = feed(s, ref_tokens("llama-tiny-f16"));
    ikllm_sampler* a = make_sampler(m.model, 11);
    draw(a, l, 7);  // advance the RNG and fill the penalty history
    const Bytes state = save(s, nullptr, 0, a);
    EXPECT_GT(state.size(), save(s).size());
    const Tokens expect = draw(a, l, 24);

    ikllm_sampler* b = make_sampler(m.model, 99);  // other seed, no history
    const Tokens fresh = draw(b, l, 24);
    EXPECT_NE(fresh, expect);
    ASSERT_EQ(ikllm_session_state_load(s, state.data(), state.size(), b, 0), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(draw(b, l, 24), expect);

    // The history is part of the state: a's RNG state with another penalty history draws differently.
    ikllm_sampler* c = make_sampler(m.model, 11);
    draw(c, l, 7);
    ASSERT_EQ(ikllm_sampler_accept(c, fresh.data(), fresh.size()), IKLLM_OK);
    EXPECT_NE(draw(c, l, 24), expect);

    // Asking for a sampler state the file does not hold: an error, and nothing changes.
    const Bytes plain = save(s);
    const Bytes before = save(s, nullptr, 0, c);
    EXPECT_EQ(ikllm_session_state_load(s, plain.data(), plain.size(), c, 0), IKLLM_ERR_INCOMPATIBLE_STATE);
    EXPECT_NE(std::string(ikllm_last_error()).find("sampler"), std::string::npos) << ikllm_last_error();
    EXPECT_EQ(save(s, nullptr, 0, c), before);
    ikllm_sampler_free(a);
    ikllm_sampler_free(b);
    ikllm_sampler_free(c);
}

// ---- incompatible, truncated and corrupt states -------------------------------------------

class Failures : public ::testing::Test {
protected:
    void SetUp() override {
        IKLLM_REQUIRE_REFDATA();
        m_ = std::make_unique<M>("llama-tiny-f16");
        ref_ = ref_tokens("llama-tiny-f16");
        SessionPtr a;
        ASSERT_EQ(make_session(m_->model, a, 2, 128), IKLLM_OK);
        feed(a, slice(ref_, 0, 24), 0);
        feed(a, slice(ref_, 24, 40), 1);
        smp_ = make_sampler(m_->model, 5);
        state_ = save(a, nullptr, 0, smp_);
        ASSERT_EQ(make_session(m_->model, target_, 2, 128), IKLLM_OK);
        feed(target_, slice(ref_, 3, 13), 0);  // the target has its own content
        before_ = save(target_, nullptr, 0, smp_);
    }
    void TearDown() override { ikllm_sampler_free(smp_); }
    // The load fails with `want` and changes neither the session nor the sampler.
    void expect_rejected(const Bytes& data, ikllm_status want, const char* msg_part, const std::string& what) {
        const ikllm_status st = ikllm_session_state_load(target_, data.data(), data.size(), smp_, 0);
        EXPECT_EQ(st, want) << what << ": " << ikllm_last_error();
        if (st != IKLLM_OK && msg_part) {
            EXPECT_NE(std::string(ikllm_last_error()).find(msg_part), std::string::npos) << what << ": " << ikllm_last_error();
        }
        EXPECT_EQ(save(target_, nullptr, 0, smp_), before_) << what;
    }
    std::unique_ptr<M> m_;
    Tokens ref_;
    ikllm_sampler* smp_ = nullptr;
    Bytes state_, before_;
    SessionPtr target_;
};

TEST_F(Failures, TruncatedStates) {
    for (size_t n : {size_t(0), size_t(3), size_t(4), size_t(60), size_t(100), size_t(120), state_.size() / 2,
                     state_.size() - 9, state_.size() - 1}) {
        Bytes cut(state_.begin(), state_.begin() + n);
        expect_rejected(cut, IKLLM_ERR_INVALID_FILE, nullptr, "truncated to " + std::to_string(n));
    }
    Bytes longer = state_;
    longer.push_back(0);
    expect_rejected(longer, IKLLM_ERR_INVALID_FILE, "after the end", "one extra byte");
    EXPECT_EQ(ikllm_session_state_load(target_, nullptr, 0, nullptr, 0), IKLLM_ERR_INVALID_FILE);
}

TEST_F(Failures, CorruptStates) {
    // One flipped bit anywhere is caught: by the header checks or the checksum.
    const size_t offsets[] = {0, 5, 40, 100, 104, 130, 400, state_.size() / 2, state_.size() - 40, state_.size() - 3};
    for (size_t off : offsets) {
        Bytes bad = state_;
        bad[off] ^= 0x10;
        const ikllm_status st = ikllm_session_state_load(target_, bad.data(), bad.size(), smp_, 0);
        EXPECT_TRUE(st == IKLLM_ERR_INVALID_FILE || st == IKLLM_ERR_INCOMPATIBLE_STATE)
            << "byte " << off << ": " << ikllm_status_name(st);
        EXPECT_EQ(save(target_, nullptr, 0, smp_), before_) << "byte " << off;
    }
    Bytes bad = state_;
    bad[state_.size() / 2] ^= 1;  // inside the K/V rows
    expect_rejected(bad, IKLLM_ERR_INVALID_FILE, "checksum", "flipped K/V bit");
    bad = state_;
    bad[0] = 'X';
    expect_rejected(bad, IKLLM_ERR_INVALID_FILE, "not an ikllm session state", "bad magic");
    bad = state_;
    bad[4] = 2;  // format version
    expect_rejected(bad, IKLLM_ERR_INCOMPATIBLE_STATE, "format version", "future version");
}

TEST_F(Failures, IncompatibleSessions) {
    // Another model.
    M other("qwen3-tiny-f16");
    SessionPtr q;
    ASSERT_EQ(make_session(other.model, q, 2, 128), IKLLM_OK);
    EXPECT_EQ(ikllm_session_state_load(q, state_.data(), state_.size(), nullptr, 0), IKLLM_ERR_INCOMPATIBLE_STATE);
    EXPECT_NE(std::string(ikllm_last_error()).find("different model"), std::string::npos) << ikllm_last_error();
    EXPECT_EQ(ikllm_session_seq_pos_max(q, 0), -1);
    // Same model, other KV type.
    for (const char* kv : {"f32", "bf16", "q8_0"}) {
        SessionPtr k;
        ASSERT_EQ(make_session(m_->model, k, 2, 128, kv), IKLLM_OK);
        feed(k, slice(ref_, 0, 5));
        const Bytes mine = save(k);
        EXPECT_EQ(ikllm_session_state_load(k, state_.data(), state_.size(), nullptr, 0), IKLLM_ERR_INCOMPATIBLE_STATE) << kv;
        EXPECT_NE(std::string(ikllm_last_error()).find("KV cache type f16"), std::string::npos) << ikllm_last_error();
        EXPECT_EQ(save(k), mine);
    }
    // n_ctx smaller than the saved cells; n_seq_max smaller than the saved sequence ids.
    SessionPtr small, one;
    ASSERT_EQ(make_session(m_->model, small, 2, 32), IKLLM_OK);
    EXPECT_EQ(ikllm_session_state_load(small, state_.data(), state_.size(), nullptr, 0), IKLLM_ERR_INCOMPATIBLE_STATE);
    EXPECT_NE(std::string(ikllm_last_error()).find("n_ctx"), std::string::npos) << ikllm_last_error();
    ASSERT_EQ(make_session(m_->model, one, 1, 128), IKLLM_OK);
    EXPECT_EQ(ikllm_session_state_load(one, state_.data(), state_.size(), nullptr, 0), IKLLM_ERR_INCOMPATIBLE_STATE);
    EXPECT_NE(std::string(ikllm_last_error()).find("n_seq_max"), std::string::npos) << ikllm_last_error();
    // Enough n_ctx, but the other sequences hold the cells.
    SessionPtr full;
    ASSERT_EQ(make_session(m_->model, full, 3, 64), IKLLM_OK);
    feed(full, slice(ref_, 0, 30), 2);
    const Bytes mine = save(full);
    EXPECT_EQ(ikllm_session_state_load(full, state_.data(), state_.size(), nullptr, 0), IKLLM_CONTEXT_FULL);
    EXPECT_EQ(save(full), mine);
    // A flag the call does not know.
    EXPECT_EQ(ikllm_session_state_load(target_, state_.data(), state_.size(), nullptr, 8), IKLLM_ERR_INVALID_ARGUMENT);
}

// NULL handles and pointers are errors, never crashes (no model needed).
TEST(SessionState, NullArgumentsAreErrors) {
    size_t need = 0;
    int32_t n = 0, tok = 1;
    uint8_t byte = 0;
    EXPECT_EQ(ikllm_session_state_save(nullptr, nullptr, 0, nullptr, 0, nullptr, 0, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_save_file(nullptr, nullptr, 0, nullptr, 0, "/tmp/x"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_load(nullptr, &byte, 1, nullptr, 0), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_load_file(nullptr, "/tmp/x", nullptr, 0), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_seq_tokens(nullptr, 0, nullptr, 0, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_prompt_reuse(nullptr, 0, &tok, 1, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_context_shift(nullptr, 0, 0, 1), IKLLM_ERR_INVALID_ARGUMENT);
    IKLLM_REQUIRE_REFDATA();
    M m("llama-tiny-f16");
    SessionPtr s;
    ASSERT_EQ(make_session(m.model, s), IKLLM_OK);
    EXPECT_EQ(ikllm_session_state_save(s, nullptr, 0, nullptr, 0, nullptr, 0, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_save(s, nullptr, 0, nullptr, 0, nullptr, 16, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_save(s, nullptr, 1, nullptr, 0, nullptr, 0, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_save_file(s, nullptr, 0, nullptr, 0, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_save_file(s, nullptr, 0, nullptr, 0, ""), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_load(s, nullptr, 4, nullptr, 0), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_state_load_file(s, nullptr, nullptr, 0), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_seq_tokens(s, 0, nullptr, 4, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_seq_tokens(s, 0, nullptr, 0, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_seq_tokens(s, 1, nullptr, 0, &need), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_seq_tokens(s, 0, nullptr, 0, &need), IKLLM_OK);
    EXPECT_EQ(need, 0u);
}

// ---- files ----------------------------------------------------------------------------------

TEST(SessionState, FileRoundTripIsAtomicAndChecked) {
    IKLLM_REQUIRE_REFDATA();
    M m("deepseek2-tiny-f16");
    const Tokens ref = ref_tokens("deepseek2-tiny-f16");
    SessionPtr a, b;
    ASSERT_EQ(make_session(m.model, a), IKLLM_OK);
    feed(a, slice(ref, 0, 30));
    const std::string path = temp_path("rt.ikstate");
    ASSERT_EQ(ikllm_session_state_save_file(a, nullptr, 0, nullptr, 0, path.c_str()), IKLLM_OK) << ikllm_last_error();
    EXPECT_FALSE(ikllm::test::file_exists(path + ".tmp." + std::to_string(::getpid())));
    const std::string text = ikllm::test::read_text_file(path);
    EXPECT_EQ(Bytes(text.begin(), text.end()), save(a));  // same bytes as the buffer form
    const auto expect = feed(a, slice(ref, 30, 33));
    ASSERT_EQ(make_session(m.model, b), IKLLM_OK);
    ASSERT_EQ(ikllm_session_state_load_file(b, path.c_str(), nullptr, 0), IKLLM_OK) << ikllm_last_error();
    EXPECT_TRUE(bit_equal(feed(b, slice(ref, 30, 33)), expect));

    // Overwriting replaces the file; a failed write leaves nothing behind.
    ASSERT_EQ(ikllm_session_state_save_file(b, nullptr, 0, nullptr, 0, path.c_str()), IKLLM_OK);
    const std::string bad_dir = temp_path("no_such_dir") + "/x.ikstate";
    EXPECT_EQ(ikllm_session_state_save_file(b, nullptr, 0, nullptr, 0, bad_dir.c_str()), IKLLM_ERR_IO);
    EXPECT_FALSE(ikllm::test::file_exists(bad_dir));

    const Bytes before = save(b);
    const std::string cut = temp_path("cut.ikstate");
    write_file(cut, Bytes(text.begin(), text.begin() + text.size() / 3));
    EXPECT_EQ(ikllm_session_state_load_file(b, cut.c_str(), nullptr, 0), IKLLM_ERR_INVALID_FILE);
    EXPECT_EQ(ikllm_session_state_load_file(b, (path + ".missing").c_str(), nullptr, 0), IKLLM_ERR_IO);
    EXPECT_EQ(save(b), before);
    std::remove(path.c_str());
    std::remove(cut.c_str());
}

// ---- prompt cache ---------------------------------------------------------------------------

class PromptReuse : public ::testing::TestWithParam<const char*> {};

TEST_P(PromptReuse, KeepsTheLongestCachedPrefix) {
    IKLLM_REQUIRE_REFDATA();
    M m(GetParam());
    const Tokens ref = ref_tokens(GetParam());
    SessionPtr s, fresh;
    ASSERT_EQ(make_session(m.model, s, 2), IKLLM_OK);
    ASSERT_EQ(make_session(m.model, fresh, 1), IKLLM_OK);
    const Tokens p = slice(ref, 0, 20);
    feed(s, p);
    int32_t n = -1;
    // Extension of the cached prompt: all of it is reused, only the rest is decoded.
    const Tokens longer = slice(ref, 0, 28);
    ASSERT_EQ(ikllm_session_prompt_reuse(s, 0, longer.data(), (int32_t)longer.size(), &n), IKLLM_OK);
    EXPECT_EQ(n, 20);
    const auto got = feed(s, slice(longer, n, longer.size()));
    EXPECT_LT(rms_rel(got, feed(fresh, longer)), 1e-5);
    // A prompt that diverges after 12 tokens: 12 are kept, the rest of the sequence removed.
    Tokens other = slice(ref, 0, 12);
    other.push_back(ref[30]);
    other.push_back(ref[31]);
    ASSERT_EQ(ikllm_session_prompt_reuse(s, 0, other.data(), (int32_t)other.size(), &n), IKLLM_OK);
    EXPECT_EQ(n, 12);
    EXPECT_EQ(seq_tokens(s, 0), slice(ref, 0, 12));
    feed(s, slice(other, n, other.size()));
    ikllm_session_clear(fresh);
    const auto want_other = feed(fresh, other);
    EXPECT_LT(rms_rel(logits(s), want_other), 1e-5);
    // The identical prompt: all but the last token reused, so the caller still gets logits.
    ASSERT_EQ(ikllm_session_prompt_reuse(s, 0, other.data(), (int32_t)other.size(), &n), IKLLM_OK);
    EXPECT_EQ(n, (int32_t)other.size() - 1);
    EXPECT_LT(rms_rel(feed(s, {other.back()}), want_other), 1e-5);
    // From another sequence: sequence 1 is empty and forks sequence 0's prefix.
    Tokens branch = slice(other, 0, 13);
    branch.push_back(ref[40]);
    ASSERT_EQ(ikllm_session_prompt_reuse(s, 1, branch.data(), (int32_t)branch.size(), &n), IKLLM_OK);
    EXPECT_EQ(n, 13);
    EXPECT_EQ(seq_tokens(s, 1), slice(branch, 0, 13));
    EXPECT_EQ(seq_tokens(s, 0), other);  // the source is untouched
    const auto b1 = feed(s, {ref[40]}, 1);
    ikllm_session_clear(fresh);
    EXPECT_LT(rms_rel(b1, feed(fresh, branch)), 1e-5);
    // Nothing in common: the sequence is emptied. An empty prompt empties it too.
    const Tokens unrelated = {ref[7], ref[8]};
    ASSERT_EQ(ikllm_session_prompt_reuse(s, 1, unrelated.data(), 2, &n), IKLLM_OK);
    EXPECT_EQ(n, 0);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 1), -1);
    ASSERT_EQ(ikllm_session_prompt_reuse(s, 0, nullptr, 0, &n), IKLLM_OK);
    EXPECT_EQ(n, 0);
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), -1);
    // Bad arguments.
    EXPECT_EQ(ikllm_session_prompt_reuse(s, 2, unrelated.data(), 2, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_prompt_reuse(s, 0, nullptr, 2, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_prompt_reuse(s, 0, unrelated.data(), -1, &n), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_prompt_reuse(s, 0, unrelated.data(), 2, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Models, PromptReuse, ::testing::Values("llama-tiny-f16", "deepseek2-tiny-f16"));

// ---- context shift --------------------------------------------------------------------------

class ContextShift : public ::testing::TestWithParam<const char*> {};

TEST_P(ContextShift, DropsAfterKeptPrefixAndRenumbers) {
    IKLLM_REQUIRE_REFDATA();
    M m(GetParam());
    const Tokens ref = ref_tokens(GetParam());
    const int32_t n_keep = 6, n_discard = 16;
    const Tokens text = slice(ref, 0, 40), next = slice(ref, 40, 44);
    SessionPtr s, manual, fresh;
    ASSERT_EQ(make_session(m.model, s, 2, 48), IKLLM_OK);
    ASSERT_EQ(make_session(m.model, manual, 2, 48), IKLLM_OK);
    ASSERT_EQ(make_session(m.model, fresh, 1, 48), IKLLM_OK);
    feed(s, text);
    feed(manual, text);
    ASSERT_EQ(ikllm_session_context_shift(s, 0, n_keep, n_discard), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), 39 - n_discard);
    const Tokens shortened = concat(slice(text, 0, n_keep), slice(text, n_keep + n_discard, text.size()));
    EXPECT_EQ(seq_tokens(s, 0), shortened);
    // Same as removing the range and shifting the rest by hand.
    ASSERT_EQ(ikllm_session_seq_remove(manual, 0, n_keep, n_keep + n_discard), IKLLM_OK);
    ASSERT_EQ(ikllm_session_seq_shift(manual, 0, n_keep + n_discard, -1, -n_discard), IKLLM_OK);
    const auto got = feed(s, next);
    EXPECT_TRUE(bit_equal(got, feed(manual, next)));
    // Not the same as a fresh decode of the shortened text (the kept entries after the gap were
    // computed with the dropped tokens in context), but closer to it than the unshifted cache.
    const auto short_fresh = feed(fresh, concat(shortened, next));
    const double diff = rms_rel(got, short_fresh);
    SessionPtr full;
    ASSERT_EQ(make_session(m.model, full, 1, 48), IKLLM_OK);
    const double unshifted = rms_rel(feed(full, concat(text, next)), short_fresh);
    std::printf("[ context shift ] %s: keep %d, discard %d of 40: rms_rel vs fresh decode of the shortened text "
                "%.3g (unshifted cache: %.3g)\n", GetParam(), n_keep, n_discard, diff, unshifted);
    EXPECT_GT(diff, 0.0);
    EXPECT_LT(diff, unshifted);
    // Bad arguments change nothing.
    const Bytes before = save(s);
    EXPECT_EQ(ikllm_session_context_shift(s, 0, 20, 20), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_context_shift(s, 0, -1, 2), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_context_shift(s, 0, 2, 0), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_session_context_shift(s, 2, 2, 2), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(save(s), before);
}

// A forked sequence shifts without disturbing the sequence it shares cells with (shared cells
// are copied first); when there are no free cells for the copies nothing changes.
TEST_P(ContextShift, SharedCellsAreCopiedFirst) {
    IKLLM_REQUIRE_REFDATA();
    M m(GetParam());
    const Tokens ref = ref_tokens(GetParam());
    SessionPtr s, alone;
    ASSERT_EQ(make_session(m.model, s, 2, 64), IKLLM_OK);
    ASSERT_EQ(make_session(m.model, alone, 1, 64), IKLLM_OK);
    const Tokens text = slice(ref, 0, 30);
    feed(s, text);
    ASSERT_EQ(ikllm_session_seq_copy(s, 0, 1, 0, -1), IKLLM_OK);
    ASSERT_EQ(ikllm_session_context_shift(s, 1, 4, 10), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(seq_tokens(s, 0), text);
    EXPECT_EQ(seq_tokens(s, 1), concat(slice(text, 0, 4), slice(text, 14, 30)));
    feed(alone, text);
    EXPECT_LT(rms_rel(feed(s, {ref[30]}, 0), feed(alone, {ref[30]})), 1e-5);
    // With 10 free cells the 16 shared cells after the dropped range cannot be copied.
    SessionPtr tight;
    ASSERT_EQ(make_session(m.model, tight, 2, 40), IKLLM_OK);
    feed(tight, text);
    ASSERT_EQ(ikllm_session_seq_copy(tight, 0, 1, 0, -1), IKLLM_OK);
    const Bytes before = save(tight);
    EXPECT_EQ(ikllm_session_context_shift(tight, 1, 4, 10), IKLLM_CONTEXT_FULL);
    EXPECT_EQ(save(tight), before);
}

INSTANTIATE_TEST_SUITE_P(Models, ContextShift, ::testing::Values("llama-tiny-f16", "deepseek2-tiny-f16"));

}  // namespace
