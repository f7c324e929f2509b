// Log-probabilities for the OpenAI logprobs fields, computed from a token's raw logits.
#pragma once
#include <cstdint>

#include "job.h"

namespace server {

// Fills ev.logprob (of ev.token) and, when n_top > 0, ev.top with the n_top most likely tokens.
void compute_logprobs(const float* logits, int32_t n_vocab, int n_top, TokenEvent& ev);

}  // namespace server
