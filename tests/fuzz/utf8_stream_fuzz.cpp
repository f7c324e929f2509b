// Fuzz target: the incremental UTF-8 decoder (src/tokenizer/utf8_stream.*) on its own.
// Input: byte 0 seeds the chunking, the rest is the byte stream. The stream is decoded twice:
// in one feed and in chunks of 1..16 bytes (sizes drawn from the seed).
// Properties: every output is valid UTF-8, at most 3 bytes are ever held back, the chunked result
// equals the one-shot result, valid UTF-8 input comes back unchanged, and each ill-formed byte
// produces at most one U+FFFD (output length <= 3 * input length).
#include <string>

#include "fuzz_common.h"
#include "tokenizer/utf8_stream.h"

namespace ikllm::fuzz::utf8_target {

int run(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    uint32_t rng = data[0] * 2654435761u + 1;
    const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);

    tok::Utf8Stream one;
    std::string whole = one.feed(in);
    IKLLM_FUZZ_CHECK(valid_utf8(whole) && one.pending() <= 3, "one-shot feed");
    whole += one.flush();
    IKLLM_FUZZ_CHECK(valid_utf8(whole) && one.pending() == 0, "one-shot flush");
    IKLLM_FUZZ_CHECK(whole.size() <= 3 * in.size(), "at most one U+FFFD per input byte");
    if (valid_utf8(in)) IKLLM_FUZZ_CHECK(whole == in, "valid input passes through unchanged");

    tok::Utf8Stream chunked;
    std::string pieces;
    for (size_t pos = 0; pos < in.size();) {
        rng = rng * 1103515245u + 12345u;
        const size_t n = std::min<size_t>(1 + (rng >> 16) % 16, in.size() - pos);
        const std::string out = chunked.feed(in.substr(pos, n));
        IKLLM_FUZZ_CHECK(valid_utf8(out) && chunked.pending() <= 3, "chunked feed");
        pieces += out;
        pos += n;
    }
    pieces += chunked.flush();
    IKLLM_FUZZ_CHECK(pieces == whole, "chunking does not change the result");
    return 0;
}

}  // namespace ikllm::fuzz::utf8_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::utf8_target::run(data, size);
}
#endif
