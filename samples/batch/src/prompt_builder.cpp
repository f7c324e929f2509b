#include "prompt_builder.h"

#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace batch {

const char* const kDefaultTemplate =
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}### System:\n{% elif m['role'] == 'user' %}### Instruction:\n"
    "{% else %}### Response:\n{% endif %}{{ m['content'] }}\n\n"
    "{% endfor %}{% if add_generation_prompt %}### Response:\n{% endif %}";

namespace {
// Stands for the document while rendering; split on afterwards. Unlikely in any instruction.
const char* const kSentinel = "\x1e\x1dIKLLM_BATCH_DOCUMENT\x1d\x1e";
}  // namespace

PromptBuilder::PromptBuilder(const ikllm_model* model, std::string template_text, std::string system)
    : model_(model), template_(std::move(template_text)), system_(std::move(system)) {
    const char* own = nullptr;
    if (!template_.empty()) {
        origin_ = "task";
    } else if (ikllm_model_chat_template(model_, nullptr, &own) == IKLLM_OK && own && *own) {
        origin_ = "model";
    } else {
        origin_ = "default";
        template_ = kDefaultTemplate;
        std::fprintf(stderr,
                     "ikllm-batch: note: the model has no chat template; using a plain '### Instruction: / "
                     "### Response:' layout (set \"template\" in the task file to choose another)\n");
    }
    // Which token (if any) the vocabulary puts in front of a text: added once to the prefix.
    const auto with = tokenize("a", IKLLM_TOKENIZE_ADD_SPECIAL), without = tokenize("a", 0);
    if (with.size() > without.size() && !with.empty() && (without.empty() || with[0] != without[0])) bos_ = with[0];
}

std::vector<ikllm_token> PromptBuilder::tokenize(const std::string& text, uint32_t flags) const {
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(model_, text.data(), text.size(), flags, nullptr, 0, &n);
    if (st != IKLLM_OK && st != IKLLM_ERR_BUFFER_TOO_SMALL)
        throw std::runtime_error(std::string("tokenize: ") + ikllm_last_error());
    std::vector<ikllm_token> toks(n);
    if (n) {
        st = ikllm_tokenize(model_, text.data(), text.size(), flags, toks.data(), toks.size(), &n);
        if (st != IKLLM_OK) throw std::runtime_error(std::string("tokenize: ") + ikllm_last_error());
        toks.resize(n);
    }
    return toks;
}

std::vector<ikllm_token> PromptBuilder::tokenize_document(const std::string& text) const { return tokenize(text, 0); }

PromptParts PromptBuilder::build(const std::string& instruction) const {
    std::string content = instruction;
    const size_t at = content.find("{document}");
    if (at == std::string::npos) throw std::runtime_error("instruction has no {document}");
    content.replace(at, 10, kSentinel);
    nlohmann::json messages = nlohmann::json::array();
    if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
    messages.push_back({{"role", "user"}, {"content", content}});
    const std::string mj = messages.dump();
    const char* tmpl = origin_ == "model" ? nullptr : template_.c_str();
    size_t needed = 0;
    ikllm_status st = ikllm_chat_render(model_, tmpl, mj.c_str(), nullptr, nullptr, 1, nullptr, nullptr, 0, &needed);
    if (st != IKLLM_OK && st != IKLLM_ERR_BUFFER_TOO_SMALL)
        throw std::runtime_error(std::string("chat template: ") + ikllm_last_error());
    std::string out(needed, '\0');
    st = ikllm_chat_render(model_, tmpl, mj.c_str(), nullptr, nullptr, 1, nullptr, out.data(), out.size(), &needed);
    if (st != IKLLM_OK) throw std::runtime_error(std::string("chat template: ") + ikllm_last_error());
    out.resize(needed ? needed - 1 : 0);
    const size_t pos = out.find(kSentinel);
    if (pos == std::string::npos || out.find(kSentinel, pos + 1) != std::string::npos)
        throw std::runtime_error("the chat template must place the user message exactly once");
    PromptParts p;
    p.rendered_prefix = out.substr(0, pos);
    p.rendered_suffix = out.substr(pos + std::string(kSentinel).size());
    // Template text may name special tokens (<|im_start|>): parse them there, never in documents.
    p.prefix = tokenize(p.rendered_prefix, IKLLM_TOKENIZE_PARSE_SPECIAL);
    if (bos_ >= 0 && (p.prefix.empty() || p.prefix[0] != bos_)) p.prefix.insert(p.prefix.begin(), bos_);
    p.suffix = tokenize(p.rendered_suffix, IKLLM_TOKENIZE_PARSE_SPECIAL);
    if (p.prefix.empty()) throw std::runtime_error("the prompt prefix is empty (no BOS and no template text)");
    return p;
}

}  // namespace batch
