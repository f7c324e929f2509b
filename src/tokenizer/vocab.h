// Vocabulary description as stored in GGUF `tokenizer.ggml.*` keys (docs/tokenizers.md §1-4).
// Plain data: load_vocab fills it from a file, tests may build one by hand; the Tokenizer
// validates it again on construction.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ikllm::gguf { class File; }

namespace ikllm::tok {

enum class VocabModel : uint8_t {
    none,  // "none" / "no_vocab": the model has no tokenizer
    spm,   // "llama": SentencePiece BPE with scores
    bpe,   // "gpt2": byte-level BPE with merges
    wpm,   // "bert": WordPiece
};

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
    undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

// Special token ids; -1 = none.
struct SpecialIds {
    int32_t bos = -1, eos = -1, unk = -1, sep = -1, pad = -1, mask = -1;
    int32_t eot = -1, eom = -1;
    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
};

struct VocabData {
    VocabModel model = VocabModel::none;
    std::string model_name;            // raw tokenizer.ggml.model
    std::string pre;                   // raw tokenizer.ggml.pre ("" when absent)
    std::string general_name;          // general.name (name-based quirks, §2)
    std::vector<std::string> tokens;   // index = token id
    std::vector<float> scores;         // empty (= all 0) or one per token
    std::vector<int32_t> token_types;  // empty (= all NORMAL) or one per token
    std::vector<std::string> merges;   // "left right", rank = index (bpe)
    SpecialIds ids;
    bool add_bos = false, add_eos = false, add_sep = false;
    bool add_space_prefix = false;     // spm: prepend ' ' to raw text
    std::string chat_template;         // tokenizer.chat_template ("" when absent)
};

// Defaults of ids and add_* flags for a model/pre before the GGUF keys override them (§3, §4).
// Throws Error(unsupported) for an unknown pre name of a bpe vocab.
void apply_vocab_defaults(VocabData& v);

// Reads the tokenizer keys. Throws Error(invalid_file) on inconsistent data (array lengths,
// wrong element types, missing required keys) and Error(unsupported) for tokenizer models
// or pre-tokenizers outside docs/tokenizers.md. Special ids out of range are ignored, as
// the reference does.
VocabData load_vocab(const gguf::File& f);

}  // namespace ikllm::tok
