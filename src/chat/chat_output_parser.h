// Splitting a chat model's generated text into reasoning, content and tool calls, incrementally.
//
// Text arrives in arbitrary pieces (tokens, bytes). Each push returns what became certain: new
// reasoning text, new content text, and tool calls that completed. Text that could still be the
// start of a marker ("<too", "[TOOL_CA") or an incomplete UTF-8 sequence is held back until the next
// piece decides it, so no partial marker ever appears as content, and the concatenated deltas equal
// the final message whatever the piece boundaries were.
//
// Rules (every format):
//   - Reasoning is the text inside <think>...</think> when the reply opens with <think> (or when the
//     prompt already opened it: starts_in_reasoning). An unclosed block makes the rest reasoning.
//   - Leading and trailing whitespace of reasoning and of content is dropped (whitespace inside is
//     kept; around tool calls only the whitespace before the first call of a run is kept, and only if
//     more content follows).
//   - A tool call is delivered once, complete, when its text ends. Text in tool-call syntax that does
//     not decode (malformed JSON, missing name or arguments, unterminated at the end) is delivered as
//     content exactly as written, markers included - never an error.
//   - Invalid UTF-8 in the input becomes U+FFFD, so all output is valid UTF-8.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_output_format.h"

namespace ikllm::chat {

struct OutputParserConfig {
    OutputFormat format = OutputFormat::generic;
    bool starts_in_reasoning = false;  // the prompt ended inside <think>
    bool tool_calls = true;            // false: tool-call syntax is ordinary content
    bool reasoning = true;             // false: <think> is ordinary content
};

struct ParsedMessage {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;
};

struct OutputDelta {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;  // completed calls; the first has index first_tool_index
    size_t first_tool_index = 0;
    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class OutputParser {
public:
    explicit OutputParser(const OutputParserConfig& config);

    // Feeds a piece of generated text (any bytes). The delta stays valid until the next call.
    // Throws Error(invalid_argument) after finish() until reset().
    const OutputDelta& push(std::string_view text);
    // Ends the message: decides everything held back. Further pushes need reset().
    const OutputDelta& finish();
    void reset();

    const ParsedMessage& message() const { return msg_; }  // everything delivered so far
    bool finished() const { return finished_; }
    const OutputParserConfig& config() const { return cfg_; }

private:
    enum class Mode { reasoning, content, hermes_call, json_call, mistral_call, deepseek_block };

    // Whitespace policy of one output stream (reasoning or content).
    struct Stream {
        bool started = false;  // some non-whitespace text was delivered
        std::string hold;      // trailing whitespace waiting for more text
        bool trim_next = false;  // a tool call came last: whitespace after it is dropped
    };

    void begin_delta();
    void accept_bytes(std::string_view bytes, bool final);
    void run(bool final);
    bool step_reasoning(bool final);
    bool step_content(bool final);
    bool step_hermes(bool final);
    bool step_json_call(bool final);
    bool step_mistral(bool final);
    bool step_deepseek(bool final);
    void emit(Stream& s, std::string_view text, std::string& total, std::string& delta);
    void emit_content(std::string_view text) { emit(content_, text, msg_.content, delta_.content); }
    void emit_reasoning(std::string_view text) { emit(reasoning_, text, msg_.reasoning, delta_.reasoning); }
    void add_call(ToolCall call);

    OutputParserConfig cfg_;
    Mode mode_ = Mode::content;
    std::string utf8_tail_;  // incomplete UTF-8 sequence at the end of the input so far
    std::string buf_;        // valid UTF-8 not yet delivered
    Stream reasoning_, content_;
    bool had_reasoning_ = false;
    bool json_call_via_tag_ = false;   // the Llama JSON call followed <|python_tag|>
    bool json_start_blocked_ = false;  // a leading '{' turned out not to be a call: it is content
    bool finished_ = false;
    size_t scanned_ = 0;        // bytes of buf_ already searched for the end of the current call
    std::string ds_pending_;    // DeepSeek block markers not yet known to be a call's
    bool ds_block_ok_ = false;  // the current DeepSeek block decoded a call
    ParsedMessage msg_;
    OutputDelta delta_;
};

// {"reasoning_content": "...", "content": "...", "tool_calls": [{"index": N, "id": "...",
// "type": "function", "function": {"name": "...", "arguments": "..."}}]}: only the non-empty parts;
// "id" only when the model wrote one. "{}" for an empty delta.
std::string delta_json(const OutputDelta& d);
// {"reasoning_content": "...", "content": "...", "tool_calls": [...]}: always all three keys; tool
// calls without "index" (OpenAI's message shape).
std::string message_json(const ParsedMessage& m);

// One-shot: the whole text at once.
ParsedMessage parse_output(const OutputParserConfig& config, std::string_view text);

}  // namespace ikllm::chat
