#include "session/prompt_cache.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace ikllm {

namespace {

// How many of tokens[0..n) sequence `seq` holds at positions 0, 1, ... in a row.
int32_t cached_prefix(const KvCache& kv, int32_t seq, const int32_t* tokens, int32_t n) {
    std::vector<int32_t> at(n, -1);
    bool any = false;
    for (int32_t c = 0; c < kv.n_ctx(); ++c) {
        const int32_t p = kv.pos(c);
        if (p >= 0 && p < n && kv.has_seq(c, seq)) {
            at[p] = kv.token(c);
            any = true;
        }
    }
    if (!any) return 0;
    int32_t len = 0;
    while (len < n && at[len] >= 0 && at[len] == tokens[len]) ++len;
    return len;
}

}  // namespace

int32_t reuse_prompt(KvCache& kv, int32_t seq, const int32_t* tokens, int32_t n) {
    if (n < 0) fail(Status::invalid_argument, "prompt_reuse: n_tokens must be >= 0");
    if (n > 0 && !tokens) fail(Status::invalid_argument, "prompt_reuse: tokens is NULL");
    const int32_t limit = std::max(0, n - 1);
    const int32_t own = std::min(limit, cached_prefix(kv, seq, tokens, limit));
    int32_t best = own, best_seq = seq;
    for (int32_t s = 0; s < kv.n_seq_max() && best < limit; ++s) {
        if (s == seq) continue;
        const int32_t len = cached_prefix(kv, s, tokens, limit);
        if (len > best) { best = len; best_seq = s; }
    }
    if (best_seq == seq) {
        kv.seq_remove(seq, best, -1);
    } else {
        kv.seq_remove(seq, 0, -1);
        kv.seq_copy(best_seq, seq, 0, best);
    }
    return best;
}

std::vector<int32_t> seq_tokens(const KvCache& kv, int32_t seq) {
    std::vector<std::pair<int32_t, int32_t>> held;  // (position, token)
    for (int32_t c = 0; c < kv.n_ctx(); ++c)
        if (kv.pos(c) >= 0 && kv.has_seq(c, seq)) held.emplace_back(kv.pos(c), kv.token(c));
    std::sort(held.begin(), held.end());
    std::vector<int32_t> out(held.size());
    for (size_t i = 0; i < held.size(); ++i) out[i] = held[i].second;
    return out;
}

}  // namespace ikllm
