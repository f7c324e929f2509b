// WordPiece for "bert" vocabularies (docs/tokenizers.md §8): word-initial pieces carry a
// U+2581 prefix in GGUF, continuation pieces have none.
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode_data.h"
#include "tokenizer/utf8.h"

namespace ikllm::tok {
namespace {

bool is_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Normalised words: split on whitespace, control characters dropped, lower-cased,
// punctuation / ASCII symbols / CJK ideographs as single-character words.
std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> words;
    std::string cur;
    auto flush = [&] {
        if (!cur.empty()) words.push_back(std::move(cur));
        cur.clear();
    };
    for (uint32_t cp : utf8_to_cpts(text)) {
        uint32_t parts[3];
        int np = hangul_decompose(cp, parts);
        if (np == 0) { parts[0] = cpt_nfd_base(cp); np = 1; }
        for (int k = 0; k < np; ++k) {
            uint32_t c = parts[k];
            const uint8_t f0 = cpt_flags(c);
            if (f0 & kSpace) { flush(); continue; }
            if (c == 0 || c == 0xFFFD || (f0 & kControl)) continue;
            c = cpt_to_lower(c);
            const uint8_t f = cpt_flags(c);
            if ((f & kPunct) || ((f & kSymbol) && c < 0x7F) || is_cjk(c)) {
                flush();
                utf8_append(cur, c);
                flush();
                continue;
            }
            utf8_append(cur, c);
        }
    }
    flush();
    return words;
}

}  // namespace

void wpm_encode(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out) {
    std::string w;
    for (const std::string& word : split_words(text)) {
        w = "\xE2\x96\x81" + word;
        const size_t first = out.size();
        size_t i = 0;
        while (i < w.size()) {
            // Greedy longest match from byte i.
            bool found = false;
            const size_t max_len = std::min(w.size(), i + v.max_token_len + 1) - i;
            for (size_t len = max_len; len > 0; --len) {
                const int32_t id = v.lookup(std::string_view(w).substr(i, len));
                if (id >= 0) {
                    out.push_back(id);
                    i += len;
                    found = true;
                    break;
                }
            }
            if (!found) {
                out.resize(first);
                if (v.ids.unk >= 0) out.push_back(v.ids.unk);
                break;
            }
        }
    }
}

}  // namespace ikllm::tok
