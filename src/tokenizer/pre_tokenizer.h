// Byte-level BPE pre-tokenization: `tokenizer.ggml.pre` -> regex set -> words.
// Every regex of docs/tokenizers.md §5.2 is a hand-written matcher (pretok_matchers.cpp)
// that reproduces the original regex, including the reference's category quirks (§5.3).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace ikllm::tok {

enum class PreSet : uint8_t {
    default_set,     // missing / "default"
    gpt2,
    llama3,
    qwen2,
    deepseek_llm,
    deepseek_coder,
    deepseek3,
    falcon,
    starcoder,
};

// What a `tokenizer.ggml.pre` name selects (docs/tokenizers.md §5.1).
struct PreConfig {
    PreSet set = PreSet::default_set;
    bool clean_spaces = true;     // detokenizer clean-up (§10.2)
    bool ignore_merges = false;   // a word that is a whole token skips BPE (§7.3)
    bool add_bos_default = false;
};

// Throws Error(unsupported) for names outside docs/tokenizers.md §5.1.
PreConfig resolve_pre(std::string_view name);

// Half-open range of code point indices.
struct Span {
    uint32_t b, e;
};

// Splits code points into words with the given regex set.
void pre_tokenize(PreSet set, const std::vector<uint32_t>& cpts, std::vector<Span>& words);

// --- individual matchers (exposed for pretok_matchers.cpp / tests) ---------------------
// A matcher returns the length of the match starting at `pos` inside the segment ending
// at `end`, or 0 when the regex does not match there.
using MatchFn = size_t (*)(const uint32_t* c, size_t pos, size_t end);

namespace match {
size_t gpt2(const uint32_t* c, size_t pos, size_t end);
size_t llama3(const uint32_t* c, size_t pos, size_t end);
size_t qwen2(const uint32_t* c, size_t pos, size_t end);
size_t default_punct(const uint32_t* c, size_t pos, size_t end);  // [\p{P}\$\+<=>\^~\|]+
size_t falcon_punct(const uint32_t* c, size_t pos, size_t end);   // [\p{P}\$\+<=>\^~\|`]+
size_t numbers(const uint32_t* c, size_t pos, size_t end);        // \p{N}+
size_t one_number(const uint32_t* c, size_t pos, size_t end);     // \p{N}
size_t numbers_1_3(const uint32_t* c, size_t pos, size_t end);    // \p{N}{1,3}
size_t three_digits(const uint32_t* c, size_t pos, size_t end);   // [0-9][0-9][0-9]
size_t cr_or_lf(const uint32_t* c, size_t pos, size_t end);       // [\r\n]
size_t dsllm_letters(const uint32_t* c, size_t pos, size_t end);  // \s?[A-Za-zµÀ-Ö...]+
size_t dsllm_punct(const uint32_t* c, size_t pos, size_t end);    // \s?[!-/:-~！-／...]+
size_t cjk(const uint32_t* c, size_t pos, size_t end);            // [一-龥ࠀ-一가-퟿]+
size_t space_letters(const uint32_t* c, size_t pos, size_t end);  // \s?\p{L}+
size_t space_punct(const uint32_t* c, size_t pos, size_t end);    // \s?\p{P}+
size_t ds3_cjk(const uint32_t* c, size_t pos, size_t end);        // [一-龥぀-ゟ゠-ヿ]+
size_t ds3_main(const uint32_t* c, size_t pos, size_t end);       // DEEPSEEK3 third regex
}  // namespace match

}  // namespace ikllm::tok
