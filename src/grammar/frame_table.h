// Interning table from a 64-bit key to a dense 32-bit id (open addressing, linear probing).
// The automaton interns every parse-stack frame it meets; a node-based std::unordered_map
// allocated once per frame, which dominated grammars with large state sets.
#pragma once
#include <cstdint>
#include <vector>

namespace ikllm::grammar {

class FrameTable {
public:
    // The id stored for key, or next_id (then stored) when the key is new; *fresh says which.
    uint32_t intern(uint64_t key, uint32_t next_id, bool* fresh) {
        if ((size_ + 1) * 2 > slots_.size()) grow();
        const size_t mask = slots_.size() - 1;
        for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
            Slot& s = slots_[i];
            if (s.id == kEmpty) {
                s = {key, next_id};
                ++size_;
                *fresh = true;
                return next_id;
            }
            if (s.key == key) {
                *fresh = false;
                return s.id;
            }
        }
    }
    void clear() {
        std::vector<Slot>().swap(slots_);  // give the memory back (memory_bytes drops)
        size_ = 0;
    }
    size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

private:
    static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
    struct Slot {
        uint64_t key;
        uint32_t id;
    };
    std::vector<Slot> slots_;
    size_t size_ = 0;

    static uint64_t hash(uint64_t x) {  // splitmix64 finalizer: spreads (pos, parent) pairs
        x ^= x >> 30;
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 27;
        x *= 0x94D049BB133111EBull;
        return x ^ (x >> 31);
    }
    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{0, kEmpty});
        size_ = 0;
        const size_t mask = slots_.size() - 1;
        for (const Slot& s : old) {
            if (s.id == kEmpty) continue;
            size_t i = hash(s.key) & mask;
            while (slots_[i].id != kEmpty) i = (i + 1) & mask;
            slots_[i] = s;
            ++size_;
        }
    }
};

}  // namespace ikllm::grammar
