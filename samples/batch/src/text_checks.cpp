#include "text_checks.h"

#include <cstdint>

namespace batch {

size_t first_invalid_utf8(std::string_view s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        int len = 0;
        uint32_t cp = 0;
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
        else return i;
        if (i + len > n) return i;
        for (int k = 1; k < len; ++k) {
            const unsigned char d = (unsigned char)s[i + k];
            if ((d & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (d & 0x3F);
        }
        // Reject overlong encodings, UTF-16 surrogates and code points past U+10FFFF.
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
        i += len;
    }
    return std::string::npos;
}

bool looks_binary(std::string_view b) {
    size_t control = 0;
    for (unsigned char c : b) {
        if (c == 0) return true;
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f') ++control;
    }
    // Real text has almost no control characters; 1% of them means a binary format.
    return control * 100 > b.size();
}

std::string text_problem(std::string_view text) {
    bool blank = true;
    for (unsigned char c : text)
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != '\f') {
            blank = false;
            break;
        }
    if (blank) return "empty document";
    if (looks_binary(text)) return "binary content, not text";
    const size_t bad = first_invalid_utf8(text);
    if (bad != std::string::npos) return "invalid UTF-8 at byte " + std::to_string(bad);
    return "";
}

}  // namespace batch
