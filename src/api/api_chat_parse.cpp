// C boundary for chat output parsing (src/chat/chat_output_parser): handle, format choice and the
// borrowed JSON / text results.
#include <string>

#include "api/api_internal.h"
#include "chat/chat_output_parser.h"

using namespace ikllm;

struct ikllm_chat_parser {
    explicit ikllm_chat_parser(const chat::OutputParserConfig& c) : parser(c) {}
    chat::OutputParser parser;
    chat::OutputDelta last;   // the last push/finish delta (the parser's own is overwritten by the next)
    std::string delta_json;
    std::string message_json;
};

namespace {

constexpr uint32_t kKnownFlags =
    IKLLM_CHAT_PARSE_IN_REASONING | IKLLM_CHAT_PARSE_NO_TOOLS | IKLLM_CHAT_PARSE_NO_REASONING;

chat::OutputParserConfig make_config(const ikllm_model* m, const char* format, const char* template_text,
                                     const char* prompt, uint32_t flags) {
    IKLLM_REQUIRE((flags & ~kKnownFlags) == 0, "unknown chat parse flags");
    chat::OutputParserConfig c;
    const std::string name = format ? format : "";
    if (!name.empty() && name != "auto") {
        c.format = chat::output_format_from_name(name);
    } else if (template_text) {
        c.format = chat::detect_output_format(template_text);
    } else if (const gguf::Value* v = m ? m->m->file->find("tokenizer.chat_template") : nullptr;
               v && v->type == gguf::ValueType::string) {
        c.format = chat::detect_output_format(v->s);
    }
    c.tool_calls = !(flags & IKLLM_CHAT_PARSE_NO_TOOLS);
    c.reasoning = !(flags & IKLLM_CHAT_PARSE_NO_REASONING);
    c.starts_in_reasoning = c.reasoning && ((flags & IKLLM_CHAT_PARSE_IN_REASONING) ||
                                            (prompt && chat::prompt_opens_reasoning(prompt)));
    return c;
}

void set_out(const std::string& s, const char** out, size_t* len) {
    if (out) *out = s.c_str();
    if (len) *len = s.size();
}

}  // namespace

extern "C" {

ikllm_status ikllm_chat_parser_create(const ikllm_model* m, const char* format, const char* template_text,
                                      const char* prompt, uint32_t flags, ikllm_chat_parser** out) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(out, "out_parser is NULL");
        *out = new ikllm_chat_parser(make_config(m, format, template_text, prompt, flags));
    });
}

void ikllm_chat_parser_free(ikllm_chat_parser* p) { delete p; }

const char* ikllm_chat_parser_format(const ikllm_chat_parser* p) {
    return p ? chat::output_format_name(p->parser.config().format) : nullptr;
}

ikllm_status ikllm_chat_parser_push(ikllm_chat_parser* p, const char* text, size_t len, const char** out_json,
                                    size_t* out_len) {
    if (out_json) *out_json = nullptr;
    if (out_len) *out_len = 0;
    return api::guard([&] {
        IKLLM_REQUIRE(p, "parser is NULL");
        IKLLM_REQUIRE(text || len == 0, "text is NULL");
        p->last = p->parser.push(std::string_view(text ? text : "", len));
        p->delta_json = chat::delta_json(p->last);
        set_out(p->delta_json, out_json, out_len);
    });
}

ikllm_status ikllm_chat_parser_finish(ikllm_chat_parser* p, const char** out_delta, size_t* out_delta_len,
                                      const char** out_message, size_t* out_message_len) {
    if (out_delta) *out_delta = nullptr;
    if (out_delta_len) *out_delta_len = 0;
    if (out_message) *out_message = nullptr;
    if (out_message_len) *out_message_len = 0;
    return api::guard([&] {
        IKLLM_REQUIRE(p, "parser is NULL");
        p->last = p->parser.finish();
        p->delta_json = chat::delta_json(p->last);
        p->message_json = chat::message_json(p->parser.message());
        set_out(p->delta_json, out_delta, out_delta_len);
        set_out(p->message_json, out_message, out_message_len);
    });
}

ikllm_status ikllm_chat_parser_reset(ikllm_chat_parser* p) {
    return api::guard([&] {
        IKLLM_REQUIRE(p, "parser is NULL");
        p->parser.reset();
        p->last = chat::OutputDelta{};
    });
}

ikllm_status ikllm_chat_parser_text(const ikllm_chat_parser* p, int32_t which, const char** out_text,
                                    size_t* out_len) {
    if (out_text) *out_text = nullptr;
    if (out_len) *out_len = 0;
    return api::guard([&] {
        IKLLM_REQUIRE(p, "parser is NULL");
        const chat::ParsedMessage& m = p->parser.message();
        switch (which) {
            case IKLLM_CHAT_TEXT_CONTENT_DELTA: set_out(p->last.content, out_text, out_len); break;
            case IKLLM_CHAT_TEXT_REASONING_DELTA: set_out(p->last.reasoning, out_text, out_len); break;
            case IKLLM_CHAT_TEXT_CONTENT: set_out(m.content, out_text, out_len); break;
            case IKLLM_CHAT_TEXT_REASONING: set_out(m.reasoning, out_text, out_len); break;
            default: fail(Status::invalid_argument, "unknown IKLLM_CHAT_TEXT_* value " + std::to_string(which));
        }
    });
}

int32_t ikllm_chat_parser_tool_call_count(const ikllm_chat_parser* p) {
    return p ? (int32_t)p->parser.message().tool_calls.size() : 0;
}

ikllm_status ikllm_chat_parser_tool_call(const ikllm_chat_parser* p, int32_t index, const char** out_id,
                                         const char** out_name, const char** out_arguments) {
    if (out_id) *out_id = nullptr;
    if (out_name) *out_name = nullptr;
    if (out_arguments) *out_arguments = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(p, "parser is NULL");
        const auto& calls = p->parser.message().tool_calls;
        IKLLM_REQUIRE(index >= 0 && (size_t)index < calls.size(), "tool call index out of range");
        const chat::ToolCall& c = calls[(size_t)index];
        if (out_id) *out_id = c.id.c_str();
        if (out_name) *out_name = c.name.c_str();
        if (out_arguments) *out_arguments = c.arguments.c_str();
    });
}

ikllm_status ikllm_chat_parse(const ikllm_model* m, const char* format, const char* template_text, const char* prompt,
                              uint32_t flags, const char* text, size_t text_len, char* buf, size_t buf_size,
                              size_t* needed) {
    if (needed) *needed = 0;
    return api::guard([&] {
        IKLLM_REQUIRE(text || text_len == 0, "text is NULL");
        IKLLM_REQUIRE(buf || buf_size == 0, "buf is NULL");
        const chat::ParsedMessage msg = chat::parse_output(make_config(m, format, template_text, prompt, flags),
                                                           std::string_view(text ? text : "", text_len));
        api::copy_out(chat::message_json(msg), buf, buf_size, needed);
    });
}

}  // extern "C"
