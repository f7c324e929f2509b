#include "grammar/automaton.h"

#include <algorithm>
#include <cstring>
#include <iterator>

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
    bool fresh = false;
    const uint32_t id = frame_ids_.intern(key, (uint32_t)frames_.size(), &fresh);
    if (fresh) {
        frames_.push_back({pos, parent});
        seen_.push_back(0);
    }
    return id;
}

// A frame positioned at element pos (over parent). Frames at the end of their alternative are
// never stored: finishing one resumes the parent directly (so right recursion, the form every
// repetition takes, does not grow the stack).
void Automaton::enter(uint32_t pos, int32_t parent) {
    if (g_->elems[pos].kind == ByteGrammar::kEnd) resume(parent);
    else expand(frame(pos, parent));
}

void Automaton::resume(int32_t parent) {
    if (parent < 0) out_accept_ = true;
    else expand((uint32_t)parent);
}

// Expands frame f and everything reachable from it without reading a byte. An explicit work
// list, not recursion: a grammar like ("a"?){0,99999} chains 10^5 empty steps, which would
// overflow the native stack.
void Automaton::expand(uint32_t f) {
    work_.clear();
    work_.push_back(f);
    while (!work_.empty()) {
        const uint32_t cur = work_.back();
        work_.pop_back();
        if (seen_[cur] == stamp_) continue;  // already expanded in this step
        seen_[cur] = stamp_;
        const Frame fr = frames_[cur];
        const ByteGrammar::Elem& e = g_->elems[fr.pos];
        if (e.kind == ByteGrammar::kBytes) {
            out_.push_back(cur);
            continue;
        }
        // A rule reference: its alternatives run over the continuation of this frame.
        const uint32_t cont = fr.pos + 1;
        const int32_t below =
            g_->elems[cont].kind == ByteGrammar::kEnd ? fr.parent : (int32_t)frame(cont, fr.parent);
        for (uint32_t a : g_->alts[e.value]) {
            if (g_->elems[a].kind != ByteGrammar::kEnd) work_.push_back(frame(a, below));
            else if (below < 0) out_accept_ = true;
            else work_.push_back((uint32_t)below);
        }
    }
}

int32_t Automaton::intern_out() {
    std::sort(out_.begin(), out_.end());
    out_.erase(std::unique(out_.begin(), out_.end()), out_.end());
    if (out_.size() > kMaxStacks)
        fail(Status::grammar_error, "grammar too ambiguous: more than the limit of " + std::to_string(kMaxStacks) +
                                        " ways to continue at once");
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

// Breadth-first over the states reachable by plain bytes, each examined once (a state first
// reached after j bytes dies no sooner from there than from j): the first level holding a dead
// end gives the depth. A state whose depth is already known is not expanded: it ends the search
// k + its depth bytes away. The search gives up after kMaxVisited states (only hostile grammars
// come near: free-text states loop back on themselves), or after stepping kMaxWork stacks, with
// the depth verified so far, a safe lower bound (callers then check byte by byte), so each state
// costs bounded work.
int32_t Automaton::compute_plain_depth(int32_t s) {
    constexpr int32_t kCap = 127;
    constexpr size_t kMaxVisited = 16;
    constexpr size_t kMaxWork = 1u << 14;  // stacks stepped through for new transitions
    size_t work = 0;
    int32_t best = kCap;  // the answer so far (kCap: no dead end found)
    std::vector<int32_t> level{s}, next_level, fresh, merged;
    std::vector<int32_t> visited{s};  // sorted
    int32_t depth = 0;                // strings of up to `depth` plain bytes are known to survive
    while (depth < best) {
        next_level.clear();
        for (int32_t x : level)
            for (int b = 0x20; b <= 0x7E; ++b) {
                if (!is_plain_byte((uint8_t)b)) continue;
                ++plain_depth_steps_;
                if (row(x)[b] == kUnknown) {  // a new transition: work in proportion to the stacks
                    work += states_[x].stacks.size() + 1;
                    if (work > kMaxWork) {
                        best = std::min(best, depth);
                        goto done;
                    }
                }
                const int32_t t = next(x, (uint8_t)b);
                if (t == kDead) {
                    best = depth;
                    goto done;
                }
                next_level.push_back(t);
            }
        std::sort(next_level.begin(), next_level.end());
        next_level.erase(std::unique(next_level.begin(), next_level.end()), next_level.end());
        ++depth;
        // Keep only states not seen at a shorter distance; known ones end their branch.
        fresh.clear();
        std::set_difference(next_level.begin(), next_level.end(), visited.begin(), visited.end(),
                            std::back_inserter(fresh));
        level.clear();
        for (int32_t t : fresh) {
            if (plain_depth_[t] >= 0) best = std::min(best, depth + plain_depth_[t]);
            else level.push_back(t);
        }
        if (level.empty()) break;  // every continuation was examined
        if (visited.size() + fresh.size() > kMaxVisited) {
            best = std::min(best, depth);
            break;
        }
        merged.clear();
        std::merge(visited.begin(), visited.end(), fresh.begin(), fresh.end(), std::back_inserter(merged));
        visited.swap(merged);
    }
done:
    best = std::min(best, kCap);
    plain_depth_[s] = (int8_t)best;
    return best;
}

size_t Automaton::memory_bytes() const {
    size_t n = frames_.size() * (sizeof(Frame) + sizeof(uint32_t)) + frame_ids_.memory_bytes() +
               trans_.size() * sizeof(int32_t);
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
