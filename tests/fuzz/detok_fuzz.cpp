// Fuzz target: streaming detokenization (ikllm_detok_*) and ikllm_detokenize / ikllm_token_to_piece
// with random id sequences, including ids outside the vocabulary. Input: byte 0 picks the
// vocabulary, byte 1 the detok flags (bits 0-1) and where flushes happen (bits 2-7: flush after
// every k-th token, 0 = only at the end), then 3 bytes per id: r < 0xFFFFF0 maps to
// r % (n_vocab + 8) - 4 (a few ids below 0 and at/after n_vocab); larger r give INT32_MIN/MAX.
// Properties: every text returned is valid UTF-8, out-of-range ids fail with
// IKLLM_ERR_INVALID_ARGUMENT without disturbing the stream, valid ids always succeed.
#include <climits>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace ikllm::fuzz::detok_target {

ikllm_token decode_id(const uint8_t* p, int32_t n_vocab) {
    const uint32_t r = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16);
    if (r >= 0xFFFFF0u) return (r & 1) ? INT32_MAX : INT32_MIN;
    return (ikllm_token)(r % (uint32_t)(n_vocab + 8)) - 4;
}

int run(const uint8_t* data, size_t size) {
    const Vocabs& v = vocabs();
    if (v.models.empty() || size < 2) return 0;
    const ikllm_model* m = v.models[data[0] % v.models.size()];
    const uint32_t flags = data[1] & 3u;
    const unsigned flush_every = data[1] >> 2;
    const int32_t n_vocab = ikllm_model_n_vocab(m);

    ikllm_detok* d = nullptr;
    IKLLM_FUZZ_CHECK(ikllm_detok_create(m, flags, &d) == IKLLM_OK, "detok_create");
    std::vector<ikllm_token> valid;
    unsigned pushed = 0;
    for (size_t i = 2; i + 3 <= size; i += 3) {
        const ikllm_token id = decode_id(data + i, n_vocab);
        const bool in_range = id >= 0 && id < n_vocab;
        const char* text = nullptr;
        size_t len = 0;
        const ikllm_status s = ikllm_detok_push(d, id, &text, &len);
        if (!in_range) {
            IKLLM_FUZZ_CHECK(s == IKLLM_ERR_INVALID_ARGUMENT, "out-of-range id is rejected");
            continue;
        }
        IKLLM_FUZZ_CHECK(s == IKLLM_OK && text != nullptr, "detok_push");
        IKLLM_FUZZ_CHECK(valid_utf8(text, len) && text[len] == '\0', "pushed text is UTF-8");
        valid.push_back(id);

        char piece[8];
        size_t needed = 0;
        const ikllm_status ps = ikllm_token_to_piece(m, id, flags, piece, sizeof piece, &needed);
        IKLLM_FUZZ_CHECK(ps == IKLLM_OK || ps == IKLLM_ERR_BUFFER_TOO_SMALL, "token_to_piece");
        if (flush_every && ++pushed % flush_every == 0) {
            IKLLM_FUZZ_CHECK(ikllm_detok_flush(d, &text, &len) == IKLLM_OK, "detok_flush");
            IKLLM_FUZZ_CHECK(valid_utf8(text, len), "flushed text is UTF-8");
        }
    }
    const char* text = nullptr;
    size_t len = 0;
    IKLLM_FUZZ_CHECK(ikllm_detok_flush(d, &text, &len) == IKLLM_OK, "detok_flush");
    IKLLM_FUZZ_CHECK(valid_utf8(text, len), "flushed text is UTF-8");
    ikllm_detok_free(d);

    size_t needed = 0;
    ikllm_status s = ikllm_detokenize(m, valid.data(), valid.size(), flags, nullptr, 0, &needed);
    IKLLM_FUZZ_CHECK(s == IKLLM_ERR_BUFFER_TOO_SMALL, "detokenize size query");
    std::string out(needed, '\0');
    s = ikllm_detokenize(m, valid.data(), valid.size(), flags, out.data(), out.size(), &needed);
    IKLLM_FUZZ_CHECK(s == IKLLM_OK && needed == out.size(), "detokenize");
    IKLLM_FUZZ_CHECK(valid_utf8(out.data(), needed - 1), "detokenized text is UTF-8");
    return 0;
}

}  // namespace ikllm::fuzz::detok_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::detok_target::run(data, size);
}
#endif
