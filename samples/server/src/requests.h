// Typed requests parsed and validated from the JSON bodies of the OpenAI endpoints.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace server {

using json = nlohmann::json;

// Sampler settings; unset fields keep the engine's defaults.
struct SamplingParams {
    std::optional<double> temperature, top_p, min_p, typical_p, presence_penalty, frequency_penalty, repeat_penalty;
    std::optional<int64_t> top_k, seed, penalty_last_n;
    std::string json_schema;  // response_format json_object / json_schema
    std::string grammar;      // "grammar" (GBNF), a llama-server extension
    std::string grammar_root; // start rule of grammar ("" = root)
    bool ignore_eos = false;  // llama-server's field: never sample an end-of-generation token
};

enum class ToolChoice { Auto, None, Required, Named };

struct GenRequest {
    bool chat = false;
    std::string model;
    bool stream = false, include_usage = false;
    int64_t max_tokens = -1;  // -1: until the slot's context is full
    std::vector<std::string> stop;
    bool logprobs = false;
    int top_logprobs = 0;
    bool cache_prompt = true;  // llama-server's field: false re-reads the whole prompt
    SamplingParams sampling;
    // /v1/chat/completions
    json messages = json::array();  // normalised for chat templates (content as text, arguments as objects)
    json tools;                     // null or the array of tool schemas
    ToolChoice tool_choice = ToolChoice::Auto;
    std::string tool_choice_name;
    json template_kwargs = json::object();  // chat_template_kwargs (e.g. enable_thinking)
    // /v1/completions
    std::string prompt_text;
    std::vector<int32_t> prompt_tokens;  // when the prompt was given as token ids
    bool echo = false;
};

GenRequest parse_chat_request(const json& body);
GenRequest parse_completion_request(const json& body);

struct EmbeddingRequest {
    std::string model;
    std::vector<std::string> texts;                 // string inputs, or
    std::vector<std::vector<int32_t>> token_inputs; // token-id inputs
    bool base64 = false;                            // encoding_format "base64"
};
EmbeddingRequest parse_embedding_request(const json& body);

}  // namespace server
