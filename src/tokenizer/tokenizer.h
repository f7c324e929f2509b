// Text <-> token ids for the vocabularies of docs/tokenizers.md: SentencePiece-style BPE
// ("llama"), byte-level BPE ("gpt2", with the pre-tokenizers of §5) and WordPiece ("bert").
// Immutable after construction; every method is const and safe to call from many threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace ikllm::tok {

class Tokenizer {
public:
    // Validates the data (Error(invalid_file) for inconsistent vocabularies, Error(unsupported)
    // for an unknown pre-tokenizer) and builds the lookup structures.
    explicit Tokenizer(const VocabData& data);
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = default;
    Tokenizer& operator=(const Tokenizer&) = default;

    // add_special: BOS/EOS per the vocabulary's add_bos/add_eos (WordPiece: CLS ... SEP).
    // parse_special: match CONTROL/UNKNOWN token texts in `text`; USER_DEFINED tokens are
    // always matched (docs/tokenizers.md §4.1).
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

    // Bytes this token contributes to detokenized text (may be a partial UTF-8 sequence).
    // CONTROL/UNKNOWN tokens render as their text when render_special, else as "".
    std::string piece(int32_t id, bool render_special = true) const;

    // Concatenated pieces (docs/tokenizers.md §10.2). strip_leading_space applies the
    // vocabulary's rule (SentencePiece: the first token loses one leading space, undoing the
    // space prefix). remove_bos_eos drops a leading BOS / trailing EOS the vocabulary would
    // add (and then keeps the space). The BPE/WordPiece "clean spaces" pass applies per vocab.
    std::string decode(const int32_t* ids, size_t n, bool strip_leading_space, bool render_special,
                       bool remove_bos_eos = false) const;
    std::string decode(const std::vector<int32_t>& ids, bool strip_leading_space, bool render_special,
                       bool remove_bos_eos = false) const {
        return decode(ids.data(), ids.size(), strip_leading_space, render_special, remove_bos_eos);
    }

    VocabModel model() const;
    const std::string& pre() const;
    int32_t n_vocab() const;
    const SpecialIds& special_ids() const;  // after EOT/EOM/FIM detection (§2)
    int32_t bos() const { return special_ids().bos; }
    int32_t eos() const { return special_ids().eos; }
    int32_t eot() const { return special_ids().eot; }
    int32_t eom() const { return special_ids().eom; }
    int32_t unk() const { return special_ids().unk; }
    bool add_bos() const;
    bool add_eos() const;
    bool add_space_prefix() const;

    // End-of-generation set (§2): EOS, EOT, EOM, FIM pad/rep/sep and the known end texts.
    bool is_eog(int32_t id) const;
    const std::string& token_text(int32_t id) const;
    float token_score(int32_t id) const;
    TokenType token_type(int32_t id) const;  // after the re-typing rules of §2
    bool is_control(int32_t id) const;
    bool is_special(int32_t id) const;       // CONTROL, USER_DEFINED or UNKNOWN
    bool is_byte(int32_t id) const;
    // Id of the token with exactly this text, or -1.
    int32_t find_token(std::string_view text) const;

    struct Impl;

private:
    std::shared_ptr<const Impl> impl_;
    const Impl& impl() const { return *impl_; }
};

}  // namespace ikllm::tok
