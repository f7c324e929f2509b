#include "chat_prompt.h"

#include <cstdio>

#include "api_error.h"

namespace server {

namespace {

// ChatML with Hermes-style tool calls (the syntax Qwen models use), for models that carry no
// template: the output parser then detects the "hermes" format from it.
constexpr const char* kFallbackTemplate =
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    "# Tools\n\nYou may call one or more functions. Function signatures:\n<tools>"
    "{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}\n</tools>\n\n"
    "For each call, return a JSON object inside <tool_call></tool_call> tags:\n"
    "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
    "{%- elif messages[0]['role'] == 'system' %}<|im_start|>system\n{{ messages[0]['content'] }}<|im_end|>\n"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' %}{%- if not loop.first %}<|im_start|>system\n{{ message['content'] }}<|im_end|>\n{%- endif %}"
    "{%- elif message['role'] == 'tool' %}<|im_start|>user\n<tool_response>\n{{ message['content'] }}\n</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "{%- if message['tool_calls'] is defined %}{%- for call in message['tool_calls'] %}"
    "\n<tool_call>\n{\"name\": \"{{ call['function']['name'] }}\", \"arguments\": {{ call['function']['arguments'] | tojson }}}\n</tool_call>"
    "{%- endfor %}{%- endif %}<|im_end|>\n"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

std::string render_text(const ikllm_model* model, const std::string& tmpl, const std::string& messages,
                        const char* tools, const std::string& vars) {
    size_t needed = 0;
    ikllm_status st = ikllm_chat_render(model, tmpl.c_str(), messages.c_str(), tools, vars.c_str(), 1, nullptr,
                                        nullptr, 0, &needed);
    std::string out;
    if (st == IKLLM_ERR_BUFFER_TOO_SMALL) {
        out.assign(needed, '\0');
        st = ikllm_chat_render(model, tmpl.c_str(), messages.c_str(), tools, vars.c_str(), 1, nullptr, out.data(),
                               out.size(), &needed);
        out.resize(needed ? needed - 1 : 0);
    }
    if (st != IKLLM_OK) throw bad_request(std::string("chat template: ") + ikllm_last_error(), "messages", "template_error");
    return out;
}

}  // namespace

ChatTemplate::ChatTemplate(const ikllm_model* model, std::string template_text, std::string tool_format)
    : model_(model), text_(std::move(template_text)), tool_format_(std::move(tool_format)) {
    if (text_.empty()) {
        const char* t = nullptr;
        if (ikllm_model_chat_template(model, nullptr, &t) == IKLLM_OK && t && *t) {
            text_ = t;
        } else {
            text_ = kFallbackTemplate;
            std::fprintf(stderr,
                         "ikllm-server: notice: the model has no chat template; using ChatML with Hermes-style tool "
                         "calls (--chat-template-file to choose one)\n");
        }
    }
    if (tool_format_.empty() || tool_format_ == "auto") {
        ikllm_chat_parser* p = nullptr;
        if (ikllm_chat_parser_create(model, nullptr, text_.c_str(), nullptr, 0, &p) == IKLLM_OK)
            tool_format_ = ikllm_chat_parser_format(p);
        ikllm_chat_parser_free(p);
        if (tool_format_.empty()) tool_format_ = "generic";
    }
}

std::string ChatTemplate::render(const GenRequest& r) const {
    const bool with_tools = !r.tools.is_null() && r.tool_choice != ToolChoice::None;
    const std::string tools = with_tools ? r.tools.dump() : "";
    return render_text(model_, text_, r.messages.dump(), with_tools ? tools.c_str() : nullptr, r.template_kwargs.dump());
}

std::string ChatTemplate::tool_call_grammar(const GenRequest& r) const {
    if (r.tool_choice != ToolChoice::Required && r.tool_choice != ToolChoice::Named) return "";
    if (tool_format_ != "hermes" && tool_format_ != "qwen" && tool_format_ != "llama3") return "";
    // One JSON object {"name": N, "arguments": PARAMS} per allowed tool, joined with anyOf.
    json any = json::array();
    const char* args_key = tool_format_ == "llama3" ? "parameters" : "arguments";
    for (const auto& t : r.tools) {
        const json& f = t["function"];
        if (r.tool_choice == ToolChoice::Named && f["name"] != r.tool_choice_name) continue;
        json params = f.contains("parameters") && f["parameters"].is_object() ? f["parameters"] : json::object();
        any.push_back({{"type", "object"},
                       {"properties", {{"name", {{"const", f["name"]}}}, {args_key, params}}},
                       {"required", {"name", args_key}},
                       {"additionalProperties", false}});
    }
    const json schema = any.size() == 1 ? any[0] : json{{"anyOf", any}};
    char* gbnf = nullptr;
    if (ikllm_json_schema_to_grammar(schema.dump().c_str(), &gbnf) != IKLLM_OK)
        throw bad_request(std::string("tools: ") + ikllm_last_error(), "tools", "invalid_schema");
    std::string g = gbnf;
    ikllm_free(gbnf);
    if (tool_format_ == "llama3") return g;  // the call is the bare JSON object
    // Hermes: the object inside <tool_call> tags; the schema's "root" becomes the tag's body.
    return g + "\ntool-call-root ::= \"<tool_call>\\n\" root \"\\n</tool_call>\"\n";
}

}  // namespace server
