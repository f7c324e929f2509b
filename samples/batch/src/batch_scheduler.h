// Continuous batching: up to `parallel` generation jobs share one session. Every step decodes
// one token of each generating job together with prompt tokens of newly started jobs, and a job
// that ends frees its slot for the next one at once. Each prompt starts from a shared prefix
// (computed once, in its own sequence, and copied into the slot's sequence).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ikllm.h"

namespace batch {

struct SchedulerConfig {
    int parallel = 4;        // generation slots (sequences decoded together)
    int n_ctx = 0;           // KV cells of the session
    int batch_tokens = 512;  // most tokens per decode call (generation + prompt pieces)
    int n_threads = 0;       // 0 = library default
    bool batch_invariant = true;  // outputs bit-identical whatever --parallel (session option)
    std::map<std::string, std::string> sampling;  // ikllm sampler options by name (text values)
    std::string grammar;                          // GBNF for constrained jobs
};

struct GenRequest {
    uint64_t key = 0;                 // the caller's handle, returned in the result
    int prefix = 0;                   // index of the shared prefix the prompt continues
    std::vector<ikllm_token> prompt;  // tokens after the prefix (at least one)
    int max_tokens = 256;
    uint64_t seed = 0;                // sampler seed of this job alone
    bool constrained = false;         // follow the grammar
};

struct GenResult {
    uint64_t key = 0;
    std::string text;
    int tokens_in = 0;   // prefix + prompt
    int tokens_out = 0;
    bool grammar_complete = false;  // constrained jobs: the output matched the whole grammar
    std::string error;
};

class BatchScheduler {
  public:
    // Creates the session and decodes every prefix (in sequences 0..P-1, one at a time, so
    // their cache entries never depend on the batch). Throws std::runtime_error.
    BatchScheduler(const ikllm_model* model, const SchedulerConfig& config,
                   const std::vector<std::vector<ikllm_token>>& prefixes);
    ~BatchScheduler();
    BatchScheduler(const BatchScheduler&) = delete;
    BatchScheduler& operator=(const BatchScheduler&) = delete;

    bool has_free_slot() const;
    bool busy() const;  // some job is running
    // Puts a job in a free slot. Jobs that fail to start come back from the next step().
    void start(GenRequest request);
    // One decode call; appends the jobs that ended to `finished`.
    void step(std::vector<GenResult>& finished);

    uint64_t prompt_tokens() const { return prompt_tokens_; }  // decoded so far (prefixes excluded)
    uint64_t generated_tokens() const { return generated_tokens_; }

  private:
    struct Slot {
        bool active = false;
        int seq = 0;
        GenRequest req;
        size_t fed = 0;          // prompt tokens decoded
        bool generating = false;
        ikllm_token next = -1;   // sampled token to decode next
        ikllm_sampler* sampler = nullptr;
        ikllm_detok* detok = nullptr;
        GenResult result;
    };
    ikllm_sampler* make_sampler(const GenRequest& req, std::string* error) const;
    void finish(Slot& slot, std::vector<GenResult>& finished, const std::string& error = "");
    void take_token(Slot& slot, int32_t batch_index, std::vector<GenResult>& finished);

    const ikllm_model* model_;
    SchedulerConfig config_;
    ikllm_session* session_ = nullptr;
    std::vector<int> prefix_len_;
    std::vector<Slot> slots_;
    std::vector<GenResult> early_;  // jobs that failed in start()
    size_t next_prompt_slot_ = 0;   // round-robin start for prompt pieces
    uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
};

}  // namespace batch
