// Byte-level BPE over pre-tokenized words (docs/tokenizers.md §7).
#include <array>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace ikllm::tok {
namespace {
// UTF-8 text of the code point standing for each byte.
const std::array<std::string, 256>& byte_texts() {
    static const std::array<std::string, 256> t = [] {
        std::array<std::string, 256> a;
        for (int b = 0; b < 256; ++b) utf8_append(a[size_t(b)], byte_to_cpt(uint8_t(b)));
        return a;
    }();
    return t;
}
}  // namespace

void bpe_encode(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out) {
    // Invalid UTF-8 becomes U+FFFD here, as in the reference (§5.3).
    const std::vector<uint32_t> cpts = utf8_to_cpts(text);
    std::vector<Span> words;
    pre_tokenize(v.pre.set, cpts, words);
    const auto& texts = byte_texts();
    std::string word, encoded;
    std::vector<int32_t> syms;
    for (const Span& w : words) {
        word.clear();
        for (uint32_t i = w.b; i < w.e; ++i) utf8_append(word, cpts[i]);
        if (v.pre.ignore_merges) {
            encoded.clear();
            for (unsigned char c : word) encoded += texts[c];
            if (int32_t id = v.lookup(encoded); id >= 0) {
                out.push_back(id);
                continue;
            }
        }
        syms.clear();
        for (unsigned char c : word) syms.push_back(v.byte_token[c]);
        v.bpe.apply(syms);
        for (int32_t id : syms) {
            if (id >= 0) out.push_back(id);
            else if (v.ids.unk >= 0) out.push_back(v.ids.unk);  // incomplete vocabulary
        }
    }
}

}  // namespace ikllm::tok
