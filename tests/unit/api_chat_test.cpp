// The C ABI of chat templates: ikllm_chat_render (buffers, options, errors) and the templates a model
// file carries (ikllm_model_chat_template / _count / _name).
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "ikllm.h"
#include "model/model.h"
#include "test_support.h"

namespace {

// Renders with the caller-buffer protocol (size query, then fill). Returns the status.
ikllm_status render(const ikllm_model* m, const char* tmpl, const char* messages, const char* tools,
                    const char* extra, int32_t add_gen, const ikllm_options* o, std::string* out) {
    size_t needed = 0;
    ikllm_status st = ikllm_chat_render(m, tmpl, messages, tools, extra, add_gen, o, nullptr, 0, &needed);
    if (st != IKLLM_ERR_BUFFER_TOO_SMALL) return st;
    EXPECT_GE(needed, 1u);
    std::string buf(needed, 'x');
    size_t needed2 = 0;
    st = ikllm_chat_render(m, tmpl, messages, tools, extra, add_gen, o, buf.data(), buf.size(), &needed2);
    EXPECT_EQ(needed, needed2);
    if (st == IKLLM_OK) {
        EXPECT_EQ(buf[needed - 1], '\0');
        *out = buf.substr(0, needed - 1);
    }
    return st;
}

std::string render_ok(const char* tmpl, const char* messages, const char* tools = nullptr, const char* extra = nullptr,
                      int32_t add_gen = 0, const ikllm_options* o = nullptr) {
    std::string out;
    const ikllm_status st = render(nullptr, tmpl, messages, tools, extra, add_gen, o, &out);
    EXPECT_EQ(st, IKLLM_OK) << ikllm_last_error();
    return out;
}

TEST(ApiChat, RendersWithoutModel) {
    const char* tmpl =
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}";
    EXPECT_EQ(render_ok(tmpl, R"([{"role":"user","content":"héllo"}])", nullptr, nullptr, 1),
              "<user>héllo\n<assistant>");
    EXPECT_EQ(render_ok(tmpl, R"([{"role":"user","content":"x"}])"), "<user>x\n");
}

TEST(ApiChat, VariableOrderAndDefaults) {
    // tools/documents default to none but are defined; extra variables are visible; explicit
    // messages/tools/add_generation_prompt win over extra variables of the same name.
    const char* tmpl =
        "{{ tools is defined }} {{ tools }} {{ documents }} {{ add_generation_prompt }} {{ enable_thinking }} "
        "{{ messages|length }} {{ bos_token is defined }}";
    EXPECT_EQ(render_ok(tmpl, "[]", nullptr, R"({"enable_thinking": false})"), "True None None False False 0 False");
    EXPECT_EQ(render_ok(tmpl, "[1, 2]", "[]", R"({"messages": [], "add_generation_prompt": false, "bos_token": "<s>"})", 1),
              "True [] None True  2 True");
    EXPECT_EQ(render_ok("{{ tools|tojson }}", "[]", R"([{"type": "function", "function": {"name": "f"}}])"),
              R"([{"type": "function", "function": {"name": "f"}}])");
    // No messages at all: the variable is undefined, as when transformers is not given it.
    EXPECT_EQ(render_ok("{{ messages is defined }}", nullptr), "False");
}

TEST(ApiChat, BufferConvention) {
    size_t needed = 0;
    char small[4];
    EXPECT_EQ(ikllm_chat_render(nullptr, "abcdef", "[]", nullptr, nullptr, 0, nullptr, small, sizeof small, &needed),
              IKLLM_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(needed, 7u);
    char exact[7];
    EXPECT_EQ(ikllm_chat_render(nullptr, "abcdef", "[]", nullptr, nullptr, 0, nullptr, exact, sizeof exact, &needed),
              IKLLM_OK);
    EXPECT_STREQ(exact, "abcdef");
    EXPECT_EQ(ikllm_chat_render(nullptr, "", "[]", nullptr, nullptr, 0, nullptr, exact, sizeof exact, &needed), IKLLM_OK);
    EXPECT_EQ(needed, 1u);
    EXPECT_STREQ(exact, "");
}

TEST(ApiChat, NowOption) {
    ikllm_options* o = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_CHAT, &o), IKLLM_OK);
    const char* tmpl = "{{ strftime_now('%d %b %Y %H:%M:%S %A %j') }}";
    ASSERT_EQ(ikllm_options_set_string(o, "now", "2026-01-15"), IKLLM_OK);
    EXPECT_EQ(render_ok(tmpl, "[]", nullptr, nullptr, 0, o), "15 Jan 2026 00:00:00 Thursday 015");
    ASSERT_EQ(ikllm_options_set_string(o, "now", "2024-02-29 13:05:09"), IKLLM_OK);
    EXPECT_EQ(render_ok(tmpl, "[]", nullptr, nullptr, 0, o), "29 Feb 2024 13:05:09 Thursday 060");
    ASSERT_EQ(ikllm_options_set_from_text(o, "now", "2025-12-31T23:59:59"), IKLLM_OK);
    EXPECT_EQ(render_ok(tmpl, "[]", nullptr, nullptr, 0, o), "31 Dec 2025 23:59:59 Wednesday 365");
    for (const char* bad : {"2025-02-29", "2026-13-01", "2026-1-15", "15/01/2026", "2026-01-15 24:00:00", "x"})
        EXPECT_EQ(ikllm_options_set_string(o, "now", bad), IKLLM_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(ikllm_options_set_string(o, "nonesuch", "1"), IKLLM_ERR_NOT_FOUND);
    // Empty: the current time (just check it renders a year).
    ASSERT_EQ(ikllm_options_set_string(o, "now", ""), IKLLM_OK);
    EXPECT_EQ(render_ok("{{ strftime_now('%Y')|length }}", "[]", nullptr, nullptr, 0, o), "4");
    // Output limit.
    ASSERT_EQ(ikllm_options_set_int(o, "max_output_bytes", 100), IKLLM_OK);
    std::string out;
    EXPECT_EQ(render(nullptr, "{% for i in range(1000) %}xx{% endfor %}", "[]", nullptr, nullptr, 0, o, &out),
              IKLLM_ERR_TEMPLATE);
    ikllm_options_free(o);
    // Options of another kind are refused.
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o), IKLLM_OK);
    EXPECT_EQ(render(nullptr, "x", "[]", nullptr, nullptr, 0, o, &out), IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_options_free(o);
    bool listed = false;
    for (int32_t i = 0; i < ikllm_option_count(IKLLM_OPTIONS_CHAT); ++i) {
        const char* name = nullptr;
        ASSERT_EQ(ikllm_option_info(IKLLM_OPTIONS_CHAT, i, &name, nullptr, nullptr, nullptr, nullptr, nullptr), IKLLM_OK);
        listed |= std::string(name) == "now";
    }
    EXPECT_TRUE(listed);
}

TEST(ApiChat, Errors) {
    std::string out;
    // raise_exception: the template's own message and the line.
    EXPECT_EQ(render(nullptr, "a\n{{ raise_exception('roles must alternate') }}", "[]", nullptr, nullptr, 0, nullptr,
                     &out),
              IKLLM_ERR_TEMPLATE);
    EXPECT_EQ(ikllm_last_error_status(), IKLLM_ERR_TEMPLATE);
    EXPECT_EQ(std::string(ikllm_last_error()), "TemplateError: roles must alternate (template line 2)");
    // Syntax error.
    EXPECT_EQ(render(nullptr, "{% if x %}\n\nno end", "[]", nullptr, nullptr, 0, nullptr, &out), IKLLM_ERR_TEMPLATE);
    EXPECT_EQ(std::string(ikllm_last_error()).rfind("TemplateSyntaxError: ", 0), 0u) << ikllm_last_error();
    // Python type errors and undefined misuse inside the template.
    EXPECT_EQ(render(nullptr, "{{ 'a' + 1 }}", "[]", nullptr, nullptr, 0, nullptr, &out), IKLLM_ERR_TEMPLATE);
    EXPECT_EQ(std::string(ikllm_last_error()).rfind("TypeError: ", 0), 0u) << ikllm_last_error();
    EXPECT_EQ(render(nullptr, "{{ nothing.here }}", "[]", nullptr, nullptr, 0, nullptr, &out), IKLLM_ERR_TEMPLATE);
    EXPECT_EQ(std::string(ikllm_last_error()).rfind("UndefinedError: ", 0), 0u) << ikllm_last_error();
    // Bad inputs.
    EXPECT_EQ(render(nullptr, "x", "[", nullptr, nullptr, 0, nullptr, &out), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(render(nullptr, "x", "[]", "{", nullptr, 0, nullptr, &out), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(render(nullptr, "x", "[]", nullptr, "[1]", 0, nullptr, &out), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(render(nullptr, nullptr, "[]", nullptr, nullptr, 0, nullptr, &out), IKLLM_ERR_INVALID_ARGUMENT);
    size_t needed = 0;
    EXPECT_EQ(ikllm_chat_render(nullptr, "x", "[]", nullptr, nullptr, 0, nullptr, nullptr, 5, &needed),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_model_chat_template_count(nullptr), 0);
    EXPECT_EQ(ikllm_model_chat_template_name(nullptr, 0), nullptr);
    const char* t = "unchanged";
    EXPECT_EQ(ikllm_model_chat_template(nullptr, nullptr, &t), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(t, nullptr);
}

struct VocabModel {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    explicit VocabModel(const std::string& path) {
        EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
        ikllm_options_set_int(o, "vocab_only", 1);
        EXPECT_EQ(ikllm_model_load(lib, path.c_str(), o, nullptr, nullptr, nullptr, &model), IKLLM_OK)
            << ikllm_last_error();
        ikllm_options_free(o);
    }
    ~VocabModel() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};

std::string token_text(const ikllm_model* m, ikllm_token id) {
    char buf[256];
    size_t needed = 0;
    EXPECT_EQ(ikllm_token_to_piece(m, id, IKLLM_DETOK_RENDER_SPECIAL, buf, sizeof buf, &needed), IKLLM_OK);
    return buf;
}

TEST(ApiChat, ModelTemplates) {
    IKLLM_REQUIRE_REFDATA();
    const std::string src = ikllm::test::refdata_dir() + "/vocab/ggml-vocab-qwen2.gguf";
    // A copy of the vocabulary with two named templates added.
    const std::string path = testing::TempDir() + "/ikllm_chat_named.gguf";
    {
        auto f = ikllm::gguf::File::open(src, &ikllm::type_geometry);
        ikllm::gguf::Writer w;
        w.copy_kvs(*f);
        w.set_str("tokenizer.chat_template.tool_use", "T{{ tools|length }}");
        w.set_str("tokenizer.chat_template.rag", "R{{ documents|length }}");
        w.write(path);
    }
    VocabModel vm(path);
    ASSERT_NE(vm.model, nullptr);
    const ikllm_model* m = vm.model;
    ASSERT_EQ(ikllm_model_chat_template_count(m), 2);
    EXPECT_STREQ(ikllm_model_chat_template_name(m, 0), "tool_use");
    EXPECT_STREQ(ikllm_model_chat_template_name(m, 1), "rag");
    EXPECT_EQ(ikllm_model_chat_template_name(m, 2), nullptr);
    EXPECT_EQ(ikllm_model_chat_template_name(m, -1), nullptr);
    const char* def = nullptr;
    ASSERT_EQ(ikllm_model_chat_template(m, nullptr, &def), IKLLM_OK);
    const char* def2 = nullptr;
    ASSERT_EQ(ikllm_model_chat_template(m, "", &def2), IKLLM_OK);
    EXPECT_EQ(def, def2);
    const char* tool_use = nullptr;
    ASSERT_EQ(ikllm_model_chat_template(m, "tool_use", &tool_use), IKLLM_OK);
    EXPECT_STREQ(tool_use, "T{{ tools|length }}");
    const char* none = nullptr;
    EXPECT_EQ(ikllm_model_chat_template(m, "nonesuch", &none), IKLLM_ERR_NOT_FOUND);

    // Default template from the model == the same text passed explicitly.
    const char* msgs = R"([{"role":"system","content":"S"},{"role":"user","content":"Hi"}])";
    std::string a, b;
    ASSERT_EQ(render(m, nullptr, msgs, nullptr, nullptr, 1, nullptr, &a), IKLLM_OK) << ikllm_last_error();
    ASSERT_EQ(render(m, def, msgs, nullptr, nullptr, 1, nullptr, &b), IKLLM_OK);
    EXPECT_EQ(a, b);
    EXPECT_NE(a.find("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"), std::string::npos) << a;
    ASSERT_EQ(render(m, tool_use, "[]", "[1,2,3]", nullptr, 0, nullptr, &a), IKLLM_OK);
    EXPECT_EQ(a, "T3");

    // bos_token / eos_token are the model's special tokens; extra variables override them.
    const ikllm_token bos = ikllm_model_special_token(m, IKLLM_TOKEN_BOS);
    const ikllm_token eos = ikllm_model_special_token(m, IKLLM_TOKEN_EOS);
    const std::string expect = (bos >= 0 ? token_text(m, bos) : "") + "|" + (eos >= 0 ? token_text(m, eos) : "");
    ASSERT_EQ(render(m, "{{ bos_token }}|{{ eos_token }}", "[]", nullptr, nullptr, 0, nullptr, &a), IKLLM_OK);
    EXPECT_EQ(a, expect);
    ASSERT_EQ(render(m, "{{ bos_token }}|{{ eos_token }}", "[]", nullptr, R"({"bos_token": "B"})", 0, nullptr, &a),
              IKLLM_OK);
    EXPECT_EQ(a, "B|" + (eos >= 0 ? token_text(m, eos) : ""));
    std::remove(path.c_str());
}

}  // namespace
