// Fuzz target: tokenization of arbitrary bytes with the refdata vocabularies (loaded once per
// process, see fuzz_common.h). Input: byte 0 picks the vocabulary (modulo their number), byte 1
// the flags (bit 0 ADD_SPECIAL, bit 1 PARSE_SPECIAL), the rest is the text.
// Properties: ikllm_tokenize succeeds on any bytes, reports the same count when asked for the size
// first, returns ids inside the vocabulary, and their detokenization is valid UTF-8.
#include <vector>

#include "fuzz_common.h"

namespace ikllm::fuzz::tokenizer_target {

int run(const uint8_t* data, size_t size) {
    const Vocabs& v = vocabs();
    if (v.models.empty() || size < 2) return 0;
    const ikllm_model* m = v.models[data[0] % v.models.size()];
    const uint32_t flags = data[1] & 3u;
    const char* text = reinterpret_cast<const char*>(data + 2);
    const size_t len = size - 2;

    size_t n = 0;
    ikllm_status s = ikllm_tokenize(m, text, len, flags, nullptr, 0, &n);
    IKLLM_FUZZ_CHECK(s == IKLLM_OK || s == IKLLM_ERR_BUFFER_TOO_SMALL, "size query");
    std::vector<ikllm_token> ids(n);
    size_t n2 = 0;
    s = ikllm_tokenize(m, text, len, flags, ids.data(), ids.size(), &n2);
    IKLLM_FUZZ_CHECK(s == IKLLM_OK && n2 == n, "tokenize into a buffer of the reported size");
    const int32_t n_vocab = ikllm_model_n_vocab(m);
    for (ikllm_token id : ids) IKLLM_FUZZ_CHECK(id >= 0 && id < n_vocab, "token id inside the vocabulary");

    for (uint32_t dflags : {0u, (uint32_t)(IKLLM_DETOK_RENDER_SPECIAL | IKLLM_DETOK_KEEP_LEADING_SPACE)}) {
        size_t needed = 0;
        s = ikllm_detokenize(m, ids.data(), ids.size(), dflags, nullptr, 0, &needed);
        IKLLM_FUZZ_CHECK(s == IKLLM_ERR_BUFFER_TOO_SMALL && needed >= 1, "detokenize size query");
        std::vector<char> out(needed);
        s = ikllm_detokenize(m, ids.data(), ids.size(), dflags, out.data(), out.size(), &needed);
        IKLLM_FUZZ_CHECK(s == IKLLM_OK && needed == out.size() && out[needed - 1] == '\0', "detokenize");
        IKLLM_FUZZ_CHECK(valid_utf8(out.data(), needed - 1), "detokenized text is UTF-8");
    }
    return 0;
}

}  // namespace ikllm::fuzz::tokenizer_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::tokenizer_target::run(data, size);
}
#endif
