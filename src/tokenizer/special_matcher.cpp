#include "tokenizer/special_matcher.h"

#include <algorithm>

namespace ikllm::tok {
namespace {
inline bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
}  // namespace

void SpecialMatcher::build(std::vector<Candidate> cands) {
    cands_ = std::move(cands);
    nodes_.assign(1, Node{});
    std::fill(std::begin(root_kid_), std::end(root_kid_), -1);
    for (size_t ci = 0; ci < cands_.size(); ++ci) {
        uint32_t node = 0;
        for (unsigned char b : cands_[ci].text) {
            auto& kids = nodes_[node].kids;
            auto it = std::lower_bound(kids.begin(), kids.end(), b,
                                       [](const std::pair<uint8_t, uint32_t>& k, uint8_t v) { return k.first < v; });
            if (it != kids.end() && it->first == b) {
                node = it->second;
            } else {
                const uint32_t child = uint32_t(nodes_.size());
                kids.insert(it, {b, child});
                nodes_.push_back(Node{});
                if (node == 0) root_kid_[b] = int32_t(child);
                node = child;
            }
        }
        if (nodes_[node].cand < 0) nodes_[node].cand = int32_t(ci);
    }
}

void SpecialMatcher::partition(std::string_view text, bool parse_special, std::vector<Fragment>& out) const {
    out.clear();
    if (text.empty()) return;
    out.push_back({-1, 0, uint32_t(text.size())});
    if (cands_.empty()) return;

    // Which candidates occur anywhere in the text.
    std::vector<uint8_t> present(cands_.size(), 0);
    bool any = false;
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    for (size_t pos = 0; pos < text.size(); ++pos) {
        int32_t node = root_kid_[s[pos]];
        for (size_t j = pos + 1; node >= 0; ++j) {
            const Node& nd = nodes_[size_t(node)];
            if (nd.cand >= 0) { present[size_t(nd.cand)] = 1; any = true; }
            if (j >= text.size()) break;
            auto it = std::lower_bound(nd.kids.begin(), nd.kids.end(), s[j],
                                       [](const std::pair<uint8_t, uint32_t>& k, uint8_t v) { return k.first < v; });
            node = (it != nd.kids.end() && it->first == s[j]) ? int32_t(it->second) : -1;
        }
    }
    if (!any) return;

    std::vector<Fragment> next;
    for (size_t ci = 0; ci < cands_.size(); ++ci) {
        const Candidate& c = cands_[ci];
        if (!parse_special && c.control_like) continue;
        if (!present[ci]) continue;
        next.clear();
        for (const Fragment& f : out) {
            if (f.token >= 0) { next.push_back(f); continue; }
            size_t start = f.off;
            const size_t end = size_t(f.off) + f.len;
            while (start < end) {
                const size_t hit = text.substr(start, end - start).find(c.text);
                if (hit == std::string_view::npos) break;
                const size_t match = start + hit;
                size_t left_end = match;
                if (c.lstrip)
                    while (left_end > start && is_ascii_space(text[left_end - 1])) --left_end;
                if (left_end > start) next.push_back({-1, uint32_t(start), uint32_t(left_end - start)});
                next.push_back({c.id, uint32_t(match), uint32_t(c.text.size())});
                start = match + c.text.size();
                if (c.rstrip)
                    while (start < end && is_ascii_space(text[start])) ++start;
            }
            if (start < end) next.push_back({-1, uint32_t(start), uint32_t(end - start)});
        }
        out.swap(next);
    }
}

}  // namespace ikllm::tok
