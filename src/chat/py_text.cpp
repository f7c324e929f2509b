#include "chat/py_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "chat/jinja_error.h"

namespace ikllm::chat::py {

// ---- UTF-8 --------------------------------------------------------------------------------------

bool valid_utf8(std::string_view s) {
    size_t i = 0, n = s.size();
    while (i < n) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) { ++i; continue; }
        int len;
        char32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return false;
        if (i + len > n) return false;
        for (int k = 1; k < len; ++k) {
            unsigned char cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return false;
        if (cp >= 0xD800 && cp <= 0xDFFF) return false;
        i += len;
    }
    return true;
}

std::u32string decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    size_t i = 0, n = s.size();
    while (i < n) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        char32_t cp;
        int len;
        if (c < 0x80) { cp = c; len = 1; }
        else if (c < 0xE0) { cp = c & 0x1F; len = 2; }
        else if (c < 0xF0) { cp = c & 0x0F; len = 3; }
        else { cp = c & 0x07; len = 4; }
        for (int k = 1; k < len && i + k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        out.push_back(cp);
        i += len;
    }
    return out;
}

void append_cp(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

std::string encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) append_cp(out, c);
    return out;
}

size_t cp_length(std::string_view s) {
    size_t n = 0;
    for (char c : s)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

bool is_ascii(std::string_view s) {
    for (char c : s)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

// ---- character classes ----------------------------------------------------------------------------

bool is_space(char32_t c) {
    if (c < 0x80) return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_linebreak(char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
           c == 0x2028 || c == 0x2029;
}

bool is_printable(char32_t c) {
    if (c < 0x20 || (c >= 0x7F && c <= 0xA0)) return false;
    if (c < 0x7F) return true;
    if (c == 0xAD || c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
        (c >= 0x205F && c <= 0x2064) || (c >= 0x2066 && c <= 0x206F) || c == 0x3000 || c == 0xFEFF)
        return false;
    if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x890 || c == 0x891 ||
        c == 0x8E2 || c == 0x180E)
        return false;
    if ((c >= 0xD800 && c <= 0xF8FF) || (c >= 0xFDD0 && c <= 0xFDEF) || (c >= 0xFFF0 && c <= 0xFFFB)) return false;
    if ((c & 0xFFFE) == 0xFFFE) return false;  // noncharacters U+xFFFE/U+xFFFF
    if (c == 0x110BD || c == 0x110CD || (c >= 0x13430 && c <= 0x1343F) || (c >= 0x1BCA0 && c <= 0x1BCA3) ||
        (c >= 0x1D173 && c <= 0x1D17A))
        return false;
    if (c >= 0x323B0) return false;  // tags, private use planes and (mostly) unassigned code points
    return true;
}

namespace {

// Simple one-to-one case pairs for the scripts chat text commonly uses (Latin, Greek, Cyrillic, Armenian,
// fullwidth, ...). Full Unicode special casing (final sigma, most one-to-many maps) is not modelled.
bool pair_range_upper(char32_t c, char32_t lo, char32_t hi, bool even_upper, char32_t& out) {
    if (c < lo || c > hi) return false;
    bool even = (c % 2) == 0;
    if (even == even_upper) { out = c; return true; }  // already upper case
    out = c - 1;
    return true;
}
bool pair_range_lower(char32_t c, char32_t lo, char32_t hi, bool even_upper, char32_t& out) {
    if (c < lo || c > hi) return false;
    bool even = (c % 2) == 0;
    if (even != even_upper) { out = c; return true; }
    out = c + 1;
    return true;
}

struct PairRange { char32_t lo, hi; bool even_upper; };
const PairRange kPairs[] = {
    {0x100, 0x12F, true}, {0x132, 0x137, true}, {0x139, 0x148, false}, {0x14A, 0x177, true},
    {0x179, 0x17E, false}, {0x182, 0x185, true}, {0x1A0, 0x1A5, true}, {0x1CD, 0x1DC, false},
    {0x1DE, 0x1EF, true}, {0x1F8, 0x21F, true}, {0x222, 0x233, true}, {0x246, 0x24F, true},
    {0x3D8, 0x3EF, true}, {0x460, 0x481, true}, {0x48A, 0x4BF, true}, {0x4C1, 0x4CE, false},
    {0x4D0, 0x52F, true}, {0x1E00, 0x1E95, true}, {0x1EA0, 0x1EFF, true}, {0x2C80, 0x2CE3, true},
    {0xA640, 0xA66D, true}, {0xA680, 0xA69B, true}, {0xA722, 0xA72F, true}, {0xA732, 0xA76F, true},
};

}  // namespace

char32_t to_upper(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    if (c == 0xB5) return 0x39C;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
    if (c == 0xFF) return 0x178;
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if (c == 0x1C5 || c == 0x1C6) return 0x1C4;
    if (c == 0x1C8 || c == 0x1C9) return 0x1C7;
    if (c == 0x1CB || c == 0x1CC) return 0x1CA;
    if (c == 0x1F2 || c == 0x1F3) return 0x1F1;
    if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 0x20;
    if (c == 0x3C2) return 0x3A3;
    if (c == 0x3AC) return 0x386;
    if (c >= 0x3AD && c <= 0x3AF) return c - 0x25;
    if (c == 0x3CC) return 0x38C;
    if (c == 0x3CD || c == 0x3CE) return c - 0x3F;
    if (c >= 0x430 && c <= 0x44F) return c - 0x20;
    if (c >= 0x450 && c <= 0x45F) return c - 0x50;
    if (c == 0x4CF) return 0x4C0;
    if (c >= 0x561 && c <= 0x586) return c - 0x30;
    if (c >= 0x2170 && c <= 0x217F) return c - 0x10;
    if (c >= 0x24D0 && c <= 0x24E9) return c - 0x1A;
    if (c >= 0xFF41 && c <= 0xFF5A) return c - 0x20;
    if (c >= 0x10428 && c <= 0x1044F) return c - 0x28;
    char32_t out;
    for (const auto& p : kPairs)
        if (pair_range_upper(c, p.lo, p.hi, p.even_upper, out)) return out;
    return c;
}

char32_t to_lower(char32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
    if (c == 0x178) return 0xFF;
    if (c == 0x130) return 'i';
    if (c == 0x1C4 || c == 0x1C5) return 0x1C6;
    if (c == 0x1C7 || c == 0x1C8) return 0x1C9;
    if (c == 0x1CA || c == 0x1CB) return 0x1CC;
    if (c == 0x1F1 || c == 0x1F2) return 0x1F3;
    if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 0x20;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 0x25;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 0x3F;
    if (c >= 0x410 && c <= 0x42F) return c + 0x20;
    if (c >= 0x400 && c <= 0x40F) return c + 0x50;
    if (c == 0x4C0) return 0x4CF;
    if (c >= 0x531 && c <= 0x556) return c + 0x30;
    if (c >= 0x2160 && c <= 0x216F) return c + 0x10;
    if (c >= 0x24B6 && c <= 0x24CF) return c + 0x1A;
    if (c >= 0xFF21 && c <= 0xFF3A) return c + 0x20;
    if (c >= 0x10400 && c <= 0x10427) return c + 0x28;
    char32_t out;
    for (const auto& p : kPairs)
        if (pair_range_lower(c, p.lo, p.hi, p.even_upper, out)) return out;
    return c;
}

bool is_upper(char32_t c) {
    return to_lower(c) != c && c != 0x1C5 && c != 0x1C8 && c != 0x1CB && c != 0x1F2;  // titlecase digraphs excluded
}
bool is_lower(char32_t c) {
    return to_upper(c) != c || c == 0xDF || c == 0x138 || c == 0x149 || (c >= 0x250 && c <= 0x2AF);
}
bool is_cased(char32_t c) { return is_upper(c) || is_lower(c) || c == 0x1C5 || c == 0x1C8 || c == 0x1CB || c == 0x1F2; }

bool is_digit(char32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    return c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0x660 && c <= 0x669) || (c >= 0x6F0 && c <= 0x6F9) ||
           (c >= 0x966 && c <= 0x96F) || (c >= 0xFF10 && c <= 0xFF19) || (c >= 0x2070 && c <= 0x2079 && c != 0x2071 && c != 0x2072 && c != 0x2073) ||
           (c >= 0x2080 && c <= 0x2089) || (c >= 0x2460 && c <= 0x2468);
}

bool is_alpha(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (is_cased(c)) return true;
    return c == 0xAA || c == 0xBA || (c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7) ||
           (c >= 0x250 && c <= 0x2C1) || (c >= 0x370 && c <= 0x3FF && c != 0x375 && c != 0x37E && c != 0x384 &&
                                          c != 0x385 && c != 0x387) ||
           (c >= 0x400 && c <= 0x481) || (c >= 0x48A && c <= 0x52F) || (c >= 0x531 && c <= 0x587) ||
           (c >= 0x5D0 && c <= 0x5EA) || (c >= 0x620 && c <= 0x64A) || (c >= 0x671 && c <= 0x6D3) ||
           (c >= 0x904 && c <= 0x939) || (c >= 0xE01 && c <= 0xE30) || (c >= 0x10A0 && c <= 0x10FF) ||
           (c >= 0x1100 && c <= 0x11FF) || (c >= 0x1E00 && c <= 0x1FFF) || (c >= 0x3041 && c <= 0x3096) ||
           (c >= 0x30A1 && c <= 0x30FA) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFF66 && c <= 0xFF9D) ||
           (c >= 0x20000 && c <= 0x323AF);
}

bool is_alnum(char32_t c) { return is_alpha(c) || is_digit(c) || (c >= 0xBC && c <= 0xBE); }
bool is_word(char32_t c) { return c == '_' || is_alnum(c); }

// ---- str methods ----------------------------------------------------------------------------------

std::string upper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    if (is_ascii(s)) {
        for (char c : s) out.push_back((c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c);
        return out;
    }
    for (char32_t c : decode(s)) {
        if (c == 0xDF) { out += "SS"; continue; }
        if (c == 0x149) { append_cp(out, 0x2BC); out.push_back('N'); continue; }
        append_cp(out, to_upper(c));
    }
    return out;
}

std::string lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    if (is_ascii(s)) {
        for (char c : s) out.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c);
        return out;
    }
    for (char32_t c : decode(s)) {
        if (c == 0x130) { out.push_back('i'); append_cp(out, 0x307); continue; }
        append_cp(out, to_lower(c));
    }
    return out;
}

std::string swapcase(std::string_view s) {
    std::string out;
    for (char32_t c : decode(s)) {
        if (is_upper(c)) append_cp(out, to_lower(c));
        else if (is_lower(c)) append_cp(out, to_upper(c));
        else append_cp(out, c);
    }
    return out;
}

std::string title(std::string_view s) {
    std::string out;
    bool prev_cased = false;
    for (char32_t c : decode(s)) {
        if (prev_cased) append_cp(out, to_lower(c));
        else if (c == 0x1C4 || c == 0x1C5 || c == 0x1C6) append_cp(out, 0x1C5);
        else append_cp(out, to_upper(c));
        prev_cased = is_cased(c);
    }
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out;
    bool first = true;
    for (char32_t c : decode(s)) {
        if (first) append_cp(out, to_upper(c));
        else append_cp(out, to_lower(c));
        first = false;
    }
    return out;
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
    if (is_ascii(s) && (!chars || is_ascii(*chars))) {
        auto strip_char = [&](char c) {
            if (chars) return chars->find(c) != std::string::npos;
            return is_space(static_cast<unsigned char>(c));
        };
        size_t b = 0, e = s.size();
        if (left)
            while (b < e && strip_char(s[b])) ++b;
        if (right)
            while (e > b && strip_char(s[e - 1])) --e;
        return std::string(s.substr(b, e - b));
    }
    std::u32string u = decode(s);
    std::u32string set = chars ? decode(*chars) : std::u32string();
    auto strip_cp = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
    size_t b = 0, e = u.size();
    if (left)
        while (b < e && strip_cp(u[b])) ++b;
    if (right)
        while (e > b && strip_cp(u[e - 1])) --e;
    return encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> split_ws(std::string_view s, int64_t maxsplit, bool from_right) {
    std::u32string u = decode(s);
    std::vector<std::string> out;
    if (!from_right) {
        size_t i = 0, n = u.size();
        while (i < n) {
            while (i < n && is_space(u[i])) ++i;
            if (i >= n) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
                out.push_back(encode(std::u32string_view(u).substr(i)));
                return out;
            }
            size_t j = i;
            while (j < n && !is_space(u[j])) ++j;
            out.push_back(encode(std::u32string_view(u).substr(i, j - i)));
            i = j;
        }
        return out;
    }
    int64_t i = static_cast<int64_t>(u.size()) - 1;
    while (i >= 0) {
        while (i >= 0 && is_space(u[i])) --i;
        if (i < 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
            out.push_back(encode(std::u32string_view(u).substr(0, i + 1)));
            break;
        }
        int64_t j = i;
        while (j >= 0 && !is_space(u[j])) --j;
        out.push_back(encode(std::u32string_view(u).substr(j + 1, i - j)));
        i = j;
    }
    return std::vector<std::string>(out.rbegin(), out.rend());
}

std::vector<std::string> split_sep(std::string_view s, std::string_view sep, int64_t maxsplit, bool from_right) {
    std::vector<std::string> out;
    if (!from_right) {
        size_t pos = 0;
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            size_t f = s.find(sep, pos);
            if (f == std::string_view::npos) break;
            out.emplace_back(s.substr(pos, f - pos));
            pos = f + sep.size();
        }
        out.emplace_back(s.substr(pos));
        return out;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        if (end < sep.size()) break;
        size_t f = s.rfind(sep, end - sep.size());
        if (f == std::string_view::npos) break;
        out.emplace_back(s.substr(f + sep.size(), end - f - sep.size()));
        end = f;
    }
    out.emplace_back(s.substr(0, end));
    return std::vector<std::string>(out.rbegin(), out.rend());
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
    std::u32string u = decode(s);
    std::vector<std::string> out;
    size_t i = 0, start = 0, n = u.size();
    while (i < n) {
        if (!is_linebreak(u[i])) { ++i; continue; }
        size_t eol = i + 1;
        if (u[i] == '\r' && i + 1 < n && u[i + 1] == '\n') eol = i + 2;
        out.push_back(encode(std::u32string_view(u).substr(start, (keepends ? eol : i) - start)));
        start = i = eol;
    }
    if (start < n) out.push_back(encode(std::u32string_view(u).substr(start)));
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view neu, int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts the replacement before every code point and at the end.
        std::u32string u = decode(s);
        int64_t done = 0;
        for (char32_t c : u) {
            if (count < 0 || done < count) { check_string_size(out.size() + neu.size() + 4); out += neu; ++done; }
            append_cp(out, c);
        }
        if (count < 0 || done < count) out += neu;
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t f = s.find(old, pos);
        if (f == std::string_view::npos) break;
        check_string_size(out.size() + (f - pos) + neu.size());
        out.append(s.substr(pos, f - pos));
        out.append(neu);
        pos = f + old.size();
        ++done;
    }
    out.append(s.substr(pos));
    return out;
}

namespace {
// Python's adjustment of optional [start, end) arguments for str.find/count.
void adjust_range(int64_t len, int64_t& start, int64_t& end, bool has_end) {
    if (!has_end) end = len;
    if (start < 0) start = std::max<int64_t>(0, start + len);
    if (end < 0) end = std::max<int64_t>(0, end + len);
    if (end > len) end = len;
}
}  // namespace

int64_t find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool has_end, bool from_right) {
    std::u32string u = decode(s), v = decode(sub);
    int64_t len = static_cast<int64_t>(u.size());
    adjust_range(len, start, end, has_end);
    if (start > len || end - start < static_cast<int64_t>(v.size())) return -1;
    std::u32string_view w = std::u32string_view(u).substr(start, end - start);
    size_t f = from_right ? w.rfind(v) : w.find(v);
    return f == std::u32string_view::npos ? -1 : start + static_cast<int64_t>(f);
}

int64_t count(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool has_end) {
    std::u32string u = decode(s), v = decode(sub);
    int64_t len = static_cast<int64_t>(u.size());
    adjust_range(len, start, end, has_end);
    if (start > len || end < start) return 0;
    if (v.empty()) return end - start + 1;
    std::u32string_view w = std::u32string_view(u).substr(start, end - start);
    int64_t n = 0;
    size_t pos = 0;
    while (true) {
        size_t f = w.find(v, pos);
        if (f == std::u32string_view::npos) break;
        ++n;
        pos = f + v.size();
    }
    return n;
}

std::string pad(std::string_view s, int64_t width, char32_t fill, int align) {
    int64_t len = static_cast<int64_t>(cp_length(s));
    if (width <= len) return std::string(s);
    int64_t marg = width - len, left;
    std::string fill_bytes;
    append_cp(fill_bytes, fill);
    if (static_cast<uint64_t>(marg) > kMaxString / std::max<size_t>(fill_bytes.size(), 1)) check_string_size(UINT64_MAX);
    check_string_size(s.size() + static_cast<uint64_t>(marg) * fill_bytes.size());
    if (align < 0) left = 0;
    else if (align > 0) left = marg;
    else left = marg / 2 + (marg & width & 1);  // CPython's centering rule
    std::string out;
    for (int64_t i = 0; i < left; ++i) append_cp(out, fill);
    out.append(s);
    for (int64_t i = 0; i < marg - left; ++i) append_cp(out, fill);
    return out;
}

// ---- printing ---------------------------------------------------------------------------------------

std::string repr(std::string_view s) {
    bool has_single = s.find('\'') != std::string_view::npos;
    bool has_double = s.find('"') != std::string_view::npos;
    char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out;
    out.reserve(s.size() + 2);
    out.push_back(quote);
    char buf[16];
    for (char32_t c : decode(s)) {
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7F) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
            out += buf;
        } else if (c < 0x7F || is_printable(c)) {
            append_cp(out, c);
        } else if (c <= 0xFF) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
            out += buf;
        } else if (c <= 0xFFFF) {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
            out += buf;
        }
    }
    out.push_back(quote);
    return out;
}

std::string float_repr(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    // sci looks like [-]d[.ddd]e[+-]XX: split into sign, digits and exponent
    std::string out;
    size_t i = 0;
    if (sci[0] == '-') { out.push_back('-'); i = 1; }
    size_t epos = sci.find('e');
    std::string digits;
    for (size_t k = i; k < epos; ++k)
        if (sci[k] != '.') digits.push_back(sci[k]);
    int exp = std::atoi(sci.c_str() + epos + 1);
    int nd = static_cast<int>(digits.size());
    if (exp >= -4 && exp < 16) {  // Python switches to exponent notation outside this range
        int decpt = exp + 1;
        if (decpt <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-decpt), '0');
            out += digits;
        } else if (decpt >= nd) {
            out += digits;
            out.append(static_cast<size_t>(decpt - nd), '0');
            out += ".0";
        } else {
            out += digits.substr(0, decpt);
            out += '.';
            out += digits.substr(decpt);
        }
        return out;
    }
    out.push_back(digits[0]);
    if (nd > 1) {
        out.push_back('.');
        out += digits.substr(1);
    }
    std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += buf;
    return out;
}

std::string escape_html(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '\'': out += "&#39;"; break;
            case '"': out += "&#34;"; break;
            default: out.push_back(c);
        }
    }
    return out;
}

std::vector<int64_t> slice_indices(int64_t len, bool has_start, int64_t start, bool has_stop, int64_t stop,
                                   int64_t step) {
    std::vector<int64_t> out;
    if (step > 0) {
        int64_t b = has_start ? start : 0, e = has_stop ? stop : len;
        if (b < 0) b = std::max<int64_t>(0, b + len);
        if (e < 0) e = std::max<int64_t>(0, e + len);
        b = std::min(b, len);
        e = std::min(e, len);
        for (int64_t i = b; i < e; i += step) out.push_back(i);
    } else {
        int64_t b = has_start ? start : len - 1, e = has_stop ? stop : -1;
        if (has_start && b < 0) b = std::max<int64_t>(-1, b + len);
        if (has_stop && e < 0) e = std::max<int64_t>(-1, e + len);
        b = std::min(b, len - 1);
        e = std::min(e, len - 1);
        for (int64_t i = b; i > e; i += step) out.push_back(i);
    }
    return out;
}

}  // namespace ikllm::chat::py
