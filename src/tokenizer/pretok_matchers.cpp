// Hand-written equivalents of the pre-tokenizer regexes of docs/tokenizers.md §5.2.
//
// Two views of character classes exist, as in the reference:
//  * the procedural matchers (gpt2 / llama3 / qwen2) use the Unicode category flags;
//  * the other regexes behave like the reference's std::regex path (§5.3): ASCII characters
//    use fixed lists (notably '~' is neither \p{P} nor \p{S}), non-ASCII ones their category,
//    and non-ASCII whitespace counts only as \s.
#include <algorithm>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode_data.h"

namespace ikllm::tok::match {
namespace {

constexpr uint8_t kLNW = kLetter | kNumber | kSpace;

inline bool is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

// Flags of c[i] inside the segment, 0 outside (every in-range code point has a bit set).
inline uint8_t flags_at(const uint32_t* c, size_t i, size_t end) { return i < end ? cpt_flags(c[i]) : 0; }

// ---- std::regex-path classes (§5.3) ----
inline bool rx_space(uint32_t c) {
    if (c < 128) return c == ' ' || (c >= 9 && c <= 13);
    return cpt_flags(c) & kSpace;
}
// Non-ASCII code point of one category group (whitespace takes precedence).
inline bool rx_non_ascii(uint32_t c, uint8_t group) {
    const uint8_t f = cpt_flags(c);
    return !(f & kSpace) && (f & group);
}
inline bool rx_letter(uint32_t c) {
    if (c < 128) return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    return rx_non_ascii(c, kLetter);
}
inline bool rx_number(uint32_t c) {
    if (c < 128) return c >= '0' && c <= '9';
    return rx_non_ascii(c, kNumber);
}
inline bool rx_punct(uint32_t c) {
    if (c < 128) return cpt_flags(c) & kPunct;  // ASCII P* equals the reference's list
    return rx_non_ascii(c, kPunct);
}
inline bool rx_symbol(uint32_t c) {
    if (c < 128) return c != '~' && (cpt_flags(c) & kSymbol);  // quirk: '~' is not \p{S}
    return rx_non_ascii(c, kSymbol);
}
inline bool rx_mark(uint32_t c) { return c >= 128 && rx_non_ascii(c, kMark); }

// Explicit code point ranges of a regex without \p (non-ASCII whitespace never matches).
struct Range { uint32_t lo, hi; };
template <size_t N>
bool in_ranges(const Range (&r)[N], uint32_t c) {
    auto it = std::upper_bound(r, r + N, c, [](uint32_t v, const Range& x) { return v < x.lo; });
    return it != r && c <= it[-1].hi && !(c >= 128 && (cpt_flags(c) & kSpace));
}

template <class Pred>
size_t run(const uint32_t* c, size_t i, size_t end, Pred p) {
    while (i < end && p(c[i])) ++i;
    return i;
}

// Shared tail of llama3/qwen2/deepseek3: \s*[\r\n]+|\s+(?!\S)|\s+
size_t whitespace_tail(const uint32_t* c, size_t pos, size_t end, bool (*space)(uint32_t)) {
    size_t i = pos, after_nl = 0;
    while (i < end && space(c[i])) {
        if (is_crlf(c[i])) after_nl = i + 1;
        ++i;
    }
    const size_t n = i - pos;
    if (after_nl) return after_nl - pos;
    if (n > 1 && i < end) return n - 1;
    return n;
}
bool unicode_space(uint32_t c) { return cpt_flags(c) & kSpace; }

inline uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// 's 't 're 've 'm 'll 'd, optionally ASCII-case-insensitive.
size_t contraction(const uint32_t* c, size_t pos, size_t end, bool icase) {
    if (c[pos] != '\'' || pos + 1 >= end) return 0;
    auto lc = [&](uint32_t x) { return icase ? ascii_lower(x) : x; };
    const uint32_t a = lc(c[pos + 1]);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 < end) {
        const uint32_t b = lc(c[pos + 2]);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    return 0;
}

// LLAMA3 (max_digits 3) and QWEN2 (max_digits 1), docs/tokenizers.md §5.4.
size_t llama3_like(const uint32_t* c, size_t pos, size_t end, size_t max_digits) {
    if (size_t n = contraction(c, pos, end, true)) return n;
    const uint32_t cp = c[pos];
    const uint8_t fc = cpt_flags(cp);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!is_crlf(cp) && !(fc & kNumber) && ((fc & kLetter) || (flags_at(c, pos + 1, end) & kLetter))) {
        size_t i = pos + 1;
        while (i < end && (cpt_flags(c[i]) & kLetter)) ++i;
        return i - pos;
    }
    // \p{N}{1,3} or \p{N}
    if (fc & kNumber) {
        size_t i = pos + 1;
        while (i < end && i - pos < max_digits && (cpt_flags(c[i]) & kNumber)) ++i;
        return i - pos;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    const uint8_t f = cp == ' ' ? flags_at(c, pos + 1, end) : fc;
    if (!(f & kLNW)) {
        size_t i = pos + (cp == ' ' ? 1 : 0);
        while (i < end && !(cpt_flags(c[i]) & kLNW)) ++i;
        while (i < end && is_crlf(c[i])) ++i;
        return i - pos;
    }
    if (size_t n = whitespace_tail(c, pos, end, unicode_space)) return n;
    return 1;
}

}  // namespace

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
size_t gpt2(const uint32_t* c, size_t pos, size_t end) {
    if (size_t n = contraction(c, pos, end, false)) return n;
    const uint32_t cp = c[pos];
    const size_t start = pos + (cp == ' ' ? 1 : 0);
    const uint8_t f = flags_at(c, start, end);
    if (f & kLetter) return run(c, start, end, [](uint32_t x) { return cpt_flags(x) & kLetter; }) - pos;
    if (f & kNumber) return run(c, start, end, [](uint32_t x) { return cpt_flags(x) & kNumber; }) - pos;
    if (f && !(f & kLNW)) return run(c, start, end, [](uint32_t x) { return !(cpt_flags(x) & kLNW); }) - pos;
    const size_t n = run(c, pos, end, unicode_space) - pos;
    if (n > 1 && pos + n < end) return n - 1;
    if (n > 0) return n;
    return 1;
}

size_t llama3(const uint32_t* c, size_t pos, size_t end) { return llama3_like(c, pos, end, 3); }
size_t qwen2(const uint32_t* c, size_t pos, size_t end) { return llama3_like(c, pos, end, 1); }

size_t default_punct(const uint32_t* c, size_t pos, size_t end) {
    auto in = [](uint32_t x) {
        return rx_punct(x) || x == '$' || x == '+' || x == '<' || x == '=' || x == '>' || x == '^' ||
               x == '~' || x == '|';
    };
    return run(c, pos, end, in) - pos;
}

size_t falcon_punct(const uint32_t* c, size_t pos, size_t end) {
    auto in = [](uint32_t x) {
        return rx_punct(x) || x == '$' || x == '+' || x == '<' || x == '=' || x == '>' || x == '^' ||
               x == '~' || x == '|' || x == '`';
    };
    return run(c, pos, end, in) - pos;
}

size_t numbers(const uint32_t* c, size_t pos, size_t end) { return run(c, pos, end, rx_number) - pos; }
size_t one_number(const uint32_t* c, size_t pos, size_t end) { return rx_number(c[pos]) ? 1 : 0; }

size_t numbers_1_3(const uint32_t* c, size_t pos, size_t end) {
    size_t i = pos;
    while (i < end && i - pos < 3 && rx_number(c[i])) ++i;
    return i - pos;
}

size_t three_digits(const uint32_t* c, size_t pos, size_t end) {
    if (pos + 3 > end) return 0;
    for (size_t i = pos; i < pos + 3; ++i)
        if (c[i] < '0' || c[i] > '9') return 0;
    return 3;
}

size_t cr_or_lf(const uint32_t* c, size_t pos, size_t end) { return is_crlf(c[pos]) ? 1 : 0; }

namespace {
// DEEPSEEK_LLM letter class (docs/tokenizers.md §5.2, as code points).
constexpr Range kDsLetters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
    {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
    {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
    {0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107},
    {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
    {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
    {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F},
    {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。] (U+3000 is whitespace and never matches, see in_ranges).
constexpr Range kDsPunct[] = {{0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3000, 0x3002},
                              {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}};
// [一-龥ࠀ-一가-퟿] = 0800-4E00 (sic), 4E00-9FA5, AC00-D7FF.
constexpr Range kCjk[] = {{0x800, 0x4E00}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7FF}};
// [一-龥぀-ゟ゠-ヿ]
constexpr Range kDs3Cjk[] = {{0x3040, 0x309F}, {0x30A0, 0x30FF}, {0x4E00, 0x9FA5}};

// \s?CLASS+ where CLASS is a predicate.
template <class Pred>
size_t opt_space_then(const uint32_t* c, size_t pos, size_t end, Pred in) {
    size_t i = pos;
    if (rx_space(c[i]) && i + 1 < end && in(c[i + 1])) ++i;
    const size_t j = run(c, i, end, in);
    return j > i ? j - pos : 0;
}
}  // namespace

size_t dsllm_letters(const uint32_t* c, size_t pos, size_t end) {
    return opt_space_then(c, pos, end, [](uint32_t x) { return in_ranges(kDsLetters, x); });
}
size_t dsllm_punct(const uint32_t* c, size_t pos, size_t end) {
    return opt_space_then(c, pos, end, [](uint32_t x) { return in_ranges(kDsPunct, x); });
}
size_t cjk(const uint32_t* c, size_t pos, size_t end) {
    return run(c, pos, end, [](uint32_t x) { return in_ranges(kCjk, x); }) - pos;
}
size_t ds3_cjk(const uint32_t* c, size_t pos, size_t end) {
    return run(c, pos, end, [](uint32_t x) { return in_ranges(kDs3Cjk, x); }) - pos;
}
size_t space_letters(const uint32_t* c, size_t pos, size_t end) { return opt_space_then(c, pos, end, rx_letter); }
size_t space_punct(const uint32_t* c, size_t pos, size_t end) { return opt_space_then(c, pos, end, rx_punct); }

// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//  ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t ds3_main(const uint32_t* c, size_t pos, size_t end) {
    auto ascii_alpha = [](uint32_t x) { return (x >= 'A' && x <= 'Z') || (x >= 'a' && x <= 'z'); };
    auto ascii_punct = [](uint32_t x) {
        return (x >= 0x21 && x <= 0x2F) || (x >= 0x3A && x <= 0x40) || (x >= 0x5B && x <= 0x60) ||
               (x >= 0x7B && x <= 0x7E);
    };
    auto lm = [](uint32_t x) { return rx_letter(x) || rx_mark(x); };
    auto ps = [](uint32_t x) { return rx_punct(x) || rx_symbol(x); };
    const uint32_t cp = c[pos];
    const bool has_next = pos + 1 < end;
    if (ascii_punct(cp) && has_next && ascii_alpha(c[pos + 1])) return run(c, pos + 1, end, ascii_alpha) - pos;
    const bool opt = !is_crlf(cp) && !rx_letter(cp) && !ps(cp);
    if (opt && has_next && lm(c[pos + 1])) return run(c, pos + 1, end, lm) - pos;
    if (lm(cp)) return run(c, pos, end, lm) - pos;
    size_t i = pos;
    if (cp == ' ' && has_next && ps(c[pos + 1])) ++i;
    if (ps(c[i])) {
        i = run(c, i, end, ps);
        return run(c, i, end, is_crlf) - pos;
    }
    return whitespace_tail(c, pos, end, rx_space);
}

}  // namespace ikllm::tok::match
