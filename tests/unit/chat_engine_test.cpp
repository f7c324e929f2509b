// Engine-level behaviour of the chat-template API: error reporting (status, Python exception type, template
// line), JSON input validation, variable setup as transformers does it, injected time, limits that keep
// hostile templates from crashing or exhausting the host, and concurrent rendering of one parsed template.
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"

namespace {

using ikllm::Error;
using ikllm::Status;
using ikllm::chat::ChatTemplate;
using ikllm::chat::DateTime;
using ikllm::chat::RenderRequest;

std::string render_vars(const std::string& tmpl, const std::string& vars = "{}") {
    RenderRequest r;
    r.extra_vars_json = vars;
    r.now = DateTime{2026, 1, 15, 0, 0, 0};
    return ChatTemplate(tmpl).render(r);
}

// Runs `fn`, expecting an ikllm::Error; returns it.
template <typename Fn>
Error expect_error(Fn fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "no ikllm::Error thrown";
    return Error(Status::ok, "");
}

TEST(ChatEngine, SyntaxErrorReportsTypeAndLine) {
    Error e = expect_error([] { ChatTemplate t("line one\n{% if x %}\n{{ 1 + }}\n{% endif %}"); });
    EXPECT_EQ(e.status, Status::template_error);
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("TemplateSyntaxError:", 0), 0u) << msg;
    EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
}

TEST(ChatEngine, RaiseExceptionKeepsTemplateMessage) {
    Error e = expect_error([] { render_vars("ok\n{{ raise_exception('Roles must alternate!') }}"); });
    EXPECT_EQ(e.status, Status::template_error);
    EXPECT_EQ(std::string(e.what()), "TemplateError: Roles must alternate! (template line 2)");
}

TEST(ChatEngine, RuntimeTypeErrorIsTemplateError) {
    Error e = expect_error([] { render_vars("{{ 'a' + x }}", R"({"x": {"k": 1}})"); });
    EXPECT_EQ(e.status, Status::template_error);
    EXPECT_EQ(std::string(e.what()).rfind("TypeError: can only concatenate str (not \"dict\") to str", 0), 0u) << e.what();
}

TEST(ChatEngine, InvalidJsonIsInvalidArgument) {
    ChatTemplate t("{{ messages|length }}");
    RenderRequest r;
    r.messages_json = "[{\"role\": ";
    EXPECT_EQ(expect_error([&] { t.render(r); }).status, Status::invalid_argument);
    r.messages_json = "[]";
    r.extra_vars_json = "[1, 2]";  // variables must be an object
    EXPECT_EQ(expect_error([&] { t.render(r); }).status, Status::invalid_argument);
    r.extra_vars_json = "";
    r.tools_json = "{bad";
    EXPECT_EQ(expect_error([&] { t.render(r); }).status, Status::invalid_argument);
}

// Render variables are read as Python's json.loads reads them (expected values from Python 3.11 + jinja2 3.1.2).
TEST(ChatEngine, JsonInputFollowsPython) {
    const char* show = "{{ x|tojson }}|{{ x }}";
    EXPECT_EQ(render_vars(show, R"({"x": [1.0, -0, -0.0, 1E2, 2.50, 1e-7, 1e16, 123.456e3]})"),
              "[1.0, 0, -0.0, 100.0, 2.5, 1e-07, 1e+16, 123456.0]|[1.0, 0, -0.0, 100.0, 2.5, 1e-07, 1e+16, 123456.0]");
    EXPECT_EQ(render_vars(show, R"({"x": [NaN, Infinity, -Infinity]})"), "[NaN, Infinity, -Infinity]|[nan, inf, -inf]");
    EXPECT_EQ(render_vars(show, R"({"x": {"a": 1, "b": 2, "a": 3}})"), R"({"a": 3, "b": 2}|{'a': 3, 'b': 2})");
    EXPECT_EQ(render_vars(show, R"({"x": "\ud83d\ude00 \u00e9\n\"\\\/"})"), "\"😀 é\\n\\\"\\\\/\"|😀 é\n\"\\/");
    EXPECT_EQ(render_vars(show, R"( { "x" : "\u0001" } )"), "\"\\u0001\"|\x01");
    for (const char* bad : {R"({"x": [1,]})", R"({"x" 1})", R"({"x": 01})", "{\"x\": \"\x01\"}", R"({"x": "\ud800"})",
                            R"({"x": "\x"})", R"({"x": 'a'})", R"({"x": .5})", R"({"x": 1.})", R"({"x": +1})", R"({} {})",
                            " ", "{\"x\": \"\xff\"}"})
        EXPECT_EQ(expect_error([&] { render_vars(show, bad); }).status, Status::invalid_argument) << bad;
}

// Integers beyond 64 bits (e.g. a JSON-schema "maximum") print exactly, compare correctly and fail
// cleanly in arithmetic instead of printing wrong digits.
TEST(ChatEngine, BigIntegers) {
    const char* vars = R"({"u": 18446744073709551615, "n": -99999999999999999999999})";
    EXPECT_EQ(render_vars("{{ u }} {{ u|tojson }} {{ {'m': u}|tojson }} {{ [n] }} {{ u|string|length }}", vars),
              R"(18446744073709551615 18446744073709551615 {"m": 18446744073709551615} [-99999999999999999999999] 20)");
    EXPECT_EQ(render_vars("{{ u is integer }} {{ u > 5 }} {{ n < -5 }} {{ u == 18446744073709551615 }} {{ u > n }} "
                          "{{ u|int }} {{ n|abs }} {{ -u }} {{ 99999999999999999999 }}",
                          vars),
              "True True True True True 18446744073709551615 99999999999999999999999 -18446744073709551615 "
              "99999999999999999999");
    Error e = expect_error([&] { render_vars("{{ u + 1 }}", vars); });
    EXPECT_EQ(e.status, Status::template_error);
    EXPECT_EQ(std::string(e.what()).rfind("OverflowError:", 0), 0u) << e.what();
}

// Random corruptions of valid JSON input either parse or fail with invalid_argument (never crash or hang).
TEST(ChatEngine, CorruptedJsonFailsCleanly) {
    const std::string base =
        R"({"x": [1, -2.5e3, "a\u00e9\ud83d\ude00\n", {"k": [true, false, null, NaN]}, 18446744073709551616, {}], "y": ""})";
    const char alphabet[] = "{}[]\",:\\u0123456789eE+-.tnfaNI \x01\xc3\xa9\xff";
    uint32_t seed = 12345;
    auto rnd = [&](uint32_t n) {
        seed = seed * 1664525u + 1013904223u;
        return (seed >> 8) % n;
    };
    int ok = 0;
    for (int i = 0; i < 3000; ++i) {
        std::string s = base;
        for (int k = 0, n = 1 + rnd(3); k < n; ++k) {
            size_t at = rnd(static_cast<uint32_t>(s.size()));
            switch (rnd(3)) {
                case 0: s.erase(at, 1 + rnd(4)); break;
                case 1: s.insert(at, 1, alphabet[rnd(sizeof alphabet - 1)]); break;
                default: s[at] = alphabet[rnd(sizeof alphabet - 1)];
            }
        }
        try {
            render_vars("{{ x|tojson }}{{ x }}{{ y }}", s);
            ++ok;
        } catch (const Error& e) {
            EXPECT_TRUE(e.status == Status::invalid_argument || e.status == Status::template_error) << s << ": " << e.what();
        }
    }
    EXPECT_GT(ok, 0);
}

TEST(ChatEngine, InvalidUtf8TemplateRejected) {
    EXPECT_EQ(expect_error([] { ChatTemplate t("abc\xff\xfe"); }).status, Status::template_error);
}

TEST(ChatEngine, VariablesFollowTransformersOrder) {
    ChatTemplate t(
        "{{ tools is defined }}{{ tools is none }}{{ documents is none }}{{ add_generation_prompt }}"
        "|{{ bos_token is defined }}|{{ messages|length }}|{{ x }}|{{ tools|length if tools else '-' }}");
    RenderRequest r;
    r.messages_json = R"([{"role": "user", "content": "hi"}])";
    EXPECT_EQ(t.render(r), "TrueTrueTrueFalse|False|1||-");
    r.add_generation_prompt = true;
    r.bos_token = "<s>";
    r.extra_vars_json = R"({"x": "extra", "add_generation_prompt": false})";
    r.tools_json = R"([{"type": "function"}])";
    // the explicit add_generation_prompt wins over the extra variable of the same name
    EXPECT_EQ(t.render(r), "TrueFalseTrueTrue|True|1|extra|1");
}

TEST(ChatEngine, OneShotRenderAndInjectedTime) {
    std::string out = ikllm::chat::render("{{ bos_token }}{{ messages[0].content }}|{{ strftime_now('%d %b %Y %H:%M') }}",
                                          R"([{"role": "user", "content": "x"}])", "", false, "", std::string("<s>"),
                                          std::nullopt, DateTime{2024, 7, 26, 13, 5, 0});
    EXPECT_EQ(out, "<s>x|26 Jul 2024 13:05");
}

TEST(ChatEngine, CaseLoaderMergesSidecarThenCase) {
    RenderRequest r = ikllm::chat::load_template_case(
        R"({"bos_token": "<b>", "eos_token": "<e>", "_comment": "ignored", "flag": 1})",
        R"({"_description": "x", "messages": [{"role": "user", "content": "c"}], "flag": 2, "enable_thinking": false,
            "add_generation_prompt": true, "tools": null})",
        DateTime{2026, 1, 15, 0, 0, 0});
    ChatTemplate t("{{ bos_token }}{{ eos_token }}{{ flag }}{{ enable_thinking }}{{ add_generation_prompt }}"
                   "{{ tools }}{{ _comment is defined }}{{ messages[0].content }}");
    EXPECT_EQ(t.render(r), "<b><e>2FalseTrueNoneFalsec");
}

TEST(ChatEngine, InfiniteMacroRecursionFailsCleanly) {
    Error e = expect_error([] { render_vars("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"); });
    EXPECT_EQ(e.status, Status::template_error);
    EXPECT_NE(std::string(e.what()).find("RecursionError"), std::string::npos) << e.what();
}

TEST(ChatEngine, OutputLimit) {
    ChatTemplate t("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}");
    RenderRequest r;
    r.limits.max_output = 1 << 20;
    EXPECT_EQ(expect_error([&] { t.render(r); }).status, Status::template_error);
}

TEST(ChatEngine, StepBudget) {
    ChatTemplate t("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
    RenderRequest r;
    r.limits.max_steps = 1'000'000;
    Error e = expect_error([&] { t.render(r); });
    EXPECT_EQ(e.status, Status::template_error);
}

TEST(ChatEngine, HugeStringRepetitionFailsCleanly) {
    EXPECT_EQ(expect_error([] { render_vars("{{ 'abc' * 1000000000000 }}"); }).status, Status::template_error);
    EXPECT_EQ(expect_error([] { render_vars("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(60) %}"
                                            "{% set ns.s = ns.s + ns.s %}{% endfor %}"); })
                  .status,
              Status::template_error);
}

TEST(ChatEngine, DeepNestingFailsCleanly) {
    std::string deep(5000, '(');
    EXPECT_EQ(expect_error([&] { ChatTemplate t("{{ " + deep + "1" + std::string(5000, ')') + " }}"); }).status,
              Status::template_error);
    std::string ifs;
    for (int i = 0; i < 2000; ++i) ifs += "{% if true %}";
    EXPECT_EQ(expect_error([&] { ChatTemplate t(ifs); }).status, Status::template_error);
    // deeply nested JSON input
    std::string json = std::string(100000, '[') + std::string(100000, ']');
    ChatTemplate t("{{ x }}");
    RenderRequest r;
    r.extra_vars_json = "{\"x\": " + json + "}";
    EXPECT_EQ(expect_error([&] { t.render(r); }).status, Status::invalid_argument);
}

TEST(ChatEngine, SelfReferencingNamespaceDoesNotCrash) {
    Error e = expect_error([] { render_vars("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"); });
    EXPECT_EQ(e.status, Status::template_error);  // Python: RecursionError in repr()
}

TEST(ChatEngine, ReusableAndThreadSafe) {
    ChatTemplate t(
        "{%- for m in messages %}<{{ m.role }}>{{ m.content|trim }}{{ '\\n' if not loop.last }}{% endfor %}"
        "{%- if add_generation_prompt %}<assistant>{% endif %}");
    auto make = [](int i) {
        RenderRequest r;
        r.messages_json = "[{\"role\": \"user\", \"content\": \" q" + std::to_string(i) + " \"}, "
                          "{\"role\": \"assistant\", \"content\": \"a\"}]";
        r.add_generation_prompt = (i % 2) == 0;
        return r;
    };
    std::vector<std::thread> threads;
    std::vector<int> failures(4, 0);
    for (int th = 0; th < 4; ++th) {
        threads.emplace_back([&, th] {
            for (int i = 0; i < 200; ++i) {
                std::string want = "<user>q" + std::to_string(i) + "\n<assistant>a" + ((i % 2) == 0 ? "<assistant>" : "");
                if (t.render(make(i)) != want) ++failures[th];
            }
        });
    }
    for (auto& th : threads) th.join();
    for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
