// The worker that owns every ikllm handle: it loads models and generates replies on its own thread,
// so the UI thread never waits on the library. The UI posts requests and reads a snapshot of the
// shared state each frame. Stop / cancel go through the library's cancel flag, which the load and
// every decode watch, plus a check between generated tokens.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conversation.h"
#include "model_card.h"

struct ikllm_lib;
struct ikllm_model;
struct ikllm_session;

namespace chat {

using OptionValues = std::map<std::string, std::string>;

struct GenerateRequest {
    std::string conversation_id;
    std::string system_prompt;
    std::vector<Message> messages;  // the conversation up to (not including) the reply to write
    OptionValues session_options, sampler_options;
    int max_tokens = 512;  // <= 0: until end of generation or a full context
    std::string template_override;  // Jinja text used instead of the model's template ("" = the model's)
};

enum class Phase { Idle, Loading, Generating };

// One reply as it streams, and how it went.
struct ReplyState {
    std::string conversation_id;
    std::string content, reasoning;
    bool active = false;    // a request is queued or running
    bool finished = false;  // set once, when the reply is final
    bool stopped = false;   // Stop / cancel cut it
    std::string error;      // the request failed (nothing or part was generated)
    std::string notice;     // finished normally but worth saying (context full, token limit)
    uint64_t serial = 0;    // which request this is (the UI applies each finished reply once)
    int prompt_tokens = 0, reused_tokens = 0, generated_tokens = 0;
    double prompt_seconds = 0, generate_seconds = 0;
};

struct EngineSnapshot {
    Phase phase = Phase::Idle;
    float load_progress = 0;
    std::string loading_path;
    std::shared_ptr<const ModelCard> card;  // null when no model is loaded
    std::string load_error;                 // last load failure ("" after a successful load)
    uint64_t load_serial = 0;               // counts finished loads (success or failure)
    bool template_fallback = false;         // the model has no chat template: the default is used
    ReplyState reply;
    int ctx_used = 0, ctx_total = 0;
    uint64_t kv_bytes = 0;  // KV cache of the session (bytes per token x n_ctx)
    std::string kv_type = "f16";
};

class Engine {
public:
    Engine();
    ~Engine();  // cancels whatever runs and joins the worker
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    bool ok() const { return lib_ != nullptr; }
    const std::string& init_error() const { return init_error_; }

    void load(const std::string& path, const OptionValues& model_options);
    uint64_t generate(const GenerateRequest& req);  // the serial the reply will carry
    void stop();  // cancels a load or a generation in progress (and queued ones)
    EngineSnapshot snapshot() const;

    // The ChatML template used when a model has none.
    static const char* fallback_template();

private:
    struct Job {
        enum Kind { Load, Generate } kind;
        std::string path;
        OptionValues model_options;
        GenerateRequest request;
        uint64_t serial = 0;
    };
    void run();
    void do_load(const Job& job);
    void do_generate(const Job& job);
    bool ensure_session(const OptionValues& session_options, std::string* error);
    void finish_reply(const std::string& error, bool stopped, const std::string& notice = "");
    void free_model();

    ikllm_lib* lib_ = nullptr;
    std::string init_error_;
    // Worker-only handles.
    ikllm_model* model_ = nullptr;
    ikllm_session* session_ = nullptr;
    OptionValues session_options_;
    std::string template_;
    // Token history of sequence 0: the tokens the KV cache holds, with checkpoints (text length,
    // token count) where a known text ends exactly on a token boundary (after each prompt and each
    // reply). A new prompt that extends a checkpoint's text keeps those exact tokens (generated
    // tokens rarely re-tokenize identically) and tokenizes only the rest.
    struct Checkpoint {
        size_t text_len;
        size_t n_tokens;
    };
    std::string history_text_;
    std::vector<int32_t> history_tokens_;
    std::vector<Checkpoint> checkpoints_;
    bool prompt_tokens(const std::string& prompt, std::vector<int32_t>& out, std::string* error);
    void clear_history();

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Job> queue_;
    bool quit_ = false;
    uint64_t cancel_upto_ = 0;  // jobs with a serial up to this one are cancelled
    uint64_t next_serial_ = 1;
    EngineSnapshot state_;  // guarded by mu_
    // Watched by the library during loads and decodes (any thread may set it).
    volatile int32_t cancel_ = 0;
    std::thread worker_;
};

}  // namespace chat
