// Chat requests to prompts: renders the messages (and tools) through the model's chat template, or
// a ChatML-style default for models without one, and builds the constraint for tool_choice
// required / named function.
#pragma once
#include <string>

#include "ikllm.h"
#include "requests.h"

namespace server {

class ChatTemplate {
public:
    // template_text "" = the model's default template, else the ChatML-style fallback (logged).
    ChatTemplate(const ikllm_model* model, std::string template_text, std::string tool_format);
    // The prompt text for a request (add_generation_prompt); throws ApiError 400 on template errors.
    std::string render(const GenRequest& r) const;
    // Parser format in use ("hermes", "llama3", ...), detected from the template unless forced.
    const std::string& tool_format() const { return tool_format_; }
    const std::string& text() const { return text_; }
    // GBNF forcing one tool call in the parser's syntax for tool_choice required / named; "" when
    // the request needs none or the format has no known call syntax.
    std::string tool_call_grammar(const GenRequest& r) const;

private:
    const ikllm_model* model_;
    std::string text_, tool_format_;
};

}  // namespace server
