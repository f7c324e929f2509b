// Token-level masking over a hand-made vocabulary: the mask must equal a brute-force check of
// every token's bytes; tokens may span several grammar elements or split UTF-8 characters;
// special tokens are never allowed, end-of-generation only when the grammar is complete.
#include <gtest/gtest.h>

#include <random>

#include "grammar/automaton.h"
#include "grammar/byte_grammar.h"
#include "grammar/token_matcher.h"

using namespace ikllm::grammar;

namespace {

struct Vocab {
    std::vector<std::string> pieces;
    std::vector<TokenKind> kinds;
    int32_t add(const std::string& p, TokenKind k = TokenKind::text) {
        pieces.push_back(p);
        kinds.push_back(k);
        return (int32_t)pieces.size() - 1;
    }
    std::shared_ptr<const TokenTrie> trie() const { return std::make_shared<const TokenTrie>(build_token_trie(pieces, kinds)); }
};

bool bit(const std::vector<uint64_t>& m, int32_t id) { return (m[id >> 6] >> (id & 63)) & 1; }

// Reference: a token is allowed iff feeding its bytes from the current text keeps the grammar
// alive (checked from scratch on the whole text, byte by byte, without the vocabulary trie).
bool prefix_alive(Automaton& a, const std::string& text) {
    int32_t s = a.initial();
    for (unsigned char c : text) {
        s = a.next(s, c);
        if (s == Automaton::kDead) return false;
    }
    return true;
}

}  // namespace

TEST(GrammarTokens, MaskEqualsBruteForceAlongRandomWalks) {
    Vocab v;
    // Every byte plus multi-byte pieces that cross element boundaries and split characters.
    for (int b = 0; b < 256; ++b) v.add(std::string(1, (char)b));
    for (const char* p : {"{\"", "\":", "\": \"", "\"}", "ab", "abc", "12", "3\"", " \xe2\x82", "\xac\"", "\xe2\x82\xac",
                          "\xf0\x9f", "\x98\x80", "\xc3\xa9t\xc3", "\xa9", "true", "tr", "ue}", "null", ",\"", "},"})
        v.add(p);
    const int32_t eos = v.add("</s>", TokenKind::eog);
    const int32_t ctl = v.add("<|ctl|>", TokenKind::excluded);
    const std::string g =
        "root ::= \"{\" pair (\",\" pair){0,2} \"}\"\n"
        "pair ::= \"\\\"\" [a-z\\u00e9]{1,4} \"\\\": \" value\n"
        "value ::= \"\\\"\" [^\"\\\\]{0,3} \"\\\"\" | [0-9]{1,3} | \"true\" | \"null\"\n";
    auto trie = v.trie();
    Automaton ref(compile_gbnf(g));
    std::mt19937 rng(5);
    int completed = 0;
    for (int run = 0; run < 40; ++run) {
        TokenMatcher m(compile_gbnf(g), trie);
        std::string text;
        for (int step = 0; step < 200; ++step) {
            const auto& mask = m.allowed();
            std::vector<int32_t> allowed;
            for (int32_t id = 0; id < (int32_t)v.pieces.size(); ++id) {
                bool want = v.kinds[id] == TokenKind::text && prefix_alive(ref, text + v.pieces[id]);
                if (v.kinds[id] == TokenKind::eog) want = m.state() == MatchState::complete || m.state() == MatchState::done;
                ASSERT_EQ(bit(mask, id), want) << "token " << id << " after '" << text << "'";
                if (want) allowed.push_back(id);
            }
            EXPECT_FALSE(bit(mask, ctl));
            ASSERT_FALSE(allowed.empty());
            const int32_t t = allowed[rng() % allowed.size()];
            ASSERT_TRUE(m.accept(t));
            if (t == eos) break;
            text += v.pieces[t];
            if (m.state() == MatchState::done) {
                // Nothing but end of generation may follow.
                const auto& done = m.allowed();
                for (int32_t id = 0; id < (int32_t)v.pieces.size(); ++id) EXPECT_EQ(bit(done, id), id == eos);
                ++completed;
                break;
            }
        }
    }
    EXPECT_GT(completed, 10);
}

TEST(GrammarTokens, Utf8SplitAcrossTokens) {
    Vocab v;
    const int32_t e2 = v.add("\xe2");
    const int32_t x82 = v.add("\x82");
    const int32_t xac = v.add("\xac");
    const int32_t x82ac = v.add("\x82\xac!");
    const int32_t a = v.add("a");
    const int32_t euro = v.add("\xe2\x82\xac");
    const int32_t bang = v.add("!");
    TokenMatcher m(compile_gbnf("root ::= [\\u20AC]+ \"!\""), v.trie());
    auto allowed = [&](int32_t id) { return bit(m.allowed(), id); };
    EXPECT_TRUE(allowed(e2));
    EXPECT_TRUE(allowed(euro));
    EXPECT_FALSE(allowed(x82));
    EXPECT_FALSE(allowed(a));
    EXPECT_FALSE(allowed(bang));
    ASSERT_TRUE(m.accept(e2));  // the token ends inside the character
    EXPECT_EQ(m.state(), MatchState::incomplete);
    EXPECT_TRUE(allowed(x82));
    EXPECT_TRUE(allowed(x82ac));
    EXPECT_FALSE(allowed(xac));
    EXPECT_FALSE(allowed(e2));
    ASSERT_TRUE(m.accept(x82ac));  // finishes the character and the grammar
    EXPECT_EQ(m.state(), MatchState::done);
    m.reset();
    ASSERT_TRUE(m.accept(euro));
    EXPECT_EQ(m.state(), MatchState::incomplete);
    EXPECT_FALSE(m.accept(xac));
    EXPECT_EQ(m.state(), MatchState::failed);
    for (uint64_t w : m.allowed()) EXPECT_EQ(w, 0u);
}

TEST(GrammarTokens, SpecialTokensAndEndOfGeneration) {
    Vocab v;
    const int32_t d = v.add("7");
    const int32_t eos = v.add("", TokenKind::eog);
    const int32_t eot = v.add("<|eot|>", TokenKind::eog);
    const int32_t ctl = v.add("7", TokenKind::excluded);  // same text as a digit, but special
    const int32_t empty = v.add("");
    TokenMatcher m(compile_gbnf("root ::= [0-9]{1,2}"), v.trie());
    EXPECT_TRUE(bit(m.allowed(), d));
    EXPECT_FALSE(bit(m.allowed(), eos));
    EXPECT_FALSE(bit(m.allowed(), ctl));
    EXPECT_FALSE(bit(m.allowed(), empty));
    EXPECT_FALSE(m.is_allowed(eot));
    ASSERT_TRUE(m.accept(d));
    EXPECT_EQ(m.state(), MatchState::complete);  // one digit matched, a second may follow
    EXPECT_TRUE(bit(m.allowed(), d));
    EXPECT_TRUE(bit(m.allowed(), eos));
    EXPECT_TRUE(bit(m.allowed(), eot));
    ASSERT_TRUE(m.accept(d));
    EXPECT_EQ(m.state(), MatchState::done);
    EXPECT_FALSE(bit(m.allowed(), d));
    EXPECT_TRUE(bit(m.allowed(), eos));
    ASSERT_TRUE(m.accept(eos));
    // An end-of-generation token before the grammar is complete is a mismatch.
    TokenMatcher early(compile_gbnf("root ::= [0-9]{1,2}"), v.trie());
    EXPECT_FALSE(early.accept(eos));
    EXPECT_EQ(early.state(), MatchState::failed);
    TokenMatcher special(compile_gbnf("root ::= [0-9]{1,2}"), v.trie());
    EXPECT_FALSE(special.accept(ctl));
}

TEST(GrammarTokens, CompactKeepsTheState) {
    Vocab v;
    for (const char* p : {"[", "]", ",", "1", "[[", "]]"}) v.add(p);
    TokenMatcher m(compile_gbnf("root ::= list\nlist ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= list | \"1\""), v.trie());
    for (int32_t t : {4, 0, 3, 2}) ASSERT_TRUE(m.accept(t));  // "[[[1,"
    Automaton a(compile_gbnf("root ::= list\nlist ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= list | \"1\""));
    const int32_t before = a.next(a.next(a.next(a.next(a.next(a.initial(), '['), '['), '['), '1'), ',');
    const int32_t after = a.compact(before);
    int32_t s = after;
    for (char c : std::string("1]]]")) s = a.next(s, (uint8_t)c);
    EXPECT_TRUE(s >= 0 && a.accepting(s));
    EXPECT_EQ(a.next(a.next(after, '1'), '}'), Automaton::kDead);
}

namespace {

// Reference for Automaton::plain_depth: the sets of states reachable by exactly k plain bytes,
// level after level, without remembering earlier levels; the first level with a dead end gives
// the depth. Exponential in the worst case, fine on small grammars.
int32_t plain_depth_by_levels(Automaton& a, int32_t s, int32_t cap) {
    std::vector<int32_t> level{s};
    for (int32_t depth = 0; depth < cap; ++depth) {
        std::vector<int32_t> next;
        for (int32_t x : level)
            for (int b = 0x20; b <= 0x7E; ++b) {
                if (!is_plain_byte((uint8_t)b)) continue;
                const int32_t t = a.next(x, (uint8_t)b);
                if (t == Automaton::kDead) return depth;
                next.push_back(t);
            }
        std::sort(next.begin(), next.end());
        next.erase(std::unique(next.begin(), next.end()), next.end());
        level.swap(next);
    }
    return cap;
}

}  // namespace

// plain_depth examines each state once; it must give what the level-by-level walk gives (both
// capped at 127) on every state reached along the way of some texts.
TEST(GrammarTokens, PlainDepthEqualsLevelWalk) {
    const char* grammars[] = {
        "root ::= [a-z]{0,5} \"!\"",
        "root ::= \"ab\" [^\\n]* \"\\n\"",
        "root ::= (\"x\" | \"yy\") [0-9]{3} [a-z]+",
        "root ::= [a-r]+ (\"{{{\" [^a-z]+)? .* [a-z]+",
        "root ::= \"\\\"\" ([^\"\\\\] | \"\\\\\" [\"\\\\nt])* \"\\\"\"",
    };
    const std::string texts[] = {"", "a", "abc", "ab  x", "x123q", "\"a\\n", "abcd{{{+", "zz"};
    size_t compared = 0, bounded = 0;
    for (const char* gr : grammars) {
        Automaton a(compile_gbnf(gr));
        for (const std::string& text : texts) {
            int32_t s = a.initial();
            for (size_t i = 0; i <= text.size() && s >= 0; ++i) {
                const int32_t want = plain_depth_by_levels(a, s, 127);
                const int32_t got = a.plain_depth(s);
                // Exact unless the search hit its state budget, where it may only be lower.
                EXPECT_LE(got, want) << gr << " after \"" << text.substr(0, i) << "\"";
                if (got != want) ++bounded;
                ++compared;
                if (i < text.size()) s = a.next(s, (uint8_t)text[i]);
            }
        }
    }
    EXPECT_GT(compared, 30u);
    EXPECT_EQ(bounded, 0u) << "small grammars stay within the search budget";
}

// A grammar whose reachable state sets blow up (long literals under ".*" and negated classes,
// found by grammar_fuzz: 14 s under ASan with the level walk) stays cheap and sound.
TEST(GrammarTokens, PlainDepthBoundedOnExplodingGrammar) {
    const std::string lit(40, '{');
    Automaton a(compile_gbnf("root ::= [a-r]+ (\"" + lit + ",\" [^a-z]+)? .* [a-r]+ (\"" + lit + "~" + lit +
                             ",\" [^a-z]+)? .* [a-z]+ (\"" + std::string(60, '\'') + ",\" [^a-z]+) .*"));
    int32_t s = a.initial();
    size_t searches = 0;
    std::vector<std::pair<int32_t, int32_t>> depths;
    for (char c : std::string("abc" + std::string(30, '{') + "," + std::string(20, '{'))) {
        s = a.next(s, (uint8_t)c);
        ASSERT_NE(s, Automaton::kDead);
        const uint64_t before = a.plain_depth_steps();
        const int32_t d = a.plain_depth(s);
        if (a.plain_depth_steps() > before) ++searches;
        EXPECT_GE(d, 0);
        EXPECT_LE(d, 127);
        depths.emplace_back(s, d);
    }
    // Each search looks at each state's 95 plain bytes at most once (a level walk looks again at
    // every level: ~200x more here).
    EXPECT_GT(searches, 0u);
    EXPECT_LE(a.plain_depth_steps(), searches * 95 * a.n_states());
    // Never deeper than a level walk finds (the search may stop early, never claim more).
    for (auto [st, d] : depths) EXPECT_LE(d, plain_depth_by_levels(a, st, 127));
}
