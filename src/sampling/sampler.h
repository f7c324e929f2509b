// Sampler chain: an optional grammar mask first (tokens the grammar rejects are never
// candidates), then repetition/presence/frequency penalties over a window, the configured
// filters (top-k, typical-p, top-p, min-p), temperature, and a seeded draw. temperature <= 0
// is greedy. Same seed + same inputs gives the same tokens.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ikllm {

namespace grammar { class TokenMatcher; }

struct SamplerOptions {
    uint64_t seed = 0x5eed;
    float temperature = 0.8f;
    int32_t top_k = 40;          // <= 0: off
    float top_p = 0.95f;         // >= 1: off
    float min_p = 0.05f;         // <= 0: off
    float typical_p = 1.0f;      // >= 1: off
    float repeat_penalty = 1.0f; // 1: off
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    int32_t penalty_last_n = 64; // window of recent tokens (0: off, -1: whole history)
    std::string chain = "penalties;top_k;typical_p;top_p;min_p;temperature";
    std::vector<int32_t> excluded; // never sampled, sorted (ignore_eos: the end-of-generation set)
};

class Sampler {
public:
    // Validates the chain. grammar (may be null) constrains every sampled token.
    explicit Sampler(const SamplerOptions& opts);
    Sampler(const SamplerOptions& opts, std::unique_ptr<grammar::TokenMatcher> grammar);
    ~Sampler();
    // Also records the token (history and grammar). Throws Error(grammar_error) when the
    // grammar allows no token.
    int32_t sample(const float* logits, int32_t n_vocab);
    // Records a token in the penalty history and advances the grammar; throws
    // Error(grammar_error) when the grammar rejects it (the grammar is then failed).
    void accept(int32_t token);
    // RNG state and penalty history as a versioned byte blob (sampler_state.cpp), for session
    // files. load_state is all-or-nothing: it throws Error(invalid_file) on a bad blob and then
    // leaves the sampler unchanged. The configuration (options) is not part of the state.
    std::vector<uint8_t> save_state() const;
    void load_state(const uint8_t* data, size_t size);
    // Penalty history only (prompt tokens the grammar must not see).
    void accept_history(int32_t token);
    void reset();  // history, RNG and grammar back to the start
    grammar::TokenMatcher* grammar() const { return grammar_.get(); }

private:
    struct Cand { int32_t id; float logit; float p; };
    void apply_penalties(std::vector<Cand>& c) const;
    static void softmax(std::vector<Cand>& c);
    SamplerOptions o_;
    std::vector<std::string> steps_;
    std::mt19937_64 rng_;
    std::deque<int32_t> history_;
    std::vector<Cand> cand_;
    std::unique_ptr<grammar::TokenMatcher> grammar_;
    void fill_candidates(const float* logits, int32_t n_vocab);
    void drop_excluded();
};

}  // namespace ikllm
