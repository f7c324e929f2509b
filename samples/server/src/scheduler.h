// The scheduler thread: owns the one generation session and its N slots (sequence ids) and runs
// continuous batching. Each step makes ONE ikllm_session_decode holding the next token of every
// generating slot plus chunks of prompts that are still being read, then samples every slot that
// got logits. A new request goes to the idle slot whose cached tokens share the longest prefix
// with its prompt; only the differing tail is removed from the KV cache.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ikllm.h"
#include "job.h"
#include "metrics.h"

namespace server {

class Scheduler {
public:
    struct Config {
        int n_slots = 1;
        int n_ctx_slot = 0;   // KV cells each slot may use (n_ctx / n_slots)
        int n_batch = 512;    // tokens per decode call
        size_t max_queue = 256;
    };
    Scheduler(const ikllm_model* model, ikllm_session* session, Config cfg, Metrics& metrics);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    enum class Submit { Ok, QueueFull, Stopping };
    Submit submit(std::shared_ptr<Job> job);
    // Refuses new jobs from now on (graceful shutdown); running ones continue.
    void stop_accepting();
    // True when no job runs or waits.
    bool idle();
    // Cancels every running and waiting job.
    void cancel_all();
    const Config& config() const { return cfg_; }

private:
    struct Slot {
        int32_t seq = 0;
        std::vector<int32_t> history;  // tokens held by the KV cache for seq, at positions 0..n-1
        std::shared_ptr<Job> job;
        size_t prompt_done = 0;        // prompt tokens already in the cache
        int32_t pending = -1;          // sampled token to decode next step (-1: still reading the prompt)
        int64_t generated = 0;
        uint64_t last_used = 0;
        int batch_index = -1;          // batch token whose logits this slot samples this step
    };

    void run();
    void assign_waiting_jobs();
    void start_job(Slot& slot, std::shared_ptr<Job> job);
    void release(Slot& slot, Finish how, const std::string& error = "");
    void step();
    void sample_slot(Slot& slot);
    void forget_idle_caches();

    const ikllm_model* model_;
    ikllm_session* session_;
    Config cfg_;
    Metrics& metrics_;
    int32_t n_vocab_;
    std::vector<Slot> slots_;
    uint64_t clock_ = 0;

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool accepting_ = true, stop_ = false, cancel_all_ = false;
    int active_ = 0;  // slots holding a job (guarded by mu_ for idle())
    std::thread thread_;
};

}  // namespace server
