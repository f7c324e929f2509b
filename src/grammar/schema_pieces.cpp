// Text building blocks of the schema converter: GBNF literals and classes, integer ranges as
// digit patterns, and regular-expression patterns as GBNF.
#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "grammar/char_sets.h"
#include "grammar/json_schema.h"

namespace ikllm::grammar {

std::string gbnf_literal(const std::string& bytes) {
    std::string out = "\"";
    for (unsigned char c : bytes) {
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += (char)c;
        }
    }
    return out + "\"";
}

static std::string class_char(uint32_t cp) {
    if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return std::string(1, (char)cp);
    char buf[16];
    if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    else std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    return buf;
}

std::string gbnf_class(const std::vector<CharRange>& ranges) {
    std::string out = "[";
    for (const CharRange& r : ranges) {
        out += class_char(r.lo);
        if (r.hi != r.lo) {
            out += '-';
            out += class_char(r.hi);
        }
    }
    out += ']';
    return out;
}

// ---- integer ranges -----------------------------------------------------------------------

namespace {

constexpr int kMaxDigits = 19;

// Equal-length digit strings x <= y: the digit strings between them.
std::string same_len(const std::string& x, const std::string& y) {
    const size_t n = x.size();
    if (n == 0) return "";
    if (x == y) return gbnf_literal(x);
    if (x[0] == y[0]) return gbnf_literal(x.substr(0, 1)) + " " + same_len(x.substr(1), y.substr(1));
    const std::string xr = x.substr(1), yr = y.substr(1);
    const bool x_low = xr.find_first_not_of('0') == std::string::npos;  // x = d000..
    const bool y_high = yr.find_first_not_of('9') == std::string::npos; // y = d999..
    std::vector<std::string> alts;
    char mid_lo = x[0], mid_hi = y[0];
    if (!x_low) {
        alts.push_back(gbnf_literal(x.substr(0, 1)) + " (" + same_len(xr, std::string(n - 1, '9')) + ")");
        ++mid_lo;
    }
    if (!y_high) --mid_hi;
    if (mid_lo <= mid_hi) {
        std::string a = mid_lo == mid_hi ? gbnf_literal(std::string(1, mid_lo))
                                         : std::string("[") + mid_lo + "-" + mid_hi + "]";
        if (n > 1) a += " [0-9]{" + std::to_string(n - 1) + "}";
        alts.push_back(a);
    }
    if (!y_high) alts.push_back(gbnf_literal(y.substr(0, 1)) + " (" + same_len(std::string(n - 1, '0'), yr) + ")");
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return alts.size() == 1 ? out : "(" + out + ")";
}

uint64_t pow10(int d) {
    uint64_t v = 1;
    for (int i = 0; i < d; ++i) v *= 10;
    return v;
}

// Non-negative integers in [a, b] (b = UINT64_MAX: unbounded, up to kMaxDigits digits).
std::string nonneg_range(uint64_t a, uint64_t b) {
    const bool open = b == UINT64_MAX;
    std::vector<std::string> alts;
    const int da = (int)std::to_string(a).size();
    const int db = open ? kMaxDigits : (int)std::to_string(b).size();
    for (int d = da; d <= db; ++d) {
        const uint64_t lo = std::max<uint64_t>(a, d == 1 ? 0 : pow10(d - 1));
        if (open && d > da) {  // every number of d..kMaxDigits digits
            alts.push_back("[1-9] [0-9]{" + std::to_string(d - 1) + "," + std::to_string(kMaxDigits - 1) + "}");
            break;
        }
        const uint64_t hi = d >= 20 ? UINT64_MAX : std::min<uint64_t>(open ? pow10(d) - 1 : b, pow10(d) - 1);
        if (lo > hi) continue;
        alts.push_back(same_len(std::to_string(lo), std::to_string(hi)));
    }
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return "(" + out + ")";
}

}  // namespace

std::string gbnf_int_range(bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
    std::vector<std::string> alts;
    if (!has_hi || hi >= 0) {  // 0 .. hi
        const uint64_t a = has_lo && lo > 0 ? (uint64_t)lo : 0;
        alts.push_back(nonneg_range(a, has_hi ? (uint64_t)hi : UINT64_MAX));
    }
    if (!has_lo || lo < 0) {  // -m with m in [max(1, -hi), -lo]
        const uint64_t a = has_hi && hi < 0 ? (uint64_t)(-(hi + 1)) + 1 : 1;
        const uint64_t b = has_lo ? (uint64_t)(-(lo + 1)) + 1 : UINT64_MAX;
        alts.push_back("\"-\" " + nonneg_range(a, b));
    }
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return "(" + out + ")";
}

// ---- regular expressions ------------------------------------------------------------------

namespace {

// Characters a pattern may produce inside a JSON string without escapes.
std::vector<CharRange> json_safe(const std::vector<CharRange>& rs) {
    std::vector<CharRange> out;
    for (const CharRange& r : normalize_ranges(rs)) {
        uint32_t lo = std::max<uint32_t>(r.lo, 0x20);
        const uint32_t hi = r.hi;
        for (uint32_t bad : {(uint32_t)'"', (uint32_t)'\\'}) {
            if (bad >= lo && bad <= hi) {
                if (bad > lo) out.push_back({lo, bad - 1});
                lo = bad + 1;
            }
        }
        if (lo <= hi) out.push_back({lo, hi});
    }
    return normalize_ranges(out);
}

class RegexConverter {
public:
    RegexConverter(const std::string& p, const std::string& char_rule) : s_(p), char_rule_(char_rule) {}

    std::string run() {
        bool start_anchor = false, end_anchor = false;
        if (!s_.empty() && s_[0] == '^') {
            start_anchor = true;
            p_ = 1;
        }
        std::string body = alternation(&end_anchor);
        if (p_ < s_.size()) error("unbalanced ')'");
        std::string out;
        if (!start_anchor) out += char_rule_ + "* ";
        out += "(" + body + ")";
        if (!end_anchor) out += " " + char_rule_ + "*";
        return out;
    }

private:
    const std::string& s_;
    std::string char_rule_;
    size_t p_ = 0;

    [[noreturn]] void error(const std::string& msg) const {
        fail(Status::grammar_error, "pattern '" + s_ + "' at offset " + std::to_string(p_) + ": " + msg);
    }
    char peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }

    std::string alternation(bool* end_anchor) {
        std::vector<std::string> alts{sequence(end_anchor)};
        while (peek() == '|') {
            ++p_;
            alts.push_back(sequence(end_anchor));
        }
        std::string out;
        for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + (alts[i].empty() ? "\"\"" : alts[i]);
        return out;
    }

    std::string sequence(bool* end_anchor) {
        std::string out;
        while (p_ < s_.size() && peek() != '|' && peek() != ')') {
            if (peek() == '$') {
                ++p_;
                if (p_ != s_.size()) error("'$' is supported only at the end");
                *end_anchor = true;
                break;
            }
            std::string atom = this->atom();
            atom += quantifier();
            out += (out.empty() ? "" : " ") + atom;
        }
        return out;
    }

    std::string quantifier() {
        std::string q;
        const char c = peek();
        if (c == '*' || c == '+' || c == '?') {
            ++p_;
            q = std::string(1, c);
        } else if (c == '{') {
            const size_t close = s_.find('}', p_);
            if (close == std::string::npos) error("unclosed '{'");
            const std::string inner = s_.substr(p_ + 1, close - p_ - 1);
            if (inner.empty() || inner.find_first_not_of("0123456789,") != std::string::npos)
                error("malformed repetition");
            // {m}, {m,}, {,n} or {m,n} with m <= n (as Python's re); counts of up to 9 digits.
            const size_t comma = inner.find(',');
            const std::string lo = inner.substr(0, comma);
            const std::string hi = comma == std::string::npos ? lo : inner.substr(comma + 1);
            if (hi.find(',') != std::string::npos) error("malformed repetition");
            if (lo.size() > 9 || hi.size() > 9) error("repetition count too large");
            if (!lo.empty() && !hi.empty() && std::stol(lo) > std::stol(hi))
                error("min repeat greater than max repeat");
            for (const std::string* n : {&lo, &hi})
                if (!n->empty() && (uint64_t)std::stol(*n) > kMaxRepeat)
                    error("repetition count " + *n + " above the grammar limit of " + std::to_string(kMaxRepeat));
            q = "{" + inner + "}";
            p_ = close + 1;
        } else {
            return "";
        }
        if (peek() == '?') ++p_;  // lazy: same language
        if (peek() == '*' || peek() == '+' || peek() == '{') error("possessive/double quantifiers are not supported");
        return q;
    }

    // One code point of the pattern, with escapes; class escapes return false and fill *cls.
    bool one_char(uint32_t* cp, std::vector<CharRange>* cls) {
        if (peek() == '\\') {
            ++p_;
            const char e = peek();
            ++p_;
            switch (e) {
                case 'd': *cls = {{'0', '9'}}; return false;
                case 'D': *cls = complement_ranges({{'0', '9'}}); return false;
                case 'w': *cls = normalize_ranges({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); return false;
                case 'W': *cls = complement_ranges(normalize_ranges({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}})); return false;
                case 's': *cls = {{' ', ' '}}; return false;  // other white space needs JSON escapes
                case 'S': *cls = complement_ranges({{'\t', '\r'}, {' ', ' '}}); return false;
                case 'n': *cp = '\n'; return true;
                case 't': *cp = '\t'; return true;
                case 'r': *cp = '\r'; return true;
                case 'u': {
                    // exactly 4 hex digits (std::stoul would throw on none and skip spaces or signs)
                    uint32_t v = 0;
                    for (int i = 0; i < 4; ++i) {
                        const char h = p_ + i < s_.size() ? s_[p_ + i] : '\0';
                        const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                        if (d < 0) error("\\u needs 4 hex digits");
                        v = v * 16 + (uint32_t)d;
                    }
                    *cp = v;
                    p_ += 4;
                    return true;
                }
                case 'b': case 'B': error("word boundaries are not supported");
                default:
                    if ((e >= '1' && e <= '9')) error("back-references are not supported");
                    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) error(std::string("unknown escape \\") + e);
                    *cp = (uint32_t)(unsigned char)e;
                    return true;
            }
        }
        const size_t n = decode_utf8((const uint8_t*)s_.data() + p_, s_.size() - p_, cp);
        if (n == 0) error("invalid UTF-8");
        p_ += n;
        return true;
    }

    std::string chars_expr(std::vector<CharRange> rs) {
        rs = json_safe(rs);
        if (rs.empty()) error("a character class matches nothing a JSON string can hold unescaped");
        return gbnf_class(rs);
    }

    // A literal code point as JSON-string content (escaped where JSON needs it).
    static std::string literal(uint32_t cp) {
        std::string raw;
        append_utf8(raw, cp);
        if (cp == '"') return gbnf_literal("\\\"");
        if (cp == '\\') return gbnf_literal("\\\\");
        if (cp == '\n') return gbnf_literal("\\n");
        if (cp == '\t') return gbnf_literal("\\t");
        if (cp == '\r') return gbnf_literal("\\r");
        if (cp < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            return gbnf_literal(buf);
        }
        return gbnf_literal(raw);
    }

    std::string atom() {
        const char c = peek();
        if (c == '(') {
            ++p_;
            if (peek() == '?') {
                if (s_.compare(p_, 2, "?:") != 0) error("lookaround and named groups are not supported");
                p_ += 2;
            }
            bool end_anchor = false;
            std::string inner = alternation(&end_anchor);
            if (end_anchor) error("'$' inside a group is not supported");
            if (peek() != ')') error("unclosed '('");
            ++p_;
            return "(" + inner + ")";
        }
        if (c == '[') {
            ++p_;
            bool neg = false;
            if (peek() == '^') {
                neg = true;
                ++p_;
            }
            std::vector<CharRange> rs;
            bool first = true;
            while (p_ < s_.size() && (peek() != ']' || first)) {
                first = false;
                uint32_t lo;
                std::vector<CharRange> cls;
                if (!one_char(&lo, &cls)) {
                    rs.insert(rs.end(), cls.begin(), cls.end());
                    continue;
                }
                uint32_t hi = lo;
                if (peek() == '-' && p_ + 1 < s_.size() && s_[p_ + 1] != ']') {
                    ++p_;
                    if (!one_char(&hi, &cls)) error("class escape as a range end");
                    if (hi < lo) error("reversed range");
                }
                rs.push_back({lo, hi});
            }
            if (peek() != ']') error("unclosed '['");
            ++p_;
            rs = normalize_ranges(rs);
            return chars_expr(neg ? complement_ranges(rs) : rs);
        }
        if (c == '.') {
            ++p_;
            return chars_expr(complement_ranges({{'\n', '\n'}, {'\r', '\r'}}));
        }
        if (c == '*' || c == '+' || c == '?' || c == '{') error("quantifier without an operand");
        if (c == '^') error("'^' is supported only at the start");
        uint32_t cp;
        std::vector<CharRange> cls;
        if (!one_char(&cp, &cls)) return chars_expr(cls);
        return literal(cp);
    }
};

}  // namespace

std::string gbnf_from_regex(const std::string& pattern, const std::string& char_rule) {
    return RegexConverter(pattern, char_rule).run();
}

}  // namespace ikllm::grammar
