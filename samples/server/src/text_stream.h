// Generated tokens to text for one response: incremental detokenization (whole UTF-8 only) and
// `stop` strings, holding back text that may still become a stop string so streamed and
// non-streamed responses carry the same text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ikllm.h"

namespace server {

class TextStream {
public:
    // render_special: write special tokens' text (chat output parsing needs the markers).
    TextStream(const ikllm_model* model, bool render_special, std::vector<std::string> stops);
    ~TextStream();
    TextStream(const TextStream&) = delete;
    TextStream& operator=(const TextStream&) = delete;
    // Text that is final after this token (possibly empty).
    std::string push(int32_t token);
    // End of generation: the rest of the text (up to a stop string).
    std::string finish();
    // A stop string was found: generation should end; nothing more is emitted.
    bool stopped() const { return stopped_; }

private:
    std::string release(bool at_end);
    ikllm_detok* detok_ = nullptr;
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

// The raw bytes of a token's piece (for logprobs' "token" and "bytes").
std::string token_piece(const ikllm_model* model, int32_t token);

}  // namespace server
