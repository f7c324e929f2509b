// Small UTF-8 helpers shared by the tokenizers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ikllm::tok {

constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the sequence announced by a lead byte, by its bit pattern only (SentencePiece
// symbol splitting, docs/tokenizers.md §6 step 3): 0xxxxxxx and stray 10xxxxxx -> 1.
inline size_t utf8_lead_len(uint8_t b) {
    if (b < 0xC0) return 1;
    if (b < 0xE0) return 2;
    if (b < 0xF0) return 3;
    if (b < 0xF8) return 4;
    return 1;
}

// Length of the well-formed sequence (Unicode Table 3-7) starting at s[0], or 0 if the
// bytes there are ill-formed or truncated. Sets *cp on success.
size_t utf8_decode_one(const uint8_t* s, size_t n, uint32_t* cp);

// Decode to code points; every byte that does not start a well-formed sequence becomes
// U+FFFD on its own (docs/tokenizers.md §5.3).
std::vector<uint32_t> utf8_to_cpts(std::string_view s);

void utf8_append(std::string& out, uint32_t cp);

}  // namespace ikllm::tok
