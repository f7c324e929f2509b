// C boundary for chat templates: rendering (src/chat) and the templates a model file carries.
#include <cstdlib>

#include "api/api_internal.h"
#include "api/options.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

using namespace ikllm;

namespace {

constexpr const char* kTemplateKey = "tokenizer.chat_template";
constexpr size_t kTemplateKeyLen = 23;  // strlen(kTemplateKey)

// Named templates are stored as "tokenizer.chat_template.NAME" string values.
bool is_named_template_key(const std::string& key, const gguf::Value& v) {
    return key.size() > kTemplateKeyLen + 1 && key.compare(0, kTemplateKeyLen, kTemplateKey) == 0 &&
           key[kTemplateKeyLen] == '.' && v.type == gguf::ValueType::string;
}

const std::string& model_template(const ikllm_model* m, const char* name) {
    IKLLM_REQUIRE(m, "model is NULL");
    const std::string key = name && *name ? std::string(kTemplateKey) + "." + name : std::string(kTemplateKey);
    const gguf::Value* v = m->m->file->find(key);
    if (!v) fail(Status::not_found, "the model has no chat template '" + key + "'");
    if (v->type != gguf::ValueType::string) fail(Status::invalid_file, "metadata '" + key + "' is not a string");
    return v->s;
}

}  // namespace

namespace ikllm::api {

// "YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS" (or with 'T'); throws invalid_argument on anything else.
chat::DateTime parse_chat_now(const std::string& s) {
    chat::DateTime t;
    int n = 0;
    char sep = 0;
    bool ok = false;
    if (s.size() == 10) {
        ok = std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &t.year, &t.month, &t.day, &n) == 3 && n == 10;
    } else if (s.size() == 19) {
        ok = std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &t.year, &t.month, &t.day, &sep, &t.hour, &t.minute,
                         &t.second, &n) == 7 &&
             n == 19 && (sep == ' ' || sep == 'T');
    }
    static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    ok = ok && t.year >= 1 && t.month >= 1 && t.month <= 12 && t.day >= 1 && t.day <= kDays[t.month - 1] &&
         t.hour >= 0 && t.hour <= 23 && t.minute >= 0 && t.minute <= 59 && t.second >= 0 && t.second <= 59;
    const bool leap = (t.year % 4 == 0 && t.year % 100 != 0) || t.year % 400 == 0;
    ok = ok && !(t.month == 2 && t.day == 29 && !leap);
    for (size_t i = 0; ok && i < s.size(); ++i)
        if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16) ok = s[i] >= '0' && s[i] <= '9';
    if (!ok)
        fail(Status::invalid_argument,
             "chat option 'now' must be 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS', got '" + s + "'");
    return t;
}

void check_chat_now(const std::string& s) { parse_chat_now(s); }

}  // namespace ikllm::api

extern "C" {

int32_t ikllm_model_chat_template_count(const ikllm_model* m) {
    if (!m) return 0;
    int32_t n = 0;
    for (const auto& kv : m->m->file->kvs()) n += is_named_template_key(kv.first, kv.second);
    return n;
}

const char* ikllm_model_chat_template_name(const ikllm_model* m, int32_t index) {
    if (!m || index < 0) return nullptr;
    for (const auto& kv : m->m->file->kvs())
        if (is_named_template_key(kv.first, kv.second) && index-- == 0) return kv.first.c_str() + kTemplateKeyLen + 1;
    return nullptr;
}

ikllm_status ikllm_model_chat_template(const ikllm_model* m, const char* name, const char** out_template) {
    if (out_template) *out_template = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(out_template, "out_template is NULL");
        *out_template = model_template(m, name).c_str();
    });
}

ikllm_status ikllm_chat_render(const ikllm_model* m, const char* template_text, const char* messages_json,
                               const char* tools_json, const char* extra_vars_json, int32_t add_generation_prompt,
                               const ikllm_options* options, char* buf, size_t buf_size, size_t* needed) {
    if (needed) *needed = 0;
    return api::guard([&] {
        IKLLM_REQUIRE(m || template_text, "both model and template are NULL");
        IKLLM_REQUIRE(buf || buf_size == 0, "buf is NULL");
        IKLLM_REQUIRE(!options || options->kind == IKLLM_OPTIONS_CHAT, "options are not of kind IKLLM_OPTIONS_CHAT");
        const std::string text = template_text ? std::string(template_text) : model_template(m, nullptr);

        chat::RenderRequest r;
        r.messages_json = messages_json ? messages_json : "";
        if (tools_json) r.tools_json = tools_json;
        if (extra_vars_json) r.extra_vars_json = extra_vars_json;
        r.add_generation_prompt = add_generation_prompt != 0;
        if (m) {
            // As transformers passes the tokenizer's special tokens; extra variables may override them.
            const tok::Tokenizer& t = *m->m->tokenizer;
            const tok::SpecialIds& s = t.special_ids();
            if (s.bos >= 0 && s.bos < t.n_vocab()) r.bos_token = t.token_text(s.bos);
            if (s.eos >= 0 && s.eos < t.n_vocab()) r.eos_token = t.token_text(s.eos);
        }
        const std::string now = api::opt_string(options, IKLLM_OPTIONS_CHAT, "now");
        if (!now.empty()) r.now = api::parse_chat_now(now);
        const int64_t max_out = api::opt_int(options, IKLLM_OPTIONS_CHAT, "max_output_bytes");
        r.limits.max_output = (size_t)max_out;

        const std::string out = chat::ChatTemplate(text).render(r);
        api::copy_out(out, buf, buf_size, needed);
    });
}

}  // extern "C"
