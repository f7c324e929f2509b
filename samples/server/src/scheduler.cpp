#include "scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "logprobs.h"

namespace server {

namespace {
size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}
}  // namespace

Scheduler::Scheduler(const ikllm_model* model, ikllm_session* session, Config cfg, Metrics& metrics)
    : model_(model), session_(session), cfg_(cfg), metrics_(metrics), n_vocab_(ikllm_model_n_vocab(model)) {
    slots_.resize(cfg_.n_slots);
    for (int i = 0; i < cfg_.n_slots; ++i) slots_[i].seq = i;
    metrics_.slots_total = cfg_.n_slots;
    thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

Scheduler::Submit Scheduler::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (!accepting_) return Submit::Stopping;
        if (queue_.size() >= cfg_.max_queue) return Submit::QueueFull;
        queue_.push_back(std::move(job));
        metrics_.queue_depth = (int64_t)queue_.size();
    }
    cv_.notify_all();
    return Submit::Ok;
}

void Scheduler::stop_accepting() {
    std::lock_guard<std::mutex> lk(mu_);
    accepting_ = false;
}

bool Scheduler::idle() {
    std::lock_guard<std::mutex> lk(mu_);
    return queue_.empty() && active_ == 0;
}

void Scheduler::cancel_all() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        cancel_all_ = true;
    }
    cv_.notify_all();
}

void Scheduler::run() {
    for (;;) {
        {
            std::unique_lock<std::mutex> lk(mu_);
            // Sleep only when nothing runs; a running slot keeps the loop stepping.
            cv_.wait(lk, [&] { return stop_ || cancel_all_ || active_ > 0 || !queue_.empty(); });
            if (stop_ || cancel_all_) {
                for (auto& j : queue_) j->finish(Finish::Cancelled);
                queue_.clear();
                metrics_.queue_depth = 0;
            }
            if (cancel_all_)
                for (auto& s : slots_)
                    if (s.job) s.job->cancel();
            cancel_all_ = false;
        }
        // Free the slots of requests whose clients left or hit a stop string.
        for (auto& s : slots_)
            if (s.job && s.job->cancelled()) release(s, s.job->stopped_early() ? Finish::Stop : Finish::Cancelled);
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (stop_) return;
        }
        assign_waiting_jobs();
        step();
    }
}

void Scheduler::assign_waiting_jobs() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::lock_guard<std::mutex> lk(mu_);
            // Drop waiting jobs that were cancelled, wherever they are in the queue.
            for (auto it = queue_.begin(); it != queue_.end();) {
                if ((*it)->cancelled()) {
                    (*it)->finish(Finish::Cancelled);
                    metrics_.requests_cancelled++;
                    it = queue_.erase(it);
                } else {
                    ++it;
                }
            }
            metrics_.queue_depth = (int64_t)queue_.size();
            if (queue_.empty() || active_ == cfg_.n_slots) return;
            job = queue_.front();
            queue_.pop_front();
            metrics_.queue_depth = (int64_t)queue_.size();
            ++active_;
        }
        // The idle slot whose cache shares the longest prefix with the prompt; ties: least recently used.
        Slot* best = nullptr;
        size_t best_len = 0;
        for (auto& s : slots_) {
            if (s.job) continue;
            const size_t n = common_prefix(s.history, job->prompt);
            if (!best || n > best_len || (n == best_len && s.last_used < best->last_used)) {
                best = &s;
                best_len = n;
            }
        }
        start_job(*best, std::move(job));
    }
}

void Scheduler::start_job(Slot& slot, std::shared_ptr<Job> job) {
    metrics_.slots_busy++;
    slot.job = std::move(job);
    slot.last_used = ++clock_;
    slot.pending = -1;
    slot.generated = 0;
    Job& j = *slot.job;
    // Keep the common prefix, but always decode at least the last prompt token for its logits.
    size_t keep = j.reuse_prefix ? std::min(common_prefix(slot.history, j.prompt), j.prompt.size() - 1) : 0;
    if (ikllm_session_seq_remove(session_, slot.seq, (int32_t)keep, -1) != IKLLM_OK) {
        ikllm_session_seq_remove(session_, slot.seq, 0, -1);
        keep = 0;
    }
    slot.history.resize(keep);
    slot.prompt_done = keep;
    j.set_cached((int)keep);
    metrics_.prompt_tokens += j.prompt.size();
    metrics_.prompt_tokens_cached += keep;
    // The prompt counts for repetition penalties but not for the grammar.
    ikllm_sampler_accept_v2(j.sampler.get(), j.prompt.data(), j.prompt.size(), IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR);
    if (j.max_tokens <= 0) release(slot, Finish::Length);
}

void Scheduler::release(Slot& slot, Finish how, const std::string& error) {
    if (!slot.job) return;
    if (how == Finish::Cancelled) metrics_.requests_cancelled++;
    slot.job->finish(how, error);
    slot.job.reset();
    slot.pending = -1;
    slot.batch_index = -1;
    metrics_.slots_busy--;
    std::lock_guard<std::mutex> lk(mu_);
    --active_;
}

// Frees the KV cells that idle slots keep for prefix reuse (when the cache runs out of room).
void Scheduler::forget_idle_caches() {
    for (auto& s : slots_) {
        if (s.job || s.history.empty()) continue;
        ikllm_session_seq_remove(session_, s.seq, 0, -1);
        s.history.clear();
    }
}

void Scheduler::step() {
    std::vector<int32_t> tokens, positions, seqs, want;
    std::vector<std::pair<Slot*, size_t>> prompt_chunks;  // slot, tokens taken this step
    auto add = [&](int32_t tok, int32_t pos, int32_t seq, bool logits) {
        tokens.push_back(tok);
        positions.push_back(pos);
        seqs.push_back(seq);
        want.push_back(logits ? 1 : 0);
    };
    // Generating slots first: one token each keeps every stream moving.
    size_t n_gen = 0;
    for (auto& s : slots_) {
        s.batch_index = -1;
        if (!s.job || s.pending < 0) continue;
        s.batch_index = (int)tokens.size();
        add(s.pending, (int32_t)s.history.size(), s.seq, true);
        ++n_gen;
    }
    // Then prompt chunks in arrival order, as far as the batch has room.
    std::vector<Slot*> reading;
    for (auto& s : slots_)
        if (s.job && s.pending < 0) reading.push_back(&s);
    std::sort(reading.begin(), reading.end(), [](Slot* a, Slot* b) { return a->last_used < b->last_used; });
    size_t room = (size_t)std::max<int64_t>((int64_t)cfg_.n_batch - (int64_t)n_gen, 0);
    for (Slot* s : reading) {
        if (room == 0) break;
        const auto& p = s->job->prompt;
        const size_t take = std::min(room, p.size() - s->prompt_done);
        for (size_t k = 0; k < take; ++k) {
            const size_t i = s->prompt_done + k;
            const bool last = i + 1 == p.size();
            if (last) s->batch_index = (int)tokens.size();
            add(p[i], (int32_t)(s->history.size() + k), s->seq, last);
        }
        prompt_chunks.push_back({s, take});
        room -= take;
    }
    if (tokens.empty()) return;

    const auto t0 = std::chrono::steady_clock::now();
    ikllm_status st = ikllm_session_decode(session_, tokens.data(), positions.data(), seqs.data(), want.data(),
                                           (int32_t)tokens.size(), 0);
    if (st == IKLLM_CONTEXT_FULL) {
        forget_idle_caches();
        st = ikllm_session_decode(session_, tokens.data(), positions.data(), seqs.data(), want.data(),
                                  (int32_t)tokens.size(), 0);
    }
    if (st != IKLLM_OK) {
        // Nothing was decoded: every job in this batch ends.
        const std::string msg = std::string("decode failed: ") + ikllm_last_error() + " [" + ikllm_status_name(st) + "]";
        std::fprintf(stderr, "ikllm-server: %s\n", msg.c_str());
        // The cache is unchanged, so the slots' histories stay valid.
        for (auto& [s, take] : prompt_chunks) release(*s, Finish::Error, msg);
        for (auto& s : slots_)
            if (s.job && s.pending >= 0) release(s, st == IKLLM_CONTEXT_FULL ? Finish::Length : Finish::Error, msg);
        return;
    }
    const uint64_t us =
        (uint64_t)std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    const size_t n_prompt = tokens.size() - n_gen;
    metrics_.prompt_us += us * n_prompt / tokens.size();
    metrics_.decode_us += us * n_gen / tokens.size();
    metrics_.decode_steps++;

    for (auto& s : slots_)
        if (s.job && s.pending >= 0) s.history.push_back(s.pending);
    for (auto& [s, take] : prompt_chunks) {
        const auto& p = s->job->prompt;
        s->history.insert(s->history.end(), p.begin() + (long)s->prompt_done, p.begin() + (long)(s->prompt_done + take));
        s->prompt_done += take;
    }
    for (auto& s : slots_)
        if (s.job && s.batch_index >= 0) sample_slot(s);
}

void Scheduler::sample_slot(Slot& s) {
    Job& j = *s.job;
    TokenEvent ev;
    const ikllm_status st = ikllm_sampler_sample(j.sampler.get(), session_, s.batch_index, &ev.token);
    if (st != IKLLM_OK) {
        release(s, Finish::Error, std::string("sampling failed: ") + ikllm_last_error());
        return;
    }
    if (ikllm_token_is_eog(model_, ev.token)) {
        release(s, Finish::Stop);
        return;
    }
    if (j.want_logprobs) {
        const float* logits = nullptr;
        if (ikllm_session_logits(session_, s.batch_index, &logits, nullptr) == IKLLM_OK)
            compute_logprobs(logits, n_vocab_, j.top_logprobs, ev);
    }
    const int32_t tok = ev.token;
    j.push(std::move(ev));
    metrics_.generated_tokens++;
    ++s.generated;
    int32_t gs = IKLLM_GRAMMAR_NONE;
    ikllm_sampler_grammar_state(j.sampler.get(), &gs);
    if (gs == IKLLM_GRAMMAR_DONE) {
        release(s, Finish::Stop);  // only end of generation could follow
    } else if (s.generated >= j.max_tokens || (int64_t)s.history.size() + 1 >= cfg_.n_ctx_slot) {
        release(s, Finish::Length);
    } else {
        s.pending = tok;
    }
}

}  // namespace server
