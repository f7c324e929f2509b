// BPE merge table and the merge loop (docs/tokenizers.md §7 steps 4-5), on token ids:
// a merge (left, right) -> (rank, result) applies when both sides and the result are tokens.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ikllm::tok {

class BpeRanks {
public:
    using Lookup = int32_t (*)(const void* ctx, std::string_view text);
    // Parses "left right" merges (split at the first space at index >= 1; rank = index, the
    // first occurrence of a pair wins). Throws Error(invalid_file) for a merge without a space.
    // Merges whose parts or result are not tokens are skipped: they can never apply to ids.
    void build(const std::vector<std::string>& merges, Lookup lookup, const void* ctx);
    bool empty() const { return map_.empty(); }
    size_t size() const { return map_.size(); }

    // Merges adjacent symbols (ids; -1 = not a token, never merged) by lowest rank, ties to
    // the leftmost pair; replaces `syms` with the result.
    void apply(std::vector<int32_t>& syms) const;

private:
    static uint64_t key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
    std::unordered_map<uint64_t, uint64_t> map_;  // pair -> rank << 32 | result
};

}  // namespace ikllm::tok
