// The output formats of the common chat-model families: how a model writes reasoning and tool calls
// in its generated text, which family a chat template belongs to, and the decoding of one tool call's
// text into name + arguments. Markers are the exact strings the families' templates render.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ikllm::chat {

enum class OutputFormat {
    none,      // everything is content
    generic,   // <think>...</think> reasoning, no tool calls
    llama3,    // Llama 3.x: {"name": ..., "parameters": {...}} as the whole reply, or after <|python_tag|>
    hermes,    // Qwen 2.5/3, Hermes 2 Pro: <tool_call>{"name": ..., "arguments": {...}}</tool_call>, repeated
    mistral,   // [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}, ...] or [TOOL_CALLS]name[ARGS]{...}
    deepseek,  // DeepSeek V3/R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json...
};

const char* output_format_name(OutputFormat f);
// "none", "generic", "llama3", "hermes" (also "qwen"), "mistral", "deepseek"; throws invalid_argument.
OutputFormat output_format_from_name(std::string_view name);
// The family a chat template's text belongs to, from the markers it contains; generic when unknown.
OutputFormat detect_output_format(std::string_view template_text);
// True when a rendered prompt ends inside an opened reasoning block (its last non-whitespace text is
// "<think>"), as DeepSeek R1's generation prompt does: the output then starts with reasoning.
bool prompt_opens_reasoning(std::string_view prompt);

struct ToolCall {
    std::string id;         // "" when the model wrote none
    std::string name;
    std::string arguments;  // JSON object text, as the model wrote it
};

// True when text (surrounding whitespace allowed) is exactly one valid JSON object.
bool is_json_object(std::string_view text);

// Decoders of one family's tool-call text. They return false (nothing appended) when the text is not
// a well-formed call: the parser then delivers the text as content.

// A JSON call object: {"name": N, "arguments"|"parameters": {...} or a string holding a JSON object,
// "id"?: S}, or the same wrapped as {"type": "function", "function": {...}}.
bool decode_call_object(std::string_view json, ToolCall& out);
// Mistral's JSON array of call objects.
bool decode_call_array(std::string_view json, std::vector<ToolCall>& out);
// The text between DeepSeek's <｜tool▁call▁begin｜> and <｜tool▁call▁end｜>: either
// "TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```" (V3/R1) or "NAME<｜tool▁sep｜>ARGS" (V3.1).
bool decode_deepseek_call(std::string_view body, ToolCall& out);

// Marker strings.
namespace marker {
inline constexpr std::string_view think_open = "<think>";
inline constexpr std::string_view think_close = "</think>";
inline constexpr std::string_view hermes_open = "<tool_call>";
inline constexpr std::string_view hermes_close = "</tool_call>";
inline constexpr std::string_view python_tag = "<|python_tag|>";
inline constexpr std::string_view mistral_calls = "[TOOL_CALLS]";
inline constexpr std::string_view mistral_args = "[ARGS]";
inline constexpr std::string_view mistral_call_id = "[CALL_ID]";
inline constexpr std::string_view ds_calls_begin = "<｜tool▁calls▁begin｜>";
inline constexpr std::string_view ds_calls_end = "<｜tool▁calls▁end｜>";
inline constexpr std::string_view ds_call_begin = "<｜tool▁call▁begin｜>";
inline constexpr std::string_view ds_call_end = "<｜tool▁call▁end｜>";
inline constexpr std::string_view ds_sep = "<｜tool▁sep｜>";
}  // namespace marker

}  // namespace ikllm::chat
