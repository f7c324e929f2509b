#include "thread_pool.h"

#include <chrono>

namespace ikllm::cpu {

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    workers_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        ++generation_;
        published_.store(generation_, std::memory_order_release);
    }
    cv_start_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::work(int thread) {
    for (;;) {
        const int64_t task = next_.fetch_add(1, std::memory_order_relaxed);
        if (task >= n_tasks_) break;
        try {
            (*fn_)(task, thread);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            if (!error_) error_ = std::current_exception();
            next_.store(n_tasks_, std::memory_order_relaxed);  // stop handing out work
        }
    }
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        // Spin a little: decode steps issue many short parallel_for calls back to back.
        bool got = false;
        for (int spin = 0; spin < 20000; ++spin) {
            if (published_.load(std::memory_order_acquire) != seen) { got = true; break; }
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
        if (!got) {
            std::unique_lock<std::mutex> lock(mu_);
            cv_start_.wait(lock, [&] { return generation_ != seen; });
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            seen = generation_;
            if (stop_) return;
        }
        work(index);
        if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(mu_);
            cv_done_.notify_one();
        }
    }
}

void ThreadPool::parallel_for(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        fn_ = &fn;
        n_tasks_ = n_tasks;
        next_.store(0, std::memory_order_relaxed);
        active_.store(n_threads_ - 1, std::memory_order_relaxed);
        error_ = nullptr;
        ++generation_;
        published_.store(generation_, std::memory_order_release);
    }
    cv_start_.notify_all();
    work(0);
    // Wait for the workers (spin first, they finish close together).
    for (int spin = 0; spin < 200000 && active_.load(std::memory_order_acquire) != 0; ++spin) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
    if (active_.load(std::memory_order_acquire) != 0) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_done_.wait(lock, [&] { return active_.load(std::memory_order_acquire) == 0; });
    }
    std::exception_ptr err;
    {
        std::lock_guard<std::mutex> lock(mu_);
        err = error_;
        error_ = nullptr;
        fn_ = nullptr;
    }
    if (err) std::rethrow_exception(err);
}

}  // namespace ikllm::cpu
