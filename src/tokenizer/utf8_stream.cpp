#include "tokenizer/utf8_stream.h"

#include <cstdint>

namespace ikllm::tok {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// Expected length and allowed second-byte range of a lead byte (Unicode Table 3-7);
// len 0 = the byte can never start a sequence.
struct Lead { int len; uint8_t lo, hi; };
Lead lead_info(uint8_t b) {
    if (b < 0x80) return {1, 0, 0};
    if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

}  // namespace

std::string Utf8Stream::feed(std::string_view bytes) {
    std::string buf;
    std::string_view in = bytes;
    if (!pending_.empty()) {
        buf = pending_;
        buf.append(bytes);
        in = buf;
        pending_.clear();
    }
    std::string out;
    out.reserve(in.size() + 8);
    const auto* s = reinterpret_cast<const uint8_t*>(in.data());
    const size_t n = in.size();
    size_t i = 0;
    while (i < n) {
        const Lead L = lead_info(s[i]);
        if (L.len == 1) { out.push_back(char(s[i++])); continue; }
        if (L.len == 0) { out += kReplacement; ++i; continue; }
        // Consume the longest valid prefix; stop at the first byte that cannot continue it.
        int j = 1;
        bool bad = false;
        while (j < L.len) {
            if (i + j >= n) break;
            const uint8_t c = s[i + j];
            const bool ok = (j == 1) ? (c >= L.lo && c <= L.hi) : (c >= 0x80 && c <= 0xBF);
            if (!ok) { bad = true; break; }
            ++j;
        }
        if (bad) { out += kReplacement; i += j; continue; }   // maximal subpart s[i, i+j)
        if (j < L.len) { pending_.assign(in.substr(i)); break; }  // wait for more bytes
        out.append(in.substr(i, L.len));
        i += L.len;
    }
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    if (!pending_.empty()) out = kReplacement;
    pending_.clear();
    return out;
}

}  // namespace ikllm::tok
