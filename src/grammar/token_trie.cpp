#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace ikllm::grammar {

TokenTrie build_token_trie(std::vector<std::string> pieces, std::vector<TokenKind> kinds) {
    if (pieces.size() != kinds.size()) fail(Status::internal, "token trie: pieces and kinds differ in length");
    TokenTrie t;
    const size_t n = pieces.size();
    for (size_t i = 0; i < n; ++i) {
        if (kinds[i] == TokenKind::text && pieces[i].empty()) kinds[i] = TokenKind::excluded;
        if (kinds[i] == TokenKind::eog) t.eog.push_back((int32_t)i);
        if (pieces[i].size() > 65535) kinds[i] = TokenKind::excluded;  // depth is 16-bit
    }
    std::vector<int32_t> order;
    for (size_t i = 0; i < n; ++i)
        if (kinds[i] == TokenKind::text) order.push_back((int32_t)i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return pieces[a] != pieces[b] ? pieces[a] < pieces[b] : a < b;
    });
    // Sorted pieces: a prefix comes before its extensions, so the trie is emitted depth-first.
    std::vector<uint32_t> path;  // node index per depth-1
    std::vector<uint32_t> parent;
    const std::string* prev = nullptr;
    for (int32_t id : order) {
        const std::string& p = pieces[id];
        size_t common = 0;
        if (prev) {
            const size_t m = std::min(prev->size(), p.size());
            while (common < m && (*prev)[common] == p[common]) ++common;
        }
        while (path.size() > common) {  // close subtrees not shared with this piece
            t.nodes[path.back()].skip = (uint32_t)t.nodes.size();
            path.pop_back();
        }
        for (size_t d = common; d < p.size(); ++d) {
            parent.push_back(path.empty() ? UINT32_MAX : path.back());
            path.push_back((uint32_t)t.nodes.size());
            t.nodes.push_back({0, (uint32_t)t.toks.size(), (uint16_t)(d + 1), (uint8_t)p[d], TokenTrie::kPlainBelow});
        }
        t.toks.push_back(id);  // ends at the deepest node (the last one made, or the same piece again)
        t.max_depth = std::max<uint16_t>(t.max_depth, (uint16_t)p.size());
        prev = &p;
    }
    while (!path.empty()) {
        t.nodes[path.back()].skip = (uint32_t)t.nodes.size();
        path.pop_back();
    }
    // Subtree summaries, children before parents (reverse depth-first order).
    std::vector<uint32_t> height(t.nodes.size(), 0);
    for (size_t i = t.nodes.size(); i-- > 0;) {
        const uint32_t p = parent[i];
        if (p == UINT32_MAX) continue;
        height[p] = std::max(height[p], height[i] + 1);
        if (!is_plain_byte(t.nodes[i].byte) || !(t.nodes[i].below & TokenTrie::kPlainBelow))
            t.nodes[p].below &= (uint8_t)~TokenTrie::kPlainBelow;
    }
    for (size_t i = 0; i < t.nodes.size(); ++i) {
        if (height[i] >= 128) t.nodes[i].below = 127;  // too deep to summarize: never taken whole
        else t.nodes[i].below = (uint8_t)((t.nodes[i].below & TokenTrie::kPlainBelow) | height[i]);
    }
    t.nodes.push_back({(uint32_t)t.nodes.size() + 1, (uint32_t)t.toks.size(), 0, 0, 0});  // sentinel
    t.pieces = std::move(pieces);
    t.kinds = std::move(kinds);
    return t;
}

}  // namespace ikllm::grammar
