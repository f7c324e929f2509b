#include "sampler_factory.h"

#include <random>
#include <string>

#include "api_error.h"

namespace server {

namespace {
struct Options {
    ikllm_options* o = nullptr;
    Options() { ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o); }
    ~Options() { ikllm_options_free(o); }
};
}  // namespace

SamplerPtr make_sampler(const ikllm_model* model, const SamplingParams& p) {
    Options opts;
    if (!opts.o) throw ApiError(500, "server_error", "cannot create sampler options");
    auto setf = [&](const char* key, const std::optional<double>& v, const char* param) {
        if (v && ikllm_options_set_float(opts.o, key, *v) != IKLLM_OK)
            throw bad_request(std::string("'") + param + "': " + ikllm_last_error(), param, "invalid_value");
    };
    auto seti = [&](const char* key, const std::optional<int64_t>& v, const char* param) {
        if (v && ikllm_options_set_int(opts.o, key, *v) != IKLLM_OK)
            throw bad_request(std::string("'") + param + "': " + ikllm_last_error(), param, "invalid_value");
    };
    setf("temperature", p.temperature, "temperature");
    setf("top_p", p.top_p, "top_p");
    setf("min_p", p.min_p, "min_p");
    setf("typical_p", p.typical_p, "typical_p");
    setf("presence_penalty", p.presence_penalty, "presence_penalty");
    setf("frequency_penalty", p.frequency_penalty, "frequency_penalty");
    setf("repeat_penalty", p.repeat_penalty, "repeat_penalty");
    seti("top_k", p.top_k, "top_k");
    seti("penalty_last_n", p.penalty_last_n, "repeat_last_n");
    if (p.ignore_eos) seti("ignore_eos", 1, "ignore_eos");
    // The engine's seed range is non-negative; negative seeds (llama-server's -1) mean "random".
    int64_t seed = p.seed.value_or(-1);
    if (seed < 0) seed = (int64_t)(std::random_device{}() & 0x7fffffff);
    seti("seed", seed, "seed");
    if (!p.grammar.empty()) {
        if (ikllm_options_set_string(opts.o, "grammar", p.grammar.c_str()) != IKLLM_OK)
            throw bad_request(std::string("'grammar': ") + ikllm_last_error(), "grammar", "invalid_value");
        if (!p.grammar_root.empty()) ikllm_options_set_string(opts.o, "grammar_root", p.grammar_root.c_str());
    }
    if (!p.json_schema.empty()) ikllm_options_set_string(opts.o, "json_schema", p.json_schema.c_str());
    ikllm_sampler* s = nullptr;
    const ikllm_status st = ikllm_sampler_create(model, opts.o, &s);
    if (st == IKLLM_ERR_GRAMMAR)
        throw bad_request(ikllm_last_error(), p.json_schema.empty() ? "grammar" : "response_format", "invalid_schema");
    if (st != IKLLM_OK) throw bad_request(std::string("sampler: ") + ikllm_last_error());
    return SamplerPtr(s);
}

}  // namespace server
