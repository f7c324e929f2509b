// The C ABI of chat output parsing: format choice, streaming deltas vs the one-shot call, the JSON and
// plain-text results, the buffer convention and errors. The parsing itself is checked against the
// refdata templates in chat_output_parser_test.cpp.
#include <string>

#include <gtest/gtest.h>

#include "chat/py_json.h"
#include "ikllm.h"
#include "test_support.h"

namespace {

using ikllm::chat::json_parse;
using ikllm::chat::Value;

const Value* member(const Value& v, const char* key) { return v.dict_data().find(std::string(key)); }

std::string parse_one_shot(const char* format, const char* tmpl, const char* prompt, uint32_t flags,
                           const std::string& text) {
    size_t needed = 0;
    EXPECT_EQ(ikllm_chat_parse(nullptr, format, tmpl, prompt, flags, text.data(), text.size(), nullptr, 0, &needed),
              IKLLM_ERR_BUFFER_TOO_SMALL);
    std::string buf(needed, 'x');
    EXPECT_EQ(ikllm_chat_parse(nullptr, format, tmpl, prompt, flags, text.data(), text.size(), buf.data(), buf.size(),
                               &needed),
              IKLLM_OK)
        << ikllm_last_error();
    EXPECT_EQ(buf.back(), '\0');
    buf.pop_back();
    return buf;
}

TEST(ApiChatParse, StreamingMatchesOneShotWithARealTemplate) {
    IKLLM_REQUIRE_REFDATA();
    const std::string dir = ikllm::test::refdata_dir() + "/templates/";
    const std::string tmpl = ikllm::test::read_text_file(dir + "Qwen-Qwen3-0.6B.jinja");
    const std::string output =
        "<think>\nLook it up.\n</think>\n\nOne moment.\n<tool_call>\n{\"name\": \"get_current_weather\", "
        "\"arguments\": {\"location\": \"東京\"}}\n</tool_call>";

    ikllm_chat_parser* p = nullptr;
    ASSERT_EQ(ikllm_chat_parser_create(nullptr, nullptr, tmpl.c_str(), nullptr, 0, &p), IKLLM_OK);
    EXPECT_STREQ(ikllm_chat_parser_format(p), "hermes");
    std::string reasoning, content;
    int calls = 0;
    for (char ch : output) {
        const char* delta = nullptr;
        size_t len = 0;
        ASSERT_EQ(ikllm_chat_parser_push(p, &ch, 1, &delta, &len), IKLLM_OK);
        ASSERT_EQ(std::string(delta).size(), len);
        const Value d = json_parse(std::string(delta, len));
        if (const Value* r = member(d, "reasoning_content")) reasoning += r->str();
        if (const Value* c = member(d, "content")) content += c->str();
        if (const Value* t = member(d, "tool_calls")) calls += (int)t->list().items.size();
        const char* text = nullptr;
        size_t text_len = 0;
        ASSERT_EQ(ikllm_chat_parser_text(p, IKLLM_CHAT_TEXT_CONTENT_DELTA, &text, &text_len), IKLLM_OK);
        EXPECT_EQ(std::string(text, text_len), member(d, "content") ? member(d, "content")->str() : "");
    }
    const char *delta = nullptr, *message = nullptr;
    ASSERT_EQ(ikllm_chat_parser_finish(p, &delta, nullptr, &message, nullptr), IKLLM_OK);
    EXPECT_EQ(reasoning, "Look it up.");
    EXPECT_EQ(content, "One moment.");
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(std::string(message), parse_one_shot("auto", tmpl.c_str(), nullptr, 0, output));

    ASSERT_EQ(ikllm_chat_parser_tool_call_count(p), 1);
    const char *id = nullptr, *name = nullptr, *args = nullptr;
    ASSERT_EQ(ikllm_chat_parser_tool_call(p, 0, &id, &name, &args), IKLLM_OK);
    EXPECT_STREQ(id, "");
    EXPECT_STREQ(name, "get_current_weather");
    EXPECT_STREQ(args, "{\"location\": \"東京\"}");
    EXPECT_EQ(ikllm_chat_parser_tool_call(p, 1, &id, &name, &args), IKLLM_ERR_INVALID_ARGUMENT);
    const char* all = nullptr;
    ASSERT_EQ(ikllm_chat_parser_text(p, IKLLM_CHAT_TEXT_REASONING, &all, nullptr), IKLLM_OK);
    EXPECT_STREQ(all, "Look it up.");

    // Finished: pushing needs a reset.
    EXPECT_EQ(ikllm_chat_parser_push(p, "x", 1, nullptr, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(ikllm_chat_parser_reset(p), IKLLM_OK);
    ASSERT_EQ(ikllm_chat_parser_push(p, "x", 1, nullptr, nullptr), IKLLM_OK);
    EXPECT_EQ(ikllm_chat_parser_tool_call_count(p), 0);
    ikllm_chat_parser_free(p);

    // DeepSeek R1's generation prompt opens <think>: given the prompt, the output starts as reasoning.
    const std::string ds = ikllm::test::read_text_file(dir + "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja");
    const std::string prompt =
        ikllm::test::read_text_file(dir + "expected/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B/single_user.txt");
    const Value m = json_parse(parse_one_shot(nullptr, ds.c_str(), prompt.c_str(), 0, "hm\n</think>\n\nHi."));
    EXPECT_EQ(member(m, "reasoning_content")->str(), "hm");
    EXPECT_EQ(member(m, "content")->str(), "Hi.");
    EXPECT_TRUE(member(m, "tool_calls")->list().items.empty());
}

TEST(ApiChatParse, FlagsFormatsAndErrors) {
    const std::string call = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
    Value m = json_parse(parse_one_shot("qwen", nullptr, nullptr, 0, call));
    EXPECT_EQ(member(m, "tool_calls")->list().items.size(), 1u);
    m = json_parse(parse_one_shot("qwen", nullptr, nullptr, IKLLM_CHAT_PARSE_NO_TOOLS, call));
    EXPECT_EQ(member(m, "content")->str(), call);
    m = json_parse(parse_one_shot("generic", nullptr, nullptr, IKLLM_CHAT_PARSE_IN_REASONING, "a</think>b"));
    EXPECT_EQ(member(m, "reasoning_content")->str(), "a");
    m = json_parse(parse_one_shot("generic", nullptr, nullptr, IKLLM_CHAT_PARSE_NO_REASONING, "<think>a</think>b"));
    EXPECT_EQ(member(m, "content")->str(), "<think>a</think>b");
    // No template, no model: generic.
    ikllm_chat_parser* p = nullptr;
    ASSERT_EQ(ikllm_chat_parser_create(nullptr, "", nullptr, nullptr, 0, &p), IKLLM_OK);
    EXPECT_STREQ(ikllm_chat_parser_format(p), "generic");
    EXPECT_EQ(ikllm_chat_parser_push(p, nullptr, 0, nullptr, nullptr), IKLLM_OK);
    EXPECT_EQ(ikllm_chat_parser_push(p, nullptr, 3, nullptr, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_chat_parser_text(p, 99, nullptr, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_chat_parser_free(p);

    p = reinterpret_cast<ikllm_chat_parser*>(1);
    EXPECT_EQ(ikllm_chat_parser_create(nullptr, "llama2", nullptr, nullptr, 0, &p), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::string(ikllm_last_error()).find("llama2"), std::string::npos);
    EXPECT_EQ(ikllm_chat_parser_create(nullptr, nullptr, nullptr, nullptr, 8u, &p), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_chat_parser_push(nullptr, "x", 1, nullptr, nullptr), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_chat_parser_format(nullptr), nullptr);
    EXPECT_EQ(ikllm_chat_parser_tool_call_count(nullptr), 0);
    ikllm_chat_parser_free(nullptr);
}

}  // namespace
