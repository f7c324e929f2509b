// Prompt reuse over the KV cache: every cell remembers the token decoded there, so a new prompt
// for a sequence can keep the longest prefix already cached (its own, or another sequence's,
// shared by forking) and only the remainder needs decoding.
#pragma once
#include <cstdint>
#include <vector>

#include "session/kv_cache.h"

namespace ikllm {

// Keeps the longest prefix of tokens[0..n) cached at positions 0.. of `seq` or of another
// sequence (then forked into `seq`, cells shared), removes everything else of `seq`, and
// returns the prefix length. At most n - 1 tokens are reused so that decoding the remainder
// always yields logits for the last prompt token.
int32_t reuse_prompt(KvCache& kv, int32_t seq, const int32_t* tokens, int32_t n);

// Tokens held by `seq`, in position order (-1 where a cell's token is unknown).
std::vector<int32_t> seq_tokens(const KvCache& kv, int32_t seq);

}  // namespace ikllm
