// One generation request as the scheduler sees it, and the channel its tokens travel back on.
// The HTTP thread fills the inputs and submits it; the scheduler thread pushes token events and
// finishes it; the HTTP thread waits for events, turns them into text and may cancel it.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ikllm.h"

namespace server {

struct TopLogprob {
    int32_t token;
    float logprob;
};

struct TokenEvent {
    int32_t token;
    float logprob = 0;  // ln p(token) under the model's distribution (raw logits)
    std::vector<TopLogprob> top;
};

enum class Finish { None, Stop, Length, Cancelled, Error };

struct SamplerDeleter {
    void operator()(ikllm_sampler* s) const { ikllm_sampler_free(s); }
};
using SamplerPtr = std::unique_ptr<ikllm_sampler, SamplerDeleter>;

class Job {
public:
    // ---- inputs, set before submit and read-only afterwards
    std::vector<int32_t> prompt;
    int64_t max_tokens = 0;  // already capped to the slot's room
    bool want_logprobs = false;
    bool reuse_prefix = true;  // keep the slot's cached prefix of the prompt
    int top_logprobs = 0;
    SamplerPtr sampler;
    std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();

    // Asks the scheduler to stop (client gone, stop string found); it frees the slot at its next step.
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }
    // The response is complete (a stop string was found): like cancel, but not counted as one.
    void stop_early() {
        early_stop_.store(true);
        cancelled_.store(true);
    }
    bool stopped_early() const { return early_stop_.load(); }

    // ---- scheduler side
    void push(TokenEvent ev) {
        {
            std::lock_guard<std::mutex> lk(mu_);
            events_.push_back(std::move(ev));
        }
        cv_.notify_all();
    }
    void set_cached(int n) {
        std::lock_guard<std::mutex> lk(mu_);
        n_cached_ = n;
    }
    void finish(Finish f, std::string error = "") {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (finish_ != Finish::None) return;
            finish_ = f;
            error_ = std::move(error);
        }
        cv_.notify_all();
    }

    // ---- HTTP side: waits up to `timeout` for events; moves them out. Returns the finish state
    // (Finish::None while running). error receives the message of Finish::Error.
    Finish wait(std::vector<TokenEvent>& out, std::chrono::milliseconds timeout, std::string* error = nullptr) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait_for(lk, timeout, [&] { return !events_.empty() || finish_ != Finish::None; });
        for (auto& e : events_) out.push_back(std::move(e));
        events_.clear();
        if (error) *error = error_;
        return finish_;
    }
    int n_cached() {
        std::lock_guard<std::mutex> lk(mu_);
        return n_cached_;
    }

private:
    std::atomic<bool> cancelled_{false}, early_stop_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<TokenEvent> events_;
    Finish finish_ = Finish::None;
    std::string error_;
    int n_cached_ = 0;
};

}  // namespace server
