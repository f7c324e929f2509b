// Persistent worker threads for one session. parallel_for hands out task indices through an
// atomic claim word (generation + tasks left); the calling thread works too and returns as soon
// as every task is done, without waiting for workers that never got one (a descheduled worker
// on an oversubscribed machine costs nothing). Workers spin briefly, then sleep.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ikllm::cpu {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int n_threads() const { return n_threads_; }
    // Calls fn(task, thread) for task in [0, n_tasks); returns when all are done.
    // Exceptions thrown by fn are rethrown here (first one wins).
    void parallel_for(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

private:
    void worker(int index);
    void work(int thread, uint32_t gen);

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_start_;
    std::condition_variable cv_done_;
    uint64_t generation_ = 0;
    std::atomic<bool> stopping_{false};
    const std::function<void(int64_t, int)>* fn_ = nullptr;
    int64_t n_tasks_ = 0;
    // High 32 bits: generation of the current parallel_for; low 32: tasks not handed out yet
    // (handed out from the top: task = left - 1). A claim succeeds only for its generation.
    std::atomic<uint64_t> claim_{0};
    std::atomic<int64_t> done_{0};  // tasks of the current generation finished
    std::atomic<bool> failed_{false};
    std::atomic<uint64_t> published_{0};
    std::exception_ptr error_;
};

}  // namespace ikllm::cpu
