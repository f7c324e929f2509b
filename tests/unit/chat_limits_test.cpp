// Hostile chat templates found by fuzzing (tests/fuzz/chat_template_fuzz.cpp, docs/fuzzing.md): each used
// to crash the renderer (native stack overflow, allocation of gigabytes, signed overflow) and must now
// fail with a template error of the Python exception type jinja2 would raise, while ordinary sizes keep
// working. The inputs themselves are also replayed from tests/fuzz/regressions/chat_template_fuzz/.
#include <string>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"

namespace {

using ikllm::chat::ChatTemplate;
using ikllm::chat::RenderRequest;

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

std::string render(const std::string& tmpl) {
    RenderRequest r;
    r.now = ikllm::chat::DateTime{2026, 1, 15, 0, 0, 0};
    return ChatTemplate(tmpl).render(r);
}

// The template error message ("<Type>: message (template line N)"); "" when the render succeeds.
std::string error_of(const std::string& tmpl) {
    try {
        render(tmpl);
        return "";
    } catch (const ikllm::Error& e) {
        EXPECT_EQ(e.status, ikllm::Status::template_error) << e.what();
        return e.what();
    }
}

#define EXPECT_TEMPLATE_ERROR(tmpl, type) \
    EXPECT_EQ(error_of(tmpl).rfind(type, 0), 0u) << "template: " << std::string(tmpl).substr(0, 80) << "\nerror: " << error_of(tmpl)

TEST(ChatLimits, LongLeftDeepChainsAreRejectedAtParseTime) {
    // Attribute, filter, call and binary-operator chains build one tree level per link without recursing
    // in the parser; conditional chains recurse and meet the parser's nesting limit.
    EXPECT_TEMPLATE_ERROR("{{ a" + repeat(".b", 20000) + " }}", "TemplateSyntaxError");
    EXPECT_TEMPLATE_ERROR("{{ 1" + repeat("|string", 20000) + " }}", "TemplateSyntaxError");
    EXPECT_TEMPLATE_ERROR("{{ f" + repeat("()", 20000) + " }}", "TemplateSyntaxError");
    EXPECT_TEMPLATE_ERROR("{{ " + repeat("1+", 20000) + "1 }}", "TemplateSyntaxError");
    EXPECT_TEMPLATE_ERROR("{{ " + repeat("x or ", 20000) + "1 }}", "TemplateSyntaxError");
    EXPECT_TEMPLATE_ERROR("{{ 1" + repeat(" if 1 else 2", 20000) + " }}", "TemplateSyntaxError");
    // Chains of ordinary length still work.
    EXPECT_EQ(render("{{ 'x'" + repeat("|string", 200) + " }}"), "x");
    EXPECT_EQ(render("{{ " + repeat("1+", 200) + "1 }}"), "201");
}

TEST(ChatLimits, RecursionAcrossMacrosIsBounded) {
    // 149 nested macro calls (below the macro limit), each under a 250-level expression.
    const std::string deep = "{% macro f(n) %}{% if n > 0 %}{{ f(n-1)" + repeat("|string", 250) +
                             " }}{% endif %}{% endmacro %}{{ f(149) }}";
    EXPECT_TEMPLATE_ERROR(deep, "RecursionError");
    EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{% endif %}{{ n }}{% endmacro %}{{ f(3) }}"), "0123");
}

TEST(ChatLimits, HugeWidthsFailWithMemoryError) {
    EXPECT_TEMPLATE_ERROR("{{ 'a'.center(2000000000) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ 'a'.ljust(9223372036854775807) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ 'a'.zfill(9223372036854775807) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ '\\t\\t'.expandtabs(9223372036854775807) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ 'a\\nb' | indent(1000000000) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ [1, [2]] | tojson(indent=1000000000) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ '%*d' % (1000000000, 1) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ '%.1000000000f' % 1.0 }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ '%99999999999999999999999d' % 1 }}", "MemoryError");  // was a signed overflow
    EXPECT_TEMPLATE_ERROR("{{ '{:>1000000000}'.format(1) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ '{:99999999999999999999999}'.format(1) }}", "MemoryError");
    // Ordinary widths are unaffected.
    EXPECT_EQ(render("{{ 'a'.center(5, '*') }}|{{ '42'.zfill(5) }}|{{ '%5d|%-4s|%.2f' % (7, 'ab', 1.0) }}|{{ '{:>4}'.format(1) }}"),
              "**a**|00042|    7|ab  |1.00|   1");
}

TEST(ChatLimits, AmplifyingOperationsFailWithMemoryError) {
    const std::string big = "{% set s = 'a' * 5000000 %}";  // 5 MB: each result below would exceed 64 MB
    EXPECT_TEMPLATE_ERROR(big + "{{ s.replace('a', s) | length }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR(big + "{{ ([s] * 20) | join(s) | length }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR(big + "{{ s.join([s] * 20) | length }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR(big + "{{ ([s] * 1000) | string | length }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR(big + "{{ ([s] * 1000) | tojson | length }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR(big + "{{ ('%s' * 20) % ((s,) * 20) }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR(
        "{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = ns.a + ns.a %}{% endfor %}{{ ns.a|length }}",
        "MemoryError");
}

// Work proportional to a count that produces nothing (found by chat_template_fuzz as a 30 s timeout:
// `"" * 2222222222244` looped 2.2e12 times): an empty string or list times any count is empty at
// once, as in Python; slice / batch counts that would make more lists than the limit fail.
TEST(ChatLimits, EmptyRepetitionsAndHugeCountsAreCheap) {
    EXPECT_EQ(render("{{ '' * 2222222222244 }}|{{ 11 * '' * 2222222222244 }}|{{ ([] * 9223372036854775807) | length }}|"
                     "{{ (() * 4000000000000) | length }}|{{ 'ab' * 2 }}|{{ [1] * 3 }}"),
              "||0|0|abab|[1, 1, 1]");
    EXPECT_TEMPLATE_ERROR("{{ [] | slice(1000000000000) | list | length }}", "MemoryError");
    EXPECT_TEMPLATE_ERROR("{{ [1] | batch(3, fill_with=0) | list }}{{ [1] | batch(1000000000000, fill_with=0) | list }}",
                          "MemoryError");
    EXPECT_EQ(render("{{ [1, 2, 3] | slice(2) | list }}|{{ [1, 2, 3] | batch(2, fill_with=0) | list }}"),
              "[[1, 2], [3]]|[[1, 2], [3, 0]]");
}

TEST(ChatLimits, FloatToIntegerFormattingChecksRange) {
    EXPECT_TEMPLATE_ERROR("{{ '%d' % 1e300 }}", "OverflowError");  // was an out-of-range conversion
    EXPECT_TEMPLATE_ERROR("{{ '%d' % (1e309 - 1e309) }}", "ValueError");
    EXPECT_EQ(render("{{ '%d' % 2.9 }}{{ '%i' % -2.9 }}"), "2-2");
}

}  // namespace
