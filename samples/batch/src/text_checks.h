// Checks that decide whether bytes are usable document text.
#pragma once

#include <string>
#include <string_view>

namespace batch {

// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and > U+10FFFF
// included), or std::string::npos when the text is valid.
size_t first_invalid_utf8(std::string_view text);

// True for data that is clearly not text: NUL bytes or many control characters.
bool looks_binary(std::string_view bytes);

// The reason the text cannot be a document ("" when it can): empty, binary, invalid UTF-8.
std::string text_problem(std::string_view text);

}  // namespace batch
