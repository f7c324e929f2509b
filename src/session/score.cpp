#include "session/score.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace ikllm {

double log_prob(const float* logits, int32_t n_vocab, int32_t target) {
    float mx = logits[0];
    for (int32_t i = 1; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp((double)logits[i] - mx);
    return (double)logits[target] - mx - std::log(sum);
}

void score_tokens(Session& s, int32_t seq, const int32_t* tokens, int32_t n, int32_t first, float* out,
                  const ScoreProgress& progress) {
    if (!tokens) fail(Status::invalid_argument, "score: tokens is NULL");
    if (n < 1) fail(Status::invalid_argument, "score: n_tokens must be positive");
    if (first < 0 || first > n - 1)
        fail(Status::invalid_argument, "score: first (" + std::to_string(first) + ") must be in [0, n_tokens - 1 = " +
             std::to_string(n - 1) + "]");
    if (seq < 0 || seq >= s.options().n_seq_max)
        fail(Status::invalid_argument, "score: sequence id " + std::to_string(seq) + " out of range");
    if (n - 1 > first && !out) fail(Status::invalid_argument, "score: out_logprobs is NULL");
    const int32_t n_vocab = s.model().hp.n_vocab;
    // Validate every id up front: a bad id in a late micro-batch would otherwise cost the
    // work done before it.
    for (int32_t i = 0; i < n; ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            fail(Status::invalid_argument, "score: token " + std::to_string(tokens[i]) + " at index " +
                 std::to_string(i) + " is out of range [0, " + std::to_string(n_vocab) + ")");
    if (s.options().n_ctx - s.kv().used_cells() < n)
        throw Error(Status::context_full, "score: " + std::to_string(n) + " tokens need KV cells, " +
                    std::to_string(s.options().n_ctx - s.kv().used_cells()) + " of " +
                    std::to_string(s.options().n_ctx) + " are free");
    const int32_t kept = s.kv().seq_pos_max(seq) + 1;  // positions [0, kept) belong to the caller
    const int32_t step = s.options().n_batch;
    std::vector<int32_t> want, seqs;
    try {
        for (int32_t b = 0; b < n; b += step) {
            const int32_t e = std::min(n, b + step);
            want.assign((size_t)(e - b), 0);
            seqs.assign((size_t)(e - b), seq);
            // Logits at i predict token i + 1; the last token's logits stay readable afterwards.
            for (int32_t i = std::max(b, first); i < e; ++i) want[(size_t)(i - b)] = 1;
            s.decode(tokens + b, nullptr, seqs.data(), want.data(), e - b);
            for (int32_t i = std::max(b, first); i < e && i < n - 1; ++i)
                out[i - first] = (float)log_prob(s.logits(i - b), n_vocab, tokens[i + 1]);
            if (progress && !progress((float)e / (float)n)) fail(Status::cancelled, "score: cancelled by the progress callback");
        }
    } catch (...) {
        s.kv().seq_remove(seq, kept, -1);
        throw;
    }
}

}  // namespace ikllm
