// GBNF parsing and byte-level matching: syntax coverage, error positions, UTF-8 classes.
#include <gtest/gtest.h>

#include "core/error.h"
#include "grammar/automaton.h"
#include "grammar/byte_grammar.h"

using namespace ikllm;
using namespace ikllm::grammar;

namespace {

// Full-match test of text against the grammar.
bool matches(const std::string& gbnf, const std::string& text, const std::string& root = "root") {
    Automaton a(compile_gbnf(gbnf, root));
    int32_t s = a.initial();
    for (unsigned char c : text) {
        s = a.next(s, c);
        if (s == Automaton::kDead) return false;
    }
    return a.accepting(s);
}

std::string error_of(const std::string& gbnf, const GrammarLimits& limits = {}) {
    try {
        compile_gbnf(gbnf, "root", limits);
    } catch (const Error& e) {
        EXPECT_EQ(e.status, Status::grammar_error);
        return e.what();
    }
    return "";
}

}  // namespace

TEST(GrammarGbnf, LiteralsAlternationGrouping) {
    const std::string g = "root ::= \"ab\" (\"c\" | \"de\") tail\ntail ::= \"!\" | \"\"\n";
    EXPECT_TRUE(matches(g, "abc"));
    EXPECT_TRUE(matches(g, "abde!"));
    EXPECT_FALSE(matches(g, "ab"));
    EXPECT_FALSE(matches(g, "abd"));
    EXPECT_FALSE(matches(g, "abc!!"));
}

TEST(GrammarGbnf, Repetitions) {
    EXPECT_TRUE(matches("root ::= \"a\"*", ""));
    EXPECT_TRUE(matches("root ::= \"a\"*", "aaaa"));
    EXPECT_FALSE(matches("root ::= \"a\"+", ""));
    EXPECT_TRUE(matches("root ::= \"a\"+ \"b\"?", "aab"));
    EXPECT_FALSE(matches("root ::= \"a\"+ \"b\"?", "abb"));
    const std::string r = "root ::= [0-9]{2,4}";
    EXPECT_FALSE(matches(r, "1"));
    EXPECT_TRUE(matches(r, "12"));
    EXPECT_TRUE(matches(r, "1234"));
    EXPECT_FALSE(matches(r, "12345"));
    EXPECT_TRUE(matches("root ::= \"xy\"{3}", "xyxyxy"));
    EXPECT_FALSE(matches("root ::= \"xy\"{3}", "xyxy"));
    EXPECT_TRUE(matches("root ::= (\"a\" | \"b\"){2,}", "abba"));
    EXPECT_FALSE(matches("root ::= (\"a\" | \"b\"){2,}", "a"));
    EXPECT_TRUE(matches("root ::= \"a\"{,2}", ""));
    EXPECT_FALSE(matches("root ::= \"a\"{,2}", "aaa"));
    EXPECT_TRUE(matches("root ::= \"a\"{0}", ""));
}

TEST(GrammarGbnf, ClassesAndEscapes) {
    const std::string g = "root ::= [a-c_] [^a-z\\n] . \"\\x41\\u00e9\\U0001F600\\t\\\"\\\\\"";
    EXPECT_TRUE(matches(g, "_Z\xe2\x82\xac" "A\xc3\xa9\xf0\x9f\x98\x80\t\"\\"));
    EXPECT_FALSE(matches(g, "_z\xe2\x82\xac" "A\xc3\xa9\xf0\x9f\x98\x80\t\"\\"));
    EXPECT_FALSE(matches(g, "_\n\xe2\x82\xac" "A\xc3\xa9\xf0\x9f\x98\x80\t\"\\"));
    // Non-ASCII ranges, negated classes over multi-byte characters.
    EXPECT_TRUE(matches("root ::= [\\u0400-\\u04FF]+", "\xd0\x96\xd1\x8f"));
    EXPECT_FALSE(matches("root ::= [\\u0400-\\u04FF]+", "\xd0\x96z"));
    EXPECT_TRUE(matches("root ::= [^\\u0400-\\u04FF]", "\xf0\x9f\x98\x80"));
    EXPECT_FALSE(matches("root ::= [^\\u0400-\\u04FF]", "\xd0\x96"));
    // `.` takes exactly one well-formed code point: no surrogates, overlongs or stray bytes.
    EXPECT_FALSE(matches("root ::= .", "\xed\xa0\x80"));
    EXPECT_FALSE(matches("root ::= .", "\xc0\xaf"));
    EXPECT_FALSE(matches("root ::= .", "\x80"));
    EXPECT_TRUE(matches("root ::= .", "\xf4\x8f\xbf\xbf"));
    EXPECT_FALSE(matches("root ::= .", "\xf4\x90\x80\x80"));
    EXPECT_TRUE(matches("root ::= [-a]+ [a-]", "-a-"));
}

TEST(GrammarGbnf, EveryCodePointOfAClassRoundTrips) {
    // Each code point of a mixed-length class is matched, its neighbours outside are not.
    const std::string g = "root ::= [\\u007f-\\u0081\\u07ff-\\u0801\\uffff\\U00010000\\U0010FFFF]";
    for (uint32_t cp : {0x7Fu, 0x80u, 0x81u, 0x7FFu, 0x800u, 0x801u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
        std::string s;
        if (cp < 0x80) s += (char)cp;
        else if (cp < 0x800) { s += (char)(0xC0 | (cp >> 6)); s += (char)(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) { s += (char)(0xE0 | (cp >> 12)); s += (char)(0x80 | ((cp >> 6) & 0x3F)); s += (char)(0x80 | (cp & 0x3F)); }
        else { s += (char)(0xF0 | (cp >> 18)); s += (char)(0x80 | ((cp >> 12) & 0x3F)); s += (char)(0x80 | ((cp >> 6) & 0x3F)); s += (char)(0x80 | (cp & 0x3F)); }
        EXPECT_TRUE(matches(g, s)) << std::hex << cp;
    }
    EXPECT_FALSE(matches(g, "\x7e"));
    EXPECT_FALSE(matches(g, "\xc2\x82"));
    EXPECT_FALSE(matches(g, "\xe0\xa0\x82"));
    EXPECT_FALSE(matches(g, "\xf0\x90\x80\x81"));
}

TEST(GrammarGbnf, CommentsMultiLineRulesAndRecursion) {
    const std::string g =
        "# a list of nested parens\n"
        "root ::= item (\",\" item)*   # trailing comment\n"
        "\n"
        "item ::=\n"
        "    \"(\" (\n"
        "        item\n"
        "      | \"x\"\n"
        "    ) \")\"\n"
        "  | \"y\"\n"
        "other-rule_2 ::= \"unused\"\n";
    EXPECT_TRUE(matches(g, "y,(x),((y))"));
    EXPECT_FALSE(matches(g, "y,(x),((y)"));
    EXPECT_FALSE(matches(g, "unused"));
    EXPECT_TRUE(matches(g, "unused", "other-rule_2"));
}

TEST(GrammarGbnf, ErrorsNameLineAndColumn) {
    EXPECT_EQ(error_of("root ::= \"a\" foo\n"), "line 1, column 14: undefined rule 'foo'");
    EXPECT_EQ(error_of("root ::= \"a\"\nx ::= [b-a]\n"), "line 2, column 8: character range is reversed");
    EXPECT_EQ(error_of("root ::= \"abc\n"), "line 1, column 10: unterminated string literal");
    EXPECT_EQ(error_of("root ::= (\"a\" | \"b\"\n"), "line 1, column 10: unclosed '('");
    EXPECT_EQ(error_of("root ::= \"\\q\""), "line 1, column 11: unknown escape '\\q'");
    EXPECT_EQ(error_of("root = \"a\""), "line 1, column 6: expected '::=' after rule name 'root'");
    EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "line 2, column 1: rule 'root' is defined twice (first at line 1)");
    EXPECT_EQ(error_of("x ::= \"a\""), "grammar has no rule named 'root' (the start rule)");
    EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "line 1, column 13: repetition maximum is below its minimum");
    EXPECT_EQ(error_of("root ::= [\\x4]"), "line 1, column 11: escape needs 2 hex digits");
    EXPECT_EQ(error_of("root ::= \"a\" )"), "line 1, column 14: unbalanced ')'");
    EXPECT_EQ(error_of("root ::= \"a\" @"), "line 1, column 14: unexpected character '@'");
    // Column counts code points, not bytes.
    EXPECT_EQ(error_of("root ::= \"\xc3\xa9\"?? "), "line 1, column 14: repetition operator follows another one");
    EXPECT_EQ(error_of("root ::= \"\xc3\xa9\" ?"), "line 1, column 14: unexpected character '?'");
    const std::string lr = error_of("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"");
    EXPECT_NE(lr.find("line 2, column 1: rule 'expr' is left-recursive"), std::string::npos) << lr;
    EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
}

// Hostile sizes found by probing the fuzz target's neighbourhood: each used to crash (native stack
// overflow) or take seconds to a minute; now each compiles and matches, or fails with a limit.
TEST(GrammarGbnf, DeepNestingIsAnErrorNotAStackOverflow) {
    const auto nested = [](int n) { return "root ::= " + std::string(n, '(') + "\"a\"" + std::string(n, ')'); };
    EXPECT_TRUE(matches(nested(200), "a"));
    const std::string e = error_of(nested(100000));
    EXPECT_NE(e.find("nested deeper than the limit of 256"), std::string::npos) << e;
    EXPECT_NE(e.find("line 1, column 266"), std::string::npos) << e;  // the 257th '('
}

TEST(GrammarGbnf, LongChainsOfEmptySteps) {
    // 4 000 nullable copies: expanding a state walks all of them (an explicit work list).
    EXPECT_TRUE(matches("root ::= (\"a\"?){0,4000} \"c\"", "aaac"));
    EXPECT_TRUE(matches("root ::= (\"a\"?){0,4000} \"c\"", "c"));
    EXPECT_FALSE(matches("root ::= (\"a\"?){0,4000} \"c\"", "aaa"));
    // 10^5 of them: every state would hold 10^5 ways to go on, each byte costing as much.
    try {
        Automaton a(compile_gbnf("root ::= (\"a\"?){0,99999} \"c\""));
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.status, Status::grammar_error);
        EXPECT_NE(std::string(e.what()).find("too ambiguous: more than the limit of 4096"), std::string::npos)
            << e.what();
    }
    // 20 000 rules, each only a reference to the next, the last one empty.
    std::string chain = "root ::= x0 \"!\"\n";
    for (int i = 0; i < 20000; ++i) {
        chain += 'x';
        chain += std::to_string(i);
        chain += " ::= x";
        chain += std::to_string(i + 1);
        chain += '\n';
    }
    chain += "x20000 ::= \"\" | \"z\"\n";
    EXPECT_TRUE(matches(chain, "!"));
    EXPECT_TRUE(matches(chain, "z!"));
    // Positions stay right far into a long text, also for an error found before the last one.
    const std::string e = error_of(chain + "y ::= undefined-rule\n");
    EXPECT_NE(e.find("line 20003, column 7"), std::string::npos) << e;
}

TEST(GrammarGbnf, TotalSizeLimit) {
    std::string big = "root ::=";
    for (int i = 0; i < 9; ++i) big += " \"a\"{100000}";
    EXPECT_EQ(error_of(big), "");  // 900 000 items: within the limit
    const std::string e = error_of(big + " [0-9]{0,60000}");
    EXPECT_NE(e.find("grammar too large: over the limit of 1000000 items"), std::string::npos) << e;
}

// A caller may lower the limits (the fuzz target does): the same text then fails at the lowered
// bounds, exactly at them, and still compiles under the defaults.
TEST(GrammarGbnf, LoweredLimits) {
    GrammarLimits small;
    small.max_repeat = 256;
    small.max_items = 1000;
    EXPECT_EQ(error_of("root ::= \"a\"{256}", small), "");
    std::string e = error_of("root ::= \"a\"{257}", small);
    EXPECT_NE(e.find("repetition count above the limit of 256"), std::string::npos) << e;
    EXPECT_EQ(error_of("root ::= \"a\"{257}"), "");
    EXPECT_EQ(error_of("root ::= \"a\"{250} \"b\"{250} \"c\"{250} \"d\"{250}", small), "");  // 1000 items
    e = error_of("root ::= \"a\"{250} \"b\"{250} \"c\"{250} \"d\"{250} \"e\"", small);
    EXPECT_NE(e.find("grammar too large: over the limit of 1000 items"), std::string::npos) << e;
    EXPECT_TRUE(matches("root ::= \"a\"{2,3}", "aaa"));
}
