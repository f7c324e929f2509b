// SentencePiece-style BPE with scores (docs/tokenizers.md §6 steps 3-6).
#include <algorithm>

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace ikllm::tok {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581

void encode_chunk(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out) {
    if (text.empty()) return;
    struct Sym { uint32_t off, len; int32_t prev, next; };
    std::vector<Sym> sym;
    sym.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const size_t len = std::min(utf8_lead_len(uint8_t(text[i])), text.size() - i);
        const int32_t k = int32_t(sym.size());
        sym.push_back({uint32_t(i), uint32_t(len), k - 1, -1});
        if (k > 0) sym[size_t(k - 1)].next = k;
        i += len;
    }

    struct Bigram { float score; int32_t left, right; uint32_t size; };
    // Max-heap on score; equal scores: the leftmost pair first.
    auto lower = [](const Bigram& a, const Bigram& b) { return a.score != b.score ? a.score < b.score : a.left > b.left; };
    std::vector<Bigram> heap;
    auto try_add = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const uint32_t size = sym[size_t(l)].len + sym[size_t(r)].len;
        const int32_t id = v.lookup(text.substr(sym[size_t(l)].off, size));
        if (id < 0) return;
        heap.push_back({v.score[size_t(id)], l, r, size});
        std::push_heap(heap.begin(), heap.end(), lower);
    };
    for (size_t i = 1; i < sym.size(); ++i) try_add(int32_t(i - 1), int32_t(i));
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), lower);
        const Bigram b = heap.back();
        heap.pop_back();
        Sym& L = sym[size_t(b.left)];
        Sym& R = sym[size_t(b.right)];
        if (L.len == 0 || R.len == 0 || L.next != b.right || L.len + R.len != b.size) continue;  // stale
        L.len += R.len;
        R.len = 0;
        L.next = R.next;
        if (R.next >= 0) sym[size_t(R.next)].prev = b.left;
        try_add(L.prev, b.left);
        try_add(b.left, L.next);
    }

    for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) {
        const std::string_view s = text.substr(sym[size_t(i)].off, sym[size_t(i)].len);
        const int32_t id = v.lookup(s);
        if (id >= 0) { out.push_back(id); continue; }
        // Byte fallback: <0xXX>, else the one-byte token, else UNK.
        for (unsigned char c : s) {
            int32_t t = v.byte_token[c];
            if (t < 0) t = v.ids.unk;
            if (t < 0)
                fail(Status::invalid_file, "tokenizer: byte " + std::to_string(c) + " has no token and there is no UNK");
            out.push_back(t);
        }
    }
}

}  // namespace

bool spm_can_split_words(const std::vector<std::string>& tokens) {
    for (const std::string& t : tokens) {
        size_t i = 0;
        while (t.compare(i, kSpmSpace.size(), kSpmSpace) == 0) i += kSpmSpace.size();
        if (t.find(kSpmSpace, i) != std::string::npos) return false;
    }
    return true;
}

void spm_encode(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out) {
    if (!v.spm_split_words) return encode_chunk(v, text, out);
    // No token contains U+2581 after another character, so no merge can cross the start of a
    // U+2581 run: the runs split the text into independent chunks (same result, small heaps).
    size_t start = 0;
    for (size_t p = text.find(kSpmSpace, 1); p != std::string_view::npos; p = text.find(kSpmSpace, p + 1)) {
        if (p >= 3 && text.compare(p - 3, 3, kSpmSpace) == 0) continue;  // inside a run
        encode_chunk(v, text.substr(start, p - start), out);
        start = p;
    }
    encode_chunk(v, text.substr(start), out);
}

}  // namespace ikllm::tok
