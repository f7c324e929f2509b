#include "grammar/token_matcher.h"

#include "core/error.h"

namespace ikllm::grammar {

namespace {
// Caches are dropped (and rebuilt on demand) past this size: deep recursive grammars can
// otherwise create states without bound.
constexpr size_t kMaxCacheBytes = size_t(256) << 20;
}  // namespace

TokenMatcher::TokenMatcher(std::shared_ptr<const ByteGrammar> g, std::shared_ptr<const TokenTrie> vocab)
    : g_(std::move(g)), v_(std::move(vocab)), a_(g_), state_(a_.initial()) {
    none_.assign(((size_t)v_->n_vocab() + 63) / 64, 0);
    depth_state_.assign((size_t)v_->max_depth + 1, 0);
    if (state_ == Automaton::kDead) failed_ = true;  // cannot happen for a parsed grammar
}

void TokenMatcher::reset() {
    state_ = a_.initial();
    failed_ = state_ == Automaton::kDead;
}

MatchState TokenMatcher::state() const {
    if (failed_) return MatchState::failed;
    if (!a_.accepting(state_)) return MatchState::incomplete;
    return a_.can_continue(state_) ? MatchState::complete : MatchState::done;
}

// Depth-first walk of the vocabulary trie from state s: a node's automaton state is its
// parent's advanced by the node's byte; a dead state skips the whole subtree.
void TokenMatcher::walk(int32_t s, std::vector<uint64_t>& mask) {
    ++walks_;
    const auto& nodes = v_->nodes;
    const int32_t* toks = v_->toks.data();
    uint64_t* m = mask.data();
    int32_t* st = depth_state_.data();
    st[0] = s;
    const size_t n = nodes.size() - 1;  // without the sentinel
    for (size_t i = 0; i < n;) {
        const TokenTrie::Node& nd = nodes[i];
        const int32_t from = st[nd.depth - 1];
        int32_t t = a_.row(from)[nd.byte];
        if (t == Automaton::kUnknown) t = a_.compute(from, nd.byte);
        if (t == Automaton::kDead) {
            i = nd.skip;
            continue;
        }
        st[nd.depth] = t;
        // A subtree of plain bytes no deeper than the state is sure to survive: take it whole.
        const uint32_t end = (nd.below & TokenTrie::kPlainBelow) && (nd.below & 0x7F) > 0 &&
                                     a_.plain_depth(t) >= (nd.below & 0x7F)
                                 ? nd.skip
                                 : (uint32_t)i + 1;
        for (uint32_t k = nd.tok_begin, e = nodes[end].tok_begin; k < e; ++k) {
            const int32_t id = toks[k];
            m[id >> 6] |= 1ull << (id & 63);
        }
        i = end;
    }
}

void TokenMatcher::bound_memory() {
    size_t bytes = a_.memory_bytes() + masks_.size() * (none_.size() * 8 + 64);
    if (bytes <= kMaxCacheBytes) return;
    masks_.clear();
    state_ = a_.compact(state_);
}

const std::vector<uint64_t>& TokenMatcher::allowed() {
    if (failed_) return none_;
    auto it = masks_.find(state_);
    if (it != masks_.end()) return it->second;
    bound_memory();
    std::vector<uint64_t> mask(none_.size(), 0);
    if (a_.can_continue(state_)) walk(state_, mask);
    if (a_.accepting(state_))
        for (int32_t id : v_->eog) mask[id >> 6] |= 1ull << (id & 63);
    return masks_.emplace(state_, std::move(mask)).first->second;
}

bool TokenMatcher::is_allowed(int32_t token) {
    if (token < 0 || token >= v_->n_vocab()) return false;
    const auto& m = allowed();
    return (m[token >> 6] >> (token & 63)) & 1;
}

bool TokenMatcher::accept_bytes(const std::string& bytes) {
    if (failed_) return false;
    int32_t s = state_;
    for (unsigned char c : bytes) {
        s = a_.next(s, c);
        if (s == Automaton::kDead) {
            failed_ = true;
            return false;
        }
    }
    state_ = s;
    return true;
}

bool TokenMatcher::accept(int32_t token) {
    if (failed_) return false;
    if (token < 0 || token >= v_->n_vocab()) {
        failed_ = true;
        return false;
    }
    switch (v_->kinds[token]) {
        case TokenKind::eog:
            if (!a_.accepting(state_)) failed_ = true;
            return !failed_;
        case TokenKind::excluded:
            failed_ = true;
            return false;
        case TokenKind::text:
            return accept_bytes(v_->pieces[token]);
    }
    return false;
}

}  // namespace ikllm::grammar
