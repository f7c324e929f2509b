#include "tokenizer/bpe_ranks.h"

#include <algorithm>

#include "core/error.h"

namespace ikllm::tok {

void BpeRanks::build(const std::vector<std::string>& merges, Lookup lookup, const void* ctx) {
    map_.clear();
    map_.reserve(merges.size());
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
        if (sp == std::string::npos)
            fail(Status::invalid_file, "vocab: merge " + std::to_string(rank) + " ('" + m + "') has no separator");
        const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
        const int32_t l = lookup(ctx, left), r = lookup(ctx, right);
        if (l < 0 || r < 0) continue;
        joined.assign(left);
        joined.append(right);
        const int32_t res = lookup(ctx, joined);
        if (res < 0) continue;
        map_.emplace(key(l, r), (uint64_t(rank) << 32) | uint32_t(res));
    }
}

void BpeRanks::apply(std::vector<int32_t>& syms) const {
    const int32_t n = int32_t(syms.size());
    if (n < 2) return;
    struct Sym { int32_t id, prev, next; };
    struct Cand {
        uint32_t rank;
        int32_t left, right, lid, rid, result;
    };
    // Min-heap on (rank, left).
    auto worse = [](const Cand& a, const Cand& b) { return a.rank != b.rank ? a.rank > b.rank : a.left > b.left; };
    std::vector<Sym> s(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) s[size_t(i)] = {syms[size_t(i)], i - 1, i + 1 < n ? i + 1 : -1};
    std::vector<Cand> heap;
    heap.reserve(size_t(n));
    auto try_add = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const int32_t a = s[size_t(l)].id, b = s[size_t(r)].id;
        if (a < 0 || b < 0) return;
        auto it = map_.find(key(a, b));
        if (it == map_.end()) return;
        heap.push_back({uint32_t(it->second >> 32), l, r, a, b, int32_t(uint32_t(it->second))});
        std::push_heap(heap.begin(), heap.end(), worse);
    };
    for (int32_t i = 0; i + 1 < n; ++i) try_add(i, i + 1);
    constexpr int32_t kDead = -2;
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), worse);
        const Cand c = heap.back();
        heap.pop_back();
        Sym& L = s[size_t(c.left)];
        Sym& R = s[size_t(c.right)];
        // Stale: a side changed (ids only grow, so equal ids mean unchanged) or no longer adjacent.
        if (L.id != c.lid || R.id != c.rid || L.next != c.right) continue;
        L.id = c.result;
        L.next = R.next;
        if (R.next >= 0) s[size_t(R.next)].prev = c.left;
        R.id = kDead;
        try_add(L.prev, c.left);
        try_add(c.left, L.next);
    }
    syms.clear();
    for (int32_t i = 0; i >= 0; i = s[size_t(i)].next) syms.push_back(s[size_t(i)].id);
}

}  // namespace ikllm::tok
