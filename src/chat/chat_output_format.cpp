#include "chat/chat_output_format.h"

#include "chat/json_scan.h"
#include "core/error.h"

namespace ikllm::chat {

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
    const size_t b = skip_json_ws(s, 0);
    size_t e = s.size();
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
    return s.substr(b, e - b);
}

const std::string_view* find_member(const std::vector<std::pair<std::string, std::string_view>>& members,
                                    std::string_view key) {
    for (const auto& m : members)
        if (m.first == key) return &m.second;
    return nullptr;
}

// Arguments as a JSON object, or as a string that holds the JSON text of an object (OpenAI style).
bool decode_arguments(std::string_view raw, std::string& out) {
    if (!raw.empty() && raw[0] == '{') {
        out.assign(raw);
        return true;
    }
    std::string text;
    if (!json_string_value(raw, text) || !is_json_object(text)) return false;
    out.assign(trim(text));
    return true;
}

}  // namespace

bool is_json_object(std::string_view text) {
    std::vector<std::pair<std::string, std::string_view>> members;
    return json_object_members(text, members);
}

const char* output_format_name(OutputFormat f) {
    switch (f) {
        case OutputFormat::none: return "none";
        case OutputFormat::generic: return "generic";
        case OutputFormat::llama3: return "llama3";
        case OutputFormat::hermes: return "hermes";
        case OutputFormat::mistral: return "mistral";
        case OutputFormat::deepseek: return "deepseek";
    }
    return "none";
}

OutputFormat output_format_from_name(std::string_view name) {
    static const std::pair<std::string_view, OutputFormat> kNames[] = {
        {"none", OutputFormat::none},       {"generic", OutputFormat::generic}, {"llama3", OutputFormat::llama3},
        {"hermes", OutputFormat::hermes},   {"qwen", OutputFormat::hermes},     {"mistral", OutputFormat::mistral},
        {"deepseek", OutputFormat::deepseek}};
    for (const auto& [n, f] : kNames)
        if (n == name) return f;
    fail(Status::invalid_argument,
         "unknown chat output format '" + std::string(name) +
             "' (expected auto, none, generic, llama3, hermes, qwen, mistral or deepseek)");
}

OutputFormat detect_output_format(std::string_view t) {
    if (contains(t, marker::ds_calls_begin) || contains(t, marker::ds_call_begin)) return OutputFormat::deepseek;
    if (contains(t, marker::mistral_calls)) return OutputFormat::mistral;
    // Qwen3-Coder (<function=NAME>) and GLM (<arg_key>) also use <tool_call>, with XML bodies.
    if (contains(t, marker::hermes_open) && !contains(t, "<function=") && !contains(t, "<arg_key>"))
        return OutputFormat::hermes;
    // Llama 3.x asks for {"name": ..., "parameters": ...}; functionary (<function=, >>>) and firefunction
    // (functools) share the Llama 3 header tokens but write calls differently.
    if (contains(t, "<|start_header_id|>") && (contains(t, "\"parameters\"") || contains(t, marker::python_tag)) &&
        !contains(t, "<function=") && !contains(t, ">>>") && !contains(t, "functools"))
        return OutputFormat::llama3;
    return OutputFormat::generic;
}

bool prompt_opens_reasoning(std::string_view prompt) {
    const std::string_view t = trim(prompt);
    return t.size() >= marker::think_open.size() &&
           t.substr(t.size() - marker::think_open.size()) == marker::think_open;
}

bool decode_call_object(std::string_view json, ToolCall& out) {
    std::vector<std::pair<std::string, std::string_view>> m;
    if (!json_object_members(json, m)) return false;
    ToolCall call;
    if (const std::string_view* id = find_member(m, "id")) {
        if (!json_string_value(*id, call.id)) return false;
    }
    const std::string_view* name = find_member(m, "name");
    const std::string_view* fn = find_member(m, "function");
    if (!name && fn && !fn->empty() && (*fn)[0] == '{') {  // {"type": "function", "function": {...}}
        ToolCall inner;
        if (!decode_call_object(*fn, inner)) return false;
        if (inner.id.empty()) inner.id = call.id;
        out = std::move(inner);
        return true;
    }
    if (!name || !json_string_value(*name, call.name) || call.name.empty()) return false;
    const std::string_view* args = find_member(m, "arguments");
    if (!args) args = find_member(m, "parameters");
    if (!args || !decode_arguments(*args, call.arguments)) return false;
    out = std::move(call);
    return true;
}

bool decode_call_array(std::string_view json, std::vector<ToolCall>& out) {
    std::vector<std::string_view> items;
    if (!json_array_items(json, items) || items.empty()) return false;
    std::vector<ToolCall> calls(items.size());
    for (size_t i = 0; i < items.size(); ++i)
        if (!decode_call_object(items[i], calls[i])) return false;
    for (auto& c : calls) out.push_back(std::move(c));
    return true;
}

bool decode_deepseek_call(std::string_view body, ToolCall& out) {
    const size_t sep = body.find(marker::ds_sep);
    if (sep == std::string_view::npos) return false;
    const std::string_view left = trim(body.substr(0, sep));
    const std::string_view right = trim(body.substr(sep + marker::ds_sep.size()));
    ToolCall call;
    std::string_view args;
    if (!right.empty() && right[0] == '{') {  // V3.1: NAME<｜tool▁sep｜>ARGS
        call.name.assign(left);
        args = right;
    } else {  // V3/R1: TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```
        const size_t nl = right.find('\n');
        if (nl == std::string_view::npos) return false;
        call.name.assign(trim(right.substr(0, nl)));
        args = trim(right.substr(nl + 1));
        if (args.substr(0, 3) == "```") {
            const size_t line_end = args.find('\n');                // past the fence's language word
            const size_t close = args.rfind("```");
            if (line_end == std::string_view::npos || close <= line_end) return false;
            args = trim(args.substr(line_end + 1, close - line_end - 1));
        }
    }
    if (call.name.empty() || call.name.find_first_of(" \t\r\n") != std::string::npos || !is_json_object(args))
        return false;
    call.arguments.assign(args);
    out = std::move(call);
    return true;
}

}  // namespace ikllm::chat
