// JSON Schema -> GBNF: the grammar accepts instances the schema allows and rejects others
// (judged against the JSON Schema rules by hand-written cases), integer ranges against plain
// arithmetic, regex patterns, and errors naming the JSON pointer.
#include <gtest/gtest.h>

#include "core/error.h"
#include "grammar/automaton.h"
#include "grammar/byte_grammar.h"
#include "grammar/json_schema.h"

using namespace ikllm;
using namespace ikllm::grammar;

namespace {

struct Checker {
    explicit Checker(const std::string& schema) : a(compile_gbnf(json_schema_to_gbnf(schema))) {}
    bool operator()(const std::string& text) {
        int32_t s = a.initial();
        for (unsigned char c : text) {
            s = a.next(s, c);
            if (s == Automaton::kDead) return false;
        }
        return a.accepting(s);
    }
    Automaton a;
};

bool gbnf_matches(const std::string& gbnf, const std::string& text) {
    Automaton a(compile_gbnf(gbnf));
    int32_t s = a.initial();
    for (unsigned char c : text) {
        s = a.next(s, c);
        if (s == Automaton::kDead) return false;
    }
    return a.accepting(s);
}

std::string schema_error(const std::string& schema) {
    try {
        json_schema_to_gbnf(schema);
    } catch (const Error& e) {
        EXPECT_EQ(e.status, Status::grammar_error);
        return e.what();
    }
    return "";
}

}  // namespace

TEST(GrammarSchema, ObjectPropertiesRequiredOptional) {
    Checker ok(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},
                  "required":["b"],"additionalProperties":false})");
    EXPECT_TRUE(ok(R"({"b":"x"})"));
    EXPECT_TRUE(ok(R"({"a":1,"b":"x"})"));
    EXPECT_TRUE(ok(R"({ "a" : -12 , "b" : "", "c":true })"));
    EXPECT_TRUE(ok("{\n  \"b\": \"q\",\n  \"c\": false\n}"));
    EXPECT_FALSE(ok(R"({"a":1})"));            // b is required
    EXPECT_FALSE(ok(R"({})"));
    EXPECT_FALSE(ok(R"({"b":"x","d":1})"));    // no additional properties
    EXPECT_FALSE(ok(R"({"b":"x",})"));
    EXPECT_FALSE(ok(R"({"b":1})"));
    EXPECT_FALSE(ok(R"({"a":01,"b":"x"})"));   // no leading zeros
    Checker free(R"({"type":"object"})");
    EXPECT_TRUE(free(R"({"x":[1,{"y":"z"}],"w":null})"));
    EXPECT_TRUE(free("{}"));
    EXPECT_FALSE(free("[]"));
    Checker none(R"({"type":"object","properties":{"a":{"type":"null"}}})");
    EXPECT_TRUE(none("{}"));
    EXPECT_TRUE(none(R"({"a":null})"));
}

TEST(GrammarSchema, StringsEscapesAndLengths) {
    Checker s(R"({"type":"string","minLength":2,"maxLength":3})");
    EXPECT_TRUE(s(R"("ab")"));
    EXPECT_TRUE(s("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""));  // length counts characters
    EXPECT_TRUE(s(R"("a\n\u00e9")"));
    EXPECT_FALSE(s(R"("a")"));
    EXPECT_FALSE(s(R"("abcd")"));
    EXPECT_FALSE(s("\"a\nb\""));      // raw control characters are not JSON
    EXPECT_FALSE(s(R"("a\qb")"));     // invalid escape
    EXPECT_FALSE(s("\"a\xff\""));     // invalid UTF-8
}

TEST(GrammarSchema, EnumConstAndTypeArrays) {
    Checker e(R"({"enum":["red",1.5,null,{"k":[1,2]}]})");
    EXPECT_TRUE(e(R"("red")"));
    EXPECT_TRUE(e("1.5"));
    EXPECT_TRUE(e("null"));
    EXPECT_TRUE(e(R"({"k":[1,2]})"));
    EXPECT_FALSE(e(R"("blue")"));
    Checker c(R"({"const":"x\"y"})");
    EXPECT_TRUE(c(R"("x\"y")"));
    EXPECT_FALSE(c(R"("xy")"));
    Checker t(R"({"type":["integer","null"]})");
    EXPECT_TRUE(t("-7"));
    EXPECT_TRUE(t("null"));
    EXPECT_FALSE(t("1.5"));
    EXPECT_FALSE(t("\"1\""));
}

TEST(GrammarSchema, ArraysItemsPrefixItemsCounts) {
    Checker a(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})");
    EXPECT_FALSE(a("[]"));
    EXPECT_TRUE(a("[1]"));
    EXPECT_TRUE(a("[1, 2 ,3]"));
    EXPECT_FALSE(a("[1,2,3,4]"));
    EXPECT_FALSE(a("[1,]"));
    Checker t(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}],"items":false})");
    EXPECT_TRUE(t("[]"));
    EXPECT_TRUE(t(R"(["a"])"));
    EXPECT_TRUE(t(R"(["a",true])"));
    EXPECT_FALSE(t(R"(["a",true,1])"));
    EXPECT_FALSE(t(R"([true])"));
    Checker p(R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"null"},"minItems":2})");
    EXPECT_FALSE(p(R"(["a"])"));
    EXPECT_TRUE(p(R"(["a",null,null])"));
    EXPECT_FALSE(p(R"(["a","b"])"));
    Checker any(R"({"type":"array"})");
    EXPECT_TRUE(any(R"([1,"x",[{"a":null}],{}])"));
}

TEST(GrammarSchema, RefsDefsRecursionAnyOfAllOf) {
    Checker tree(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
                    "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})");
    EXPECT_TRUE(tree(R"({"v":1})"));
    EXPECT_TRUE(tree(R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"));
    EXPECT_FALSE(tree(R"({"v":1,"kids":[{"w":2}]})"));
    Checker root(R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["next"]})");
    EXPECT_TRUE(root(R"({"next":{"next":{"next":null}}})"));
    EXPECT_FALSE(root(R"({"next":{}})"));
    Checker any(R"({"oneOf":[{"type":"boolean"},{"type":"string","maxLength":1}]})");
    EXPECT_TRUE(any("true"));
    EXPECT_TRUE(any(R"("x")"));
    EXPECT_FALSE(any("1"));
    Checker all(R"({"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
                   {"properties":{"b":{"type":"null"}},"required":["b"]}]})");
    EXPECT_TRUE(all(R"({"a":1,"b":null})"));
    EXPECT_FALSE(all(R"({"a":1})"));
}

TEST(GrammarSchema, Formats) {
    Checker d(R"({"type":"string","format":"date"})");
    EXPECT_TRUE(d(R"("2024-02-29")"));
    EXPECT_FALSE(d(R"("2024-13-01")"));
    EXPECT_FALSE(d(R"("2024-1-01")"));
    Checker dt(R"({"type":"string","format":"date-time"})");
    EXPECT_TRUE(dt(R"("2024-02-29T23:59:60Z")") == false);  // second 60 is outside [0-5][0-9]
    EXPECT_TRUE(dt(R"("2024-02-29T23:59:59.123+05:30")"));
    EXPECT_FALSE(dt(R"("2024-02-29 23:59:59Z")"));
    Checker t(R"({"type":"string","format":"time"})");
    EXPECT_TRUE(t(R"("08:00:00-01:00")"));
    Checker u(R"({"type":"string","format":"uuid"})");
    EXPECT_TRUE(u(R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(u(R"("123e4567e89b12d3a456426614174000")"));
}

TEST(GrammarSchema, IntegerRangesAgreeWithArithmetic) {
    struct R { bool has_lo; int64_t lo; bool has_hi; int64_t hi; };
    const R cases[] = {{true, 0, true, 0},     {true, 7, true, 7},      {true, 0, true, 9},
                       {true, 5, true, 123},   {true, 18, true, 120},   {true, -123, true, 4567},
                       {true, -50, true, -3},  {true, 99, true, 1001},  {true, 10, true, 19},
                       {true, 234, false, 0},  {false, 0, true, -17},   {false, 0, true, 305},
                       {true, -9, false, 0}};
    for (const R& r : cases) {
        const std::string g = "root ::= " + gbnf_int_range(r.has_lo, r.lo, r.has_hi, r.hi);
        Automaton a(compile_gbnf(g));
        auto ok = [&](const std::string& text) {
            int32_t s = a.initial();
            for (unsigned char c : text) {
                s = a.next(s, c);
                if (s == Automaton::kDead) return false;
            }
            return a.accepting(s);
        };
        for (int64_t v = -6000; v <= 6000; ++v) {
            const bool in = (!r.has_lo || v >= r.lo) && (!r.has_hi || v <= r.hi);
            ASSERT_EQ(ok(std::to_string(v)), in) << g << " value " << v;
        }
        EXPECT_FALSE(ok("-0"));
        EXPECT_FALSE(ok("007"));
        EXPECT_FALSE(ok(""));
    }
    // Unbounded sides reach 19 digits.
    Automaton a(compile_gbnf("root ::= " + gbnf_int_range(true, 5, false, 0)));
    int32_t s = a.initial();
    for (char c : std::string("9223372036854775807")) s = a.next(s, (uint8_t)c);
    EXPECT_TRUE(s != Automaton::kDead && a.accepting(s));
}

TEST(GrammarSchema, NumberBoundsAreRespected) {
    Checker n(R"({"type":"number","minimum":-2.5,"maximum":3})");
    for (const char* v : {"0", "-2", "-2.0", "-1.999", "2.75", "3", "3.000", "-0.5"}) EXPECT_TRUE(n(v)) << v;
    for (const char* v : {"3.01", "4", "-3", "-2.6", "1e2", "03"}) EXPECT_FALSE(n(v)) << v;
    Checker e(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})");
    EXPECT_FALSE(e("0"));
    EXPECT_TRUE(e("1"));
    EXPECT_TRUE(e("9"));
    EXPECT_FALSE(e("10"));
}

TEST(GrammarSchema, RegexPatterns) {
    const std::string ch = "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n";
    auto rx = [&](const std::string& pattern, const std::string& content) {
        return gbnf_matches("root ::= " + gbnf_from_regex(pattern, "char") + "\n" + ch, content);
    };
    EXPECT_TRUE(rx("^[0-9]{5}$", "12345"));
    EXPECT_FALSE(rx("^[0-9]{5}$", "1234"));
    EXPECT_FALSE(rx("^[0-9]{5}$", "123456"));
    EXPECT_TRUE(rx("ab+c", "xxabbbcyy"));   // unanchored: anywhere in the string
    EXPECT_FALSE(rx("^ab+c", "xabc"));
    EXPECT_TRUE(rx("^(?:a|bc)*\\d\\w?$", "abca7_"));
    EXPECT_TRUE(rx("^[^a-c]\\.x$", "z.x"));
    EXPECT_FALSE(rx("^[^a-c]\\.x$", "b.x"));
    EXPECT_FALSE(rx("^[^a-c]\\.x$", "zzx"));
    EXPECT_TRUE(rx("^a\"b$", "a\\\"b"));     // a quote is written escaped in JSON
    EXPECT_TRUE(rx("^.{2}$", "\xc3\xa9z"));
    EXPECT_THROW(json_schema_to_gbnf(R"({"type":"string","pattern":"(a)\\1"})"), Error);
    EXPECT_NE(schema_error(R"J({"type":"string","pattern":"(?=a)"})J").find("/pattern"), std::string::npos);
}

TEST(GrammarSchema, AdditionalPropertiesOtherKeys) {
    Checker x(R"({"type":"object","properties":{"ab":{"type":"integer"}},"additionalProperties":{"type":"boolean"}})");
    EXPECT_TRUE(x(R"({"ab":1})"));
    EXPECT_TRUE(x(R"({"ab":1,"a":true,"abc":false,"b":true})"));
    EXPECT_TRUE(x(R"({"zz":true})"));
    EXPECT_FALSE(x(R"({"ab":1,"ab":true})"));  // a declared key is not an additional one
    EXPECT_FALSE(x(R"({"a":1})"));
    // Non-ASCII and escaped declared keys.
    Checker u("{\"properties\":{\"\xc3\xa9t\xc3\xa9\":{\"type\":\"null\"},\"q\\\"\":{\"type\":\"null\"}},\"additionalProperties\":true}");
    EXPECT_TRUE(u("{\"\xc3\xa9t\xc3\xa9\":null,\"\xc3\xa9t\xc3\xa8\":1}"));
    EXPECT_FALSE(u("{\"\xc3\xa9t\xc3\xa9\":null,\"\xc3\xa9t\xc3\xa9\":1}"));
    EXPECT_TRUE(u(R"({"q\"":null,"q":2})"));
    EXPECT_FALSE(u(R"({"q\"":null,"q\"":2})"));
}

TEST(GrammarSchema, ErrorsNameThePointer) {
    EXPECT_EQ(schema_error(R"({"type":"object","properties":{"a/b":{"not":{}}}})"),
              "json_schema at '/properties/a~1b': keyword 'not' is not supported");
    EXPECT_EQ(schema_error(R"({"items":{"type":"strin"}})"), "json_schema at '/items/type': unknown type 'strin'");
    EXPECT_EQ(schema_error(R"({"$ref":"#/$defs/missing"})"), "json_schema at '#': $ref '#/$defs/missing' does not resolve");
    EXPECT_EQ(schema_error(R"({"type":"string","minLength":3,"maxLength":2})"), "json_schema at '#': maxLength is below minLength");
    EXPECT_EQ(schema_error(R"({"type":"integer","minimum":5,"maximum":4})"),
              "json_schema at '#': no integer-valued bounds fit between minimum and maximum");
    EXPECT_EQ(schema_error("{\"type\":\n \"object\",}"), "json_schema: line 2, column 11: expected a string key");
    EXPECT_EQ(schema_error("{\"type\": tru}"), "json_schema: line 1, column 10: unexpected character 't'");
    // Counts the grammar compiler would refuse are refused by the converter (fuzz finding 10).
    EXPECT_EQ(schema_error(R"({"type":"string","maxLength":1000000})"),
              "json_schema at '/maxLength': 1000000 is above the grammar's repetition limit of 100000");
    EXPECT_EQ(schema_error(R"({"type":"array","minItems":100001})"),
              "json_schema at '/minItems': 100001 is above the grammar's repetition limit of 100000");
    EXPECT_NE(schema_error(R"({"type":"string","pattern":"^a{41,66666666}$"})").find("above the grammar limit of 100000"),
              std::string::npos);
    EXPECT_EQ(schema_error(R"({"type":"string","maxLength":100000})"), "");  // the limit itself is fine
}
