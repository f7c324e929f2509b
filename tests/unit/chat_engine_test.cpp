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
