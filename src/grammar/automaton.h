// Lazily built deterministic automaton over bytes for a ByteGrammar. A state is the set of
// parse stacks the grammar can be in (a pushdown automaton made deterministic on the fly);
// stacks are shared linked frames interned by (position, parent), so equal stacks have equal
// ids and equal sets are one state. Transitions are cached per (state, byte): once a context
// has been seen, stepping through it is a table lookup. Used by one thread at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/byte_grammar.h"
#include "grammar/frame_table.h"

namespace ikllm::grammar {

class Automaton {
public:
    static constexpr int32_t kDead = -1;
    static constexpr int32_t kUnknown = -2;
    // Most parse stacks one state may hold: each byte costs work in proportion, so a grammar
    // ambiguous enough to exceed it (e.g. ("a"?){0,5000}: 5 000 ways after any "a") fails
    // with a grammar error instead of slowing every step down without bound.
    static constexpr size_t kMaxStacks = 4096;

    explicit Automaton(std::shared_ptr<const ByteGrammar> g);

    int32_t initial() const { return initial_; }
    // Successor of state s on byte b, or kDead.
    int32_t next(int32_t s, uint8_t b) {
        const int32_t t = trans_[(size_t)s * 256 + b];
        return t != kUnknown ? t : compute(s, b);
    }
    // Cached successor without computing: kUnknown when not known yet.
    const int32_t* row(int32_t s) const { return &trans_[(size_t)s * 256]; }
    int32_t compute(int32_t s, uint8_t b);

    // How many bytes of any plain text (is_plain_byte) state s is sure to survive: the largest
    // L <= 127 such that no string of up to L plain bytes leads to kDead. Cached per state.
    int32_t plain_depth(int32_t s) {
        const int8_t d = plain_depth_[s];
        return d >= 0 ? d : compute_plain_depth(s);
    }

    // Transitions looked at by plain_depth so far (each search looks at a state's at most once).
    uint64_t plain_depth_steps() const { return plain_depth_steps_; }

    bool accepting(int32_t s) const { return states_[s].accept; }     // the start rule is complete
    bool can_continue(int32_t s) const { return !states_[s].stacks.empty(); }  // more bytes may follow
    size_t n_states() const { return states_.size(); }
    size_t memory_bytes() const;

    // Drops every cached state and transition except the one given, which is rebuilt; returns
    // its new id. Keeps memory bounded for grammars with unbounded nesting.
    int32_t compact(int32_t keep);

private:
    struct Frame {
        uint32_t pos;    // next element of this frame
        int32_t parent;  // frame below, -1 = bottom
    };
    struct State {
        std::vector<uint32_t> stacks;  // sorted frame ids whose element is a byte set
        bool accept = false;
        ByteSet first{};               // bytes some stack can take
    };
    std::shared_ptr<const ByteGrammar> g_;
    std::vector<Frame> frames_;
    FrameTable frame_ids_;
    std::vector<State> states_;
    std::unordered_map<std::string, int32_t> state_ids_;
    std::vector<int32_t> trans_;
    std::vector<int8_t> plain_depth_;  // per state, -1 = not computed
    uint64_t plain_depth_steps_ = 0;
    int32_t initial_ = 0;
    // scratch for one step
    std::vector<uint32_t> out_;
    bool out_accept_ = false;
    std::vector<uint32_t> work_;  // frames left to expand
    std::vector<uint32_t> seen_;  // per frame: stamp of the last step that expanded it
    uint32_t stamp_ = 0;

    void next_stamp();
    int32_t compute_plain_depth(int32_t s);
    uint32_t frame(uint32_t pos, int32_t parent);
    void enter(uint32_t pos, int32_t parent);  // continue at element pos of a frame over parent
    void expand(uint32_t f);
    void resume(int32_t parent);               // the frame above parent finished
    int32_t intern_out();
    int32_t build_initial();
};

}  // namespace ikllm::grammar
