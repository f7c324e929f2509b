// Incremental UTF-8 decoder for streaming detokenization: token pieces may split a
// character, so bytes are buffered until a sequence completes. Output is always valid
// UTF-8; ill-formed input becomes U+FFFD once per maximal subpart (Unicode §3.9, the
// WHATWG "replacement" policy).
#pragma once
#include <string>
#include <string_view>

namespace ikllm::tok {

class Utf8Stream {
public:
    // Appends `bytes` and returns the newly completed text. A sequence that may still be
    // completed by later bytes is held back.
    std::string feed(std::string_view bytes);
    // Ends the stream: a held-back incomplete sequence becomes one U+FFFD.
    std::string flush();
    void reset() { pending_.clear(); }
    // Bytes currently held back (0..3).
    size_t pending() const { return pending_.size(); }

private:
    std::string pending_;  // a proper prefix of a well-formed sequence
};

}  // namespace ikllm::tok
