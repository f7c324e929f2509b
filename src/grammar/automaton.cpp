#include "grammar/automaton.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "grammar/token_trie.h"

namespace ikllm::grammar {

Automaton::Automaton(std::shared_ptr<const ByteGrammar> g) : g_(std::move(g)) { initial_ = build_initial(); }

void Automaton::next_stamp() {
    if (++stamp_ == 0) {  // wrapped: forget every mark
        std::fill(seen_.begin(), seen_.end(), 0u);
        stamp_ = 1;
    }
}

int32_t Automaton::build_initial() {
    out_.clear();
    out_accept_ = false;
    next_stamp();
    for (uint32_t a : g_->alts[g_->root]) enter(a, -1);
    return intern_out();
}

uint32_t Automaton::frame(uint32_t pos, int32_t parent) {
    const uint64_t key = ((uint64_t)pos << 32) | (uint32_t)parent;
    auto [it, fresh] = frame_ids_.try_emplace(key, (uint32_t)frames_.size());
    if (fresh) {
        frames_.push_back({pos, parent});
        seen_.push_back(0);
    }
    return it->second;
}

// A frame positioned at element pos (over parent). Frames at the end of their alternative are
// never stored: finishing one resumes the parent directly (so right recursion, the form every
// repetition takes, does not grow the stack).
void Automaton::enter(uint32_t pos, int32_t parent) {
    if (g_->elems[pos].kind == ByteGrammar::kEnd) {
        resume(parent);
        return;
    }
    expand(frame(pos, parent));
}

void Automaton::resume(int32_t parent) {
    if (parent < 0) {
        out_accept_ = true;
        return;
    }
    expand((uint32_t)parent);
}

void Automaton::expand(uint32_t f) {
    if (seen_[f] == stamp_) return;  // already expanded in this step
    seen_[f] = stamp_;
    const Frame fr = frames_[f];
    const ByteGrammar::Elem& e = g_->elems[fr.pos];
    if (e.kind == ByteGrammar::kBytes) {
        out_.push_back(f);
        return;
    }
    // A rule reference: its alternatives run over the continuation of this frame.
    const uint32_t cont = fr.pos + 1;
    const int32_t below = g_->elems[cont].kind == ByteGrammar::kEnd ? fr.parent : (int32_t)frame(cont, fr.parent);
    for (uint32_t a : g_->alts[e.value]) {
        if (g_->elems[a].kind == ByteGrammar::kEnd) resume(below);
        else expand(frame(a, below));
    }
}

int32_t Automaton::intern_out() {
    std::sort(out_.begin(), out_.end());
    out_.erase(std::unique(out_.begin(), out_.end()), out_.end());
    if (out_.empty() && !out_accept_) return kDead;
    std::string key((const char*)out_.data(), out_.size() * sizeof(uint32_t));
    key += out_accept_ ? '\1' : '\0';
    auto [it, fresh] = state_ids_.try_emplace(std::move(key), (int32_t)states_.size());
    if (fresh) {
        ByteSet first{};
        for (uint32_t f : out_) {
            const ByteSet& set = g_->sets[g_->elems[frames_[f].pos].value];
            for (int w = 0; w < 4; ++w) first[w] |= set[w];
        }
        states_.push_back({out_, out_accept_, first});
        trans_.resize(states_.size() * 256, kUnknown);
        plain_depth_.push_back(-1);
    }
    return it->second;
}

int32_t Automaton::compute(int32_t s, uint8_t b) {
    out_.clear();
    out_accept_ = false;
    next_stamp();
    if (!byteset_has(states_[s].first, b)) {  // no stack can take this byte
        trans_[(size_t)s * 256 + b] = kDead;
        return kDead;
    }
    // Only frames_ grows while advancing; states_ changes in intern_out, after the loop.
    for (uint32_t f : states_[s].stacks) {
        const Frame fr = frames_[f];
        if (!byteset_has(g_->sets[g_->elems[fr.pos].value], b)) continue;
        enter(fr.pos + 1, fr.parent);
    }
    const int32_t t = intern_out();
    trans_[(size_t)s * 256 + b] = t;
    return t;
}

// Breadth-first over the set of states reachable by k plain bytes: the first level holding a
// dead end gives the depth; a level equal to the previous one repeats forever.
int32_t Automaton::compute_plain_depth(int32_t s) {
    constexpr int32_t kCap = 127;
    std::vector<int32_t> level{s}, next_level;
    int32_t depth = 0;
    while (depth < kCap) {
        next_level.clear();
        for (int32_t x : level)
            for (int b = 0x20; b <= 0x7E; ++b) {
                if (!is_plain_byte((uint8_t)b)) continue;
                const int32_t t = next(x, (uint8_t)b);
                if (t == kDead) {
                    plain_depth_[s] = (int8_t)depth;
                    return depth;
                }
                next_level.push_back(t);
            }
        std::sort(next_level.begin(), next_level.end());
        next_level.erase(std::unique(next_level.begin(), next_level.end()), next_level.end());
        ++depth;
        if (next_level == level) {
            depth = kCap;
            break;
        }
        level.swap(next_level);
    }
    plain_depth_[s] = (int8_t)depth;
    return depth;
}

size_t Automaton::memory_bytes() const {
    size_t n = frames_.size() * (sizeof(Frame) + 24 + sizeof(uint32_t)) + trans_.size() * sizeof(int32_t);
    for (const State& st : states_) n += st.stacks.size() * (2 * sizeof(uint32_t)) + 64;
    return n;
}

int32_t Automaton::compact(int32_t keep) {
    // Rebuild the kept state's stacks as position lists, then intern them afresh.
    std::vector<std::vector<uint32_t>> stacks;
    for (uint32_t f : states_[keep].stacks) {
        std::vector<uint32_t> positions;
        for (int32_t p = (int32_t)f; p >= 0; p = frames_[p].parent) positions.push_back(frames_[p].pos);
        stacks.push_back(std::move(positions));
    }
    const bool accept = states_[keep].accept;
    frames_.clear();
    frame_ids_.clear();
    seen_.clear();
    states_.clear();
    state_ids_.clear();
    trans_.clear();
    plain_depth_.clear();
    initial_ = build_initial();
    out_.clear();
    for (const auto& positions : stacks) {
        int32_t parent = -1;
        for (size_t i = positions.size(); i-- > 0;) parent = (int32_t)frame(positions[i], parent);
        out_.push_back((uint32_t)parent);
    }
    out_accept_ = accept;
    return intern_out();
}

}  // namespace ikllm::grammar
