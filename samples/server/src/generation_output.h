// Turns one job's token events into OpenAI output: chat.completion(.chunk) or text_completion
// objects, with stop strings, reasoning / tool-call parsing (chat), logprobs and usage. The same
// path builds streamed chunks and the non-streamed body, so both carry the same text.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app.h"
#include "job.h"
#include "requests.h"
#include "text_stream.h"

namespace server {

using json = nlohmann::json;

class GenerationOutput {
public:
    GenerationOutput(const App& app, const GenRequest& req, const std::string& prompt_text, int n_prompt);
    ~GenerationOutput();
    GenerationOutput(const GenerationOutput&) = delete;
    GenerationOutput& operator=(const GenerationOutput&) = delete;

    // Streaming: the chunks that open the stream (the assistant role; echoed prompt).
    std::vector<json> opening_chunks();
    // New tokens; appends stream chunks to *chunks when streaming (chunks may be NULL otherwise).
    void add(const std::vector<TokenEvent>& events, std::vector<json>* chunks);
    // A stop string was reached: the job should be stopped, the output is complete.
    bool stop_string_hit() const { return text_.stopped(); }
    // Ends the output; appends the closing stream chunks (finish_reason, usage) to *chunks.
    void finish(Finish how, int n_cached, std::vector<json>* chunks);
    // The non-streamed response body (after finish).
    json response() const;

private:
    json chunk(json choice) const;
    void take_text(const std::string& text, json* delta);
    json logprob_entry(const TokenEvent& ev) const;
    void add_completion_logprobs(const TokenEvent& ev);

    const App& app_;
    const GenRequest& req_;
    std::string id_;
    long long created_;
    int n_prompt_;
    int n_cached_ = 0;
    int n_completion_ = 0;
    TextStream text_;
    ikllm_chat_parser* parser_ = nullptr;  // chat only
    std::string finish_reason_;
    // accumulated for the non-streamed body
    std::string completion_text_;
    json message_ = json::object();
    json logprobs_content_ = json::array();   // chat
    json completion_logprobs_;                // completions
    size_t text_offset_ = 0;
};

}  // namespace server
