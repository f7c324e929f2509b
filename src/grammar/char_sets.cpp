#include "grammar/char_sets.h"

#include <algorithm>

namespace ikllm::grammar {

std::vector<CharRange> normalize_ranges(std::vector<CharRange> rs) {
    std::vector<CharRange> split;
    for (const CharRange& r : rs) {  // cut out the surrogates
        if (r.lo > kMaxCodePoint || r.lo > r.hi) continue;
        const uint32_t hi = std::min(r.hi, kMaxCodePoint);
        if (r.lo < 0xD800 && hi >= 0xD800) split.push_back({r.lo, 0xD7FF});
        else if (r.lo < 0xD800) split.push_back({r.lo, hi});
        if (hi > 0xDFFF) split.push_back({std::max<uint32_t>(r.lo, 0xE000), hi});
    }
    std::sort(split.begin(), split.end(), [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
    std::vector<CharRange> out;
    for (const CharRange& r : split) {
        if (!out.empty() && r.lo <= out.back().hi + 1) out.back().hi = std::max(out.back().hi, r.hi);
        else out.push_back(r);
    }
    return out;
}

std::vector<CharRange> complement_ranges(const std::vector<CharRange>& rs) {
    std::vector<CharRange> out;
    uint32_t next = 0;
    for (const CharRange& r : rs) {
        if (r.lo > next) out.push_back({next, r.lo - 1});
        next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
    return normalize_ranges(out);
}

size_t decode_utf8(const uint8_t* s, size_t n, uint32_t* cp) {
    if (n == 0) return 0;
    const uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t len;
    uint32_t v;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode Table 3-7)
    if (b >= 0xC2 && b <= 0xDF) { len = 2; v = b & 0x1F; }
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3; v = b & 0x0F;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4; v = b & 0x07;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; ++i) {
        const uint8_t c = s[i];
        if (i == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
        v = (v << 6) | (c & 0x3F);
    }
    *cp = v;
    return len;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += (char)cp;
    } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6));
        out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    } else {
        out += (char)(0xF0 | (cp >> 18));
        out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    }
}

namespace {

int utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [lo, hi] share an encoding length. Splits until, for each continuation byte, the range of
// the lower bytes is "full" whenever a higher byte differs, so the set is a product of ranges.
void sequences(uint32_t lo, uint32_t hi, std::vector<ByteSeq>& out) {
    const int n = utf8_len(lo);
    for (int i = 1; i < n; ++i) {
        const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                sequences(lo, lo | m, out);
                sequences((lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                sequences(lo, (hi & ~m) - 1, out);
                sequences(hi & ~m, hi, out);
                return;
            }
        }
    }
    std::string a, b;
    append_utf8(a, lo);
    append_utf8(b, hi);
    ByteSeq s;
    s.len = n;
    for (int i = 0; i < n; ++i) {
        s.lo[i] = (uint8_t)a[i];
        s.hi[i] = (uint8_t)b[i];
    }
    out.push_back(s);
}

}  // namespace

std::vector<ByteSeq> utf8_sequences(const std::vector<CharRange>& rs) {
    std::vector<ByteSeq> out;
    static const uint32_t bounds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
    for (const CharRange& r : normalize_ranges(rs)) {
        uint32_t lo = r.lo;
        for (uint32_t b : bounds) {
            if (lo > r.hi) break;
            if (lo > b) continue;
            const uint32_t hi = std::min(r.hi, b);
            sequences(lo, hi, out);
            lo = hi + 1;
        }
    }
    return out;
}

}  // namespace ikllm::grammar
