// Chat-template rendering: the Jinja2 text a model ships in `tokenizer.chat_template`, rendered byte for
// byte as Hugging Face transformers' apply_chat_template(..., tokenize=False) renders it (jinja2
// ImmutableSandboxedEnvironment, trim_blocks + lstrip_blocks, loopcontrols, `tojson` = json.dumps,
// `raise_exception`, `strftime_now`). Every template failure - syntax error, raise_exception, a Python
// TypeError inside the template, exceeded limits - is thrown as ikllm::Error(Status::template_error)
// with a message "<PythonExceptionType>: <message> (template line N)". Malformed JSON input is
// Status::invalid_argument.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja_interp.h"

namespace ikllm::chat {

// What one render needs. Variables are set in transformers' order, later ones winning:
//   tools=None, documents=None, add_generation_prompt=False; bos_token/eos_token (when given);
//   every key of extra_vars_json; messages; tools (when tools_json is not empty); add_generation_prompt.
struct RenderRequest {
    std::string messages_json = "[]";   // JSON array of message objects; empty: `messages` stays undefined
    std::string tools_json;             // JSON array, or empty for tools=None
    bool add_generation_prompt = false;
    std::string extra_vars_json;        // JSON object of further variables (enable_thinking, ...), or empty
    std::optional<std::string> bos_token, eos_token;  // absent: the variable is undefined, as in transformers
    std::optional<DateTime> now;        // time strftime_now formats; absent: the current local time
    RenderLimits limits;
};

// A parsed template, reusable for many renders (thread-safe: rendering does not modify it).
class ChatTemplate {
public:
    explicit ChatTemplate(std::string_view source);  // throws Error(template_error) on syntax errors
    std::string render(const RenderRequest& request) const;

private:
    std::shared_ptr<const Body> body_;
};

// One-shot convenience: parse + render.
std::string render(std::string_view template_text, std::string_view messages_json, std::string_view tools_json,
                   bool add_generation_prompt, std::string_view extra_vars_json,
                   const std::optional<std::string>& bos_token, const std::optional<std::string>& eos_token,
                   const std::optional<DateTime>& now);

// The conversation-case format of refdata/templates: a template's sidecar JSON (bos_token, eos_token,
// template-specific variables) and a case JSON (messages, add_generation_prompt, tools, enable_thinking, ...),
// merged as render_template.py merges them (case wins; keys starting with '_' are comments).
RenderRequest load_template_case(std::string_view sidecar_json, std::string_view case_json, const DateTime& now);

}  // namespace ikllm::chat
