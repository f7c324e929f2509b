// Grammar state of one generation over a vocabulary: which tokens may come next (a bitset over
// token ids, cached per automaton state) and advancing by an accepted token. One thread at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/token_trie.h"

namespace ikllm::grammar {

enum class MatchState : int32_t {
    incomplete = 1,  // more text is required
    complete = 2,    // the start rule is matched; more text may still follow
    done = 3,        // the start rule is matched and nothing can follow: only end-of-generation
    failed = 4,      // a token that does not match was accepted
};

class TokenMatcher {
public:
    TokenMatcher(std::shared_ptr<const ByteGrammar> g, std::shared_ptr<const TokenTrie> vocab);

    // Allowed tokens now: bit i of word i/64 set when token i may follow. EOG tokens are set
    // only in the complete/done states; nothing is set once failed. Valid until the next call.
    const std::vector<uint64_t>& allowed();
    bool is_allowed(int32_t token);
    // Advances by one token; false (and the failed state) when it does not match. An EOG token
    // is accepted when the grammar is complete and leaves the state unchanged.
    bool accept(int32_t token);
    // Advances by raw bytes (for tests); false when they do not match.
    bool accept_bytes(const std::string& bytes);
    void reset();
    MatchState state() const;

    // Statistics for benchmarks.
    size_t n_walks() const { return walks_; }
    const Automaton& automaton() const { return a_; }

private:
    std::shared_ptr<const ByteGrammar> g_;
    std::shared_ptr<const TokenTrie> v_;
    Automaton a_;
    int32_t state_;
    bool failed_ = false;
    std::unordered_map<int32_t, std::vector<uint64_t>> masks_;  // per automaton state
    std::vector<uint64_t> none_;
    std::vector<int32_t> depth_state_;
    size_t walks_ = 0;

    void walk(int32_t s, std::vector<uint64_t>& mask);
    void bound_memory();
};

}  // namespace ikllm::grammar
