// Finds special-token texts in raw text and partitions it (docs/tokenizers.md §4.1).
// Semantics follow the reference: candidates are tried longest text first; each splits the
// remaining raw fragments at all its (non-overlapping, left-to-right) occurrences.
// A byte trie over all candidate texts first finds which candidates occur at all, so long
// texts are not searched once per candidate.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ikllm::tok {

struct Fragment {
    int32_t token;      // >= 0: a matched special token; -1: raw text
    uint32_t off, len;  // raw text range in the input
};

class SpecialMatcher {
public:
    struct Candidate {
        int32_t id;
        std::string text;
        bool control_like;  // CONTROL or UNKNOWN: matched only with parse_special
        bool lstrip, rstrip;
    };
    // `cands` in priority order (longest text first).
    void build(std::vector<Candidate> cands);
    void partition(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;
    size_t size() const { return cands_.size(); }

private:
    struct Node {
        std::vector<std::pair<uint8_t, uint32_t>> kids;  // sorted by byte
        int32_t cand = -1;                               // index into cands_ ending here
    };
    std::vector<Candidate> cands_;
    std::vector<Node> nodes_;
    int32_t root_kid_[256];
};

}  // namespace ikllm::tok
