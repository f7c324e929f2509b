// Turns an instruction into token ids around a document: a shared prefix (everything the chat
// template renders before the document) and a suffix (everything after it).
#pragma once

#include <string>
#include <vector>

#include "ikllm.h"

namespace batch {

struct PromptParts {
    std::vector<ikllm_token> prefix;  // BOS + template + instruction up to {document}
    std::vector<ikllm_token> suffix;  // the rest of the instruction + the generation prompt
    std::string rendered_prefix, rendered_suffix;
};

// The template used when neither the model nor the task has one: plain role headings.
extern const char* const kDefaultTemplate;

class PromptBuilder {
  public:
    // template_text: the task's template, or "" to use the model's (or the default one, with a
    // one-time notice on stderr when the model has none).
    PromptBuilder(const ikllm_model* model, std::string template_text, std::string system);

    // Renders the chat for `instruction` (which holds "{document}") and tokenizes both sides.
    // Throws std::runtime_error when the template fails or drops the document.
    PromptParts build(const std::string& instruction) const;

    // Tokens of document text: no BOS, special-token text is NOT interpreted (a document cannot
    // inject control tokens).
    std::vector<ikllm_token> tokenize_document(const std::string& text) const;

    const std::string& template_origin() const { return origin_; }

  private:
    std::vector<ikllm_token> tokenize(const std::string& text, uint32_t flags) const;

    const ikllm_model* model_;
    std::string template_;  // "" = the model's own
    std::string system_;
    std::string origin_;    // "task", "model" or "default" (for the summary line)
    ikllm_token bos_ = -1;  // the token the vocabulary adds in front, if any
};

}  // namespace batch
