#include "tokenizer/utf8.h"

namespace ikllm::tok {

size_t utf8_decode_one(const uint8_t* s, size_t n, uint32_t* cp) {
    if (n == 0) return 0;
    const uint8_t b0 = s[0];
    if (b0 < 0x80) { *cp = b0; return 1; }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    uint32_t v;
    if (b0 >= 0xC2 && b0 <= 0xDF) { len = 2; v = b0 & 0x1F; }
    else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3; v = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;  // excludes surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4; v = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 1; i < len; ++i) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return len;
}

std::vector<uint32_t> utf8_to_cpts(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    size_t i = 0, n = s.size();
    while (i < n) {
        if (p[i] < 0x80) { out.push_back(p[i++]); continue; }
        uint32_t cp;
        size_t len = utf8_decode_one(p + i, n - i, &cp);
        if (len == 0) { out.push_back(kReplacementChar); ++i; }
        else { out.push_back(cp); i += len; }
    }
    return out;
}

void utf8_append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(char(cp));
    } else if (cp < 0x800) {
        out.push_back(char(0xC0 | (cp >> 6)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(char(0xE0 | (cp >> 12)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(char(0xF0 | (cp >> 18)));
        out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    }
}

}  // namespace ikllm::tok
