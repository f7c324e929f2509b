// Scoring text: the log-probability the model gives each token of a sequence, computed in
// micro-batches so long sequences need only n_batch rows of logits at a time.
#pragma once
#include <cstdint>
#include <functional>

#include "session/session.h"

namespace ikllm {

// log softmax(logits)[target], accumulated in double.
double log_prob(const float* logits, int32_t n_vocab, int32_t target);

// Called after each micro-batch with the fraction of tokens decoded; return false to cancel.
using ScoreProgress = std::function<bool(float)>;

// Decodes tokens[0, n) as the continuation of sequence `seq` and writes, for i in [first, n - 1),
// out[i - first] = log p(tokens[i + 1] | tokens[0..i], earlier content of seq). Only positions
// >= first (and the last token) get logits. On any failure the sequence is restored to what
// it held before (later positions removed) and the error is rethrown.
void score_tokens(Session& s, int32_t seq, const int32_t* tokens, int32_t n, int32_t first, float* out,
                  const ScoreProgress& progress);

}  // namespace ikllm
