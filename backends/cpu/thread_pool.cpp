#include "thread_pool.h"

#include <algorithm>
#include <chrono>

namespace ikllm::cpu {

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    workers_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_.store(true, std::memory_order_release);
        ++generation_;
        published_.store(generation_, std::memory_order_release);
    }
    cv_start_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::work(int thread, uint32_t gen) {
    // Tasks done here are counted locally and published once, when no task is left: one write
    // to the shared done_ line per thread and call instead of one per task (with short tasks,
    // token generation's row chunks, that line moving between the cores was most of the cost).
    int64_t mine = 0, n = 0;
    const std::function<void(int64_t, int)>* fn = nullptr;
    for (;;) {
        uint64_t c = claim_.load(std::memory_order_acquire);
        for (;;) {
            if ((uint32_t)(c >> 32) != gen || (uint32_t)c == 0) {  // another generation / none left
                if (mine && done_.fetch_add(mine, std::memory_order_acq_rel) + mine == n) {
                    std::lock_guard<std::mutex> lock(mu_);
                    cv_done_.notify_one();
                }
                return;
            }
            if (claim_.compare_exchange_weak(c, c - 1, std::memory_order_acq_rel, std::memory_order_acquire)) break;
        }
        // The claim made this generation's fn_ and n_tasks_ visible; they stay valid until its
        // last task is counted done, which cannot happen before this thread publishes its count.
        if (!fn) fn = fn_, n = n_tasks_;
        const int64_t task = (int64_t)(uint32_t)c - 1;
        if (!failed_.load(std::memory_order_relaxed)) {
            try {
                (*fn)(task, thread);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mu_);
                if (!error_) error_ = std::current_exception();
                failed_.store(true, std::memory_order_relaxed);  // the remaining tasks are skipped
            }
        }
        ++mine;
    }
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        // Spin a little: decode steps issue many short parallel_for calls back to back. The
        // generation is read from published_ itself (no lock on the way to the tasks).
        uint64_t now = seen;
        for (int spin = 0; spin < 20000; ++spin) {
            now = published_.load(std::memory_order_acquire);
            if (now != seen) break;
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
        if (now == seen) {
            std::unique_lock<std::mutex> lock(mu_);
            cv_start_.wait(lock, [&] { return generation_ != seen; });
            now = generation_;
        }
        seen = now;
        if (stopping_.load(std::memory_order_acquire)) return;
        work(index, (uint32_t)seen);
    }
}

void ThreadPool::parallel_for(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
        return;
    }
    constexpr int64_t kMaxTasks = 0x7fffffff;  // the claim word holds 32 bits of tasks
    if (n_tasks > kMaxTasks) {
        for (int64_t base = 0; base < n_tasks; base += kMaxTasks)
            parallel_for(std::min(kMaxTasks, n_tasks - base), [&](int64_t t, int th) { fn(base + t, th); });
        return;
    }
    // fn_, n_tasks_ and the counters reach the workers through the release store of claim_.
    fn_ = &fn;
    n_tasks_ = n_tasks;
    done_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    uint32_t gen;
    {
        std::lock_guard<std::mutex> lock(mu_);  // generation_ is what sleeping workers wait on
        ++generation_;
        gen = (uint32_t)generation_;
        claim_.store(((uint64_t)gen << 32) | (uint64_t)n_tasks, std::memory_order_release);
        published_.store(generation_, std::memory_order_release);
    }
    cv_start_.notify_all();
    work(0, gen);
    // Every task has been handed out; wait for the ones still running (spin first: they finish
    // close together).
    for (int spin = 0; spin < 200000 && done_.load(std::memory_order_acquire) != n_tasks; ++spin) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
    if (done_.load(std::memory_order_acquire) != n_tasks) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_done_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == n_tasks; });
    }
    if (!failed_.load(std::memory_order_relaxed)) return;
    std::exception_ptr err;
    {
        std::lock_guard<std::mutex> lock(mu_);
        err = error_;
        error_ = nullptr;
    }
    if (err) std::rethrow_exception(err);
}

}  // namespace ikllm::cpu
