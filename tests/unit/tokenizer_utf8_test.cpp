// Utf8Stream against the U+FFFD substitution examples of the Unicode Standard §3.9
// ("U+FFFD Substitution of Maximal Subparts", Tables 3-8 .. 3-11 in Unicode 15), and
// chunking invariance.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tokenizer/utf8_stream.h"

using ikllm::tok::Utf8Stream;

namespace {

const std::string R = "\xEF\xBF\xBD";  // U+FFFD

// Concatenation helper (avoids a GCC 12 -Wrestrict false positive on string + literal).
template <class... A>
std::string cat(const A&... parts) {
    std::string s;
    (s.append(parts), ...);
    return s;
}

std::string rep(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += R;
    return s;
}

std::string whole(const std::string& in) {
    Utf8Stream s;
    std::string out = s.feed(in);
    return out + s.flush();
}

std::string byte_by_byte(const std::string& in) {
    Utf8Stream s;
    std::string out;
    for (char c : in) out += s.feed(std::string(1, c));
    return out + s.flush();
}

// Independent well-formedness check (Unicode Table 3-7).
bool well_formed(const std::string& str) {
    const auto* s = reinterpret_cast<const unsigned char*>(str.data());
    const size_t n = str.size();
    for (size_t i = 0; i < n;) {
        const unsigned c = s[i];
        auto in = [&](size_t k, unsigned lo, unsigned hi) { return i + k < n && s[i + k] >= lo && s[i + k] <= hi; };
        if (c <= 0x7F) { i += 1; continue; }
        if (c >= 0xC2 && c <= 0xDF && in(1, 0x80, 0xBF)) { i += 2; continue; }
        if (c == 0xE0 && in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF)) { i += 3; continue; }
        if (((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF)) { i += 3; continue; }
        if (c == 0xED && in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF)) { i += 3; continue; }
        if (c == 0xF0 && in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) { i += 4; continue; }
        if (c >= 0xF1 && c <= 0xF3 && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) { i += 4; continue; }
        if (c == 0xF4 && in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) { i += 4; continue; }
        return false;
    }
    return true;
}

struct Example {
    const char* name;
    std::string in, out;
};

std::vector<Example> examples() {
    return {
        // The ill-formed sequences example used throughout §3.9.
        {"3.9 example", "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
         cat("a", rep(3), "b", rep(1), "c", rep(2), "d")},
        // Non-shortest forms: every byte is its own maximal subpart.
        {"non-shortest", "\xC0\xAF\xE0\x80\xBF\xF0\x81\x82\x41", cat(rep(8), "A")},
        // UTF-8-encoded surrogates.
        {"surrogates", "\xED\xA0\x80\xED\xBF\xBF\xED\xAF\x41", cat(rep(8), "A")},
        // Other ill-formed sequences (beyond U+10FFFF, FF, stray continuations).
        {"other ill-formed", "\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42", cat(rep(5), "A", rep(2), "B")},
        // Truncated sequences: one U+FFFD per maximal subpart.
        {"truncated", "\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41", cat(rep(4), "A")},
        {"truncated 4-byte then ASCII", "\xF0\x9F\x98" "A", cat(R, "A")},
        {"overlong NUL", "\xC0\x80", rep(2)},
        {"F5..FF never start", "\xF5\xF8\xFC\xFE\xFF", rep(5)},
        {"valid mix", "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z", "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z"},
        {"U+10FFFF and U+FFFF", "\xF4\x8F\xBF\xBF\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF\xEF\xBF\xBF"},
        {"dangling at end", "ab\xE2\x82", cat("ab", R)},
    };
}

}  // namespace

TEST(TokenizerUtf8Stream, MaximalSubpartExamples) {
    for (const Example& e : examples()) {
        EXPECT_EQ(whole(e.in), e.out) << e.name;
        EXPECT_EQ(byte_by_byte(e.in), e.out) << e.name << " (byte by byte)";
    }
}

TEST(TokenizerUtf8Stream, HoldsIncompleteSequences) {
    Utf8Stream s;
    EXPECT_EQ(s.feed("x\xF0\x9F"), "x");
    EXPECT_EQ(s.pending(), 2u);
    EXPECT_EQ(s.feed("\x98"), "");
    EXPECT_EQ(s.feed("\x80!"), "\xF0\x9F\x98\x80!");
    EXPECT_EQ(s.pending(), 0u);
    EXPECT_EQ(s.flush(), "");
    // A sequence interrupted across chunks.
    EXPECT_EQ(s.feed("\xE2\x82"), "");
    EXPECT_EQ(s.feed("A"), cat(R, "A"));
    // flush turns a dangling prefix into exactly one U+FFFD, and resets.
    EXPECT_EQ(s.feed("\xF0\x9F\x98"), "");
    EXPECT_EQ(s.flush(), R);
    EXPECT_EQ(s.flush(), "");
    EXPECT_EQ(s.feed("ok"), "ok");
    // reset drops the pending bytes.
    EXPECT_EQ(s.feed("\xC3"), "");
    s.reset();
    EXPECT_EQ(s.feed("\xA9"), R);  // now a stray continuation byte
}

TEST(TokenizerUtf8Stream, RandomChunkingIsInvariant) {
    std::mt19937 rng(1234);
    // Bytes biased towards UTF-8 structure so that valid and broken sequences both occur.
    const unsigned char pool[] = {'a', ' ', 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0,
                                  0xE1, 0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF};
    for (int iter = 0; iter < 3000; ++iter) {
        std::string in;
        const int len = int(rng() % 24);
        for (int i = 0; i < len; ++i) in.push_back(char(pool[rng() % sizeof pool]));
        const std::string ref = whole(in);
        EXPECT_TRUE(well_formed(ref));
        Utf8Stream s;
        std::string out;
        for (size_t pos = 0; pos < in.size();) {
            const size_t n = std::min<size_t>(in.size() - pos, 1 + rng() % 5);
            out += s.feed(std::string_view(in).substr(pos, n));
            pos += n;
        }
        out += s.flush();
        EXPECT_EQ(out, ref);
        // Valid input passes through unchanged.
        if (well_formed(in)) {
            EXPECT_EQ(ref, in);
        }
    }
}
