// The option registry: every key an ikllm_options object accepts, per kind, with type,
// default, range and a one-line description (listed through ikllm_option_info).
#pragma once
#include <cstdint>

#include "api/api_internal.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "session/session.h"

namespace ikllm::grammar { class TokenMatcher; }

namespace ikllm::api {

struct OptionSpec {
    int32_t kind;
    const char* name;
    int32_t type;
    const char* def;
    const char* min;   // "" when not numeric
    const char* max;
    const char* doc;
};

const OptionSpec* option_specs(int32_t kind, int32_t* count);
const OptionSpec* find_option(int32_t kind, const char* name);

// Typed reads with the registry default when the options object is null.
int64_t opt_int(const ikllm_options* o, int32_t kind, const char* name);
double opt_float(const ikllm_options* o, int32_t kind, const char* name);
std::string opt_string(const ikllm_options* o, int32_t kind, const char* name);

ModelOptions model_options(const ikllm_options* o);
SessionOptions session_options(const ikllm_options* o, int32_t lib_default_threads);
SamplerOptions sampler_options(const ikllm_options* o);
// The grammar the sampler options ask for ('grammar' or 'json_schema'), or null; throws
// Error(grammar_error) with the position of a problem (api_grammar.cpp).
std::unique_ptr<grammar::TokenMatcher> sampler_grammar(const ikllm_options* o, const ikllm_model* model);
// Validates the chat option 'now' (api_chat.cpp); throws invalid_argument.
void check_chat_now(const std::string& s);

}  // namespace ikllm::api
