// Internal state of a Tokenizer, shared by the encode/decode translation units.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe_ranks.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_matcher.h"
#include "tokenizer/tokenizer.h"

namespace ikllm::tok {

// Attribute bits per token (docs/tokenizers.md §2).
enum TokenAttr : uint32_t {
    kAttrNormal = 1u << 0,
    kAttrUnknown = 1u << 1,
    kAttrControl = 1u << 2,
    kAttrUserDefined = 1u << 3,
    kAttrUnused = 1u << 4,
    kAttrByte = 1u << 5,
    kAttrLstrip = 1u << 6,
    kAttrRstrip = 1u << 7,
    kAttrEog = 1u << 8,
    kAttrTypeMask = kAttrNormal | kAttrUnknown | kAttrControl | kAttrUserDefined | kAttrUnused | kAttrByte,
};

// Keys view the strings of Impl::text, which never change after construction.
using TextToId = std::unordered_map<std::string_view, int32_t>;

struct Tokenizer::Impl {
    VocabModel model = VocabModel::none;
    std::string pre_name;
    PreConfig pre;
    bool add_bos = false, add_eos = false, add_sep = false, add_space_prefix = false;
    bool clean_spaces = false;
    SpecialIds ids;

    std::vector<std::string> text;
    std::vector<float> score;
    std::vector<uint32_t> attr;
    TextToId to_id;

    SpecialMatcher specials;  // CONTROL / USER_DEFINED / UNKNOWN texts

    std::array<int32_t, 256> byte_token{};  // spm byte fallback: <0xXX> (or the 1-byte token), -1
    BpeRanks bpe;                           // gpt2 merges
    size_t max_token_len = 0;               // wpm greedy match bound
    bool spm_split_words = false;           // see spm_can_split_words

    int32_t lookup(std::string_view s) const {
        auto it = to_id.find(s);
        return it == to_id.end() ? -1 : it->second;
    }
    void check_id(int32_t id) const;  // throws invalid_argument when out of range
};

// True when no token has U+2581 after a non-U+2581 character: SPM text can then be encoded
// word by word (every merge stays inside a word).
bool spm_can_split_words(const std::vector<std::string>& tokens);

// Model algorithms: append the ids of one raw text fragment.
void spm_encode(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out);
void bpe_encode(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out);
void wpm_encode(const Tokenizer::Impl& v, std::string_view text, std::vector<int32_t>& out);

}  // namespace ikllm::tok
