// The CPU backend's thread pool: every task of every call runs exactly once, calls follow each
// other back to back (workers spinning) or after a pause (workers asleep), an exception in a task
// reaches the caller and leaves the pool usable, and a pool is destroyed cleanly in any state.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "thread_pool.h"

using ikllm::cpu::ThreadPool;

namespace {
// Runs one call of n tasks and checks that each ran once, on a valid thread index.
void expect_each_task_once(ThreadPool& pool, int64_t n) {
    std::vector<std::atomic<int>> hits((size_t)n);
    std::atomic<int> bad_thread{0};
    pool.parallel_for(n, [&](int64_t t, int thread) {
        if (thread < 0 || thread >= pool.n_threads()) bad_thread.fetch_add(1);
        hits[(size_t)t].fetch_add(1, std::memory_order_relaxed);
    });
    for (int64_t t = 0; t < n; ++t) ASSERT_EQ(hits[(size_t)t].load(), 1) << "task " << t << " of " << n;
    EXPECT_EQ(bad_thread.load(), 0);
}
}  // namespace

TEST(ThreadPool, EveryTaskOnceOverManyBackToBackCalls) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        // Short calls of varied sizes one after another: workers still finishing the previous
        // call must not take (or lose) tasks of the next.
        for (int rep = 0; rep < 3000; ++rep) expect_each_task_once(pool, 1 + (rep * 7) % 67);
    }
}

TEST(ThreadPool, ResultsOfAllTasksAreVisibleWhenTheCallReturns) {
    ThreadPool pool(4);
    std::vector<int64_t> out(4096);
    for (int rep = 0; rep < 200; ++rep) {
        // Plain (non-atomic) writes by the tasks, read by the caller after the call.
        pool.parallel_for((int64_t)out.size(), [&](int64_t t, int) { out[(size_t)t] = t * rep; });
        for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], (int64_t)i * rep);
    }
}

TEST(ThreadPool, WorkersWakeFromSleepForTheNextCall) {
    ThreadPool pool(3);
    for (int rep = 0; rep < 4; ++rep) {
        // Longer than the workers' spin: they go to sleep and must be woken.
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        std::atomic<int> other_threads{0};
        std::atomic<int64_t> sum{0};
        pool.parallel_for(64, [&](int64_t t, int thread) {
            if (thread != 0) other_threads.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            sum.fetch_add(t);
        });
        EXPECT_EQ(sum.load(), 64 * 63 / 2);
        // 64 tasks of 200 us: a woken worker takes some (the caller alone would need 12.8 ms).
        EXPECT_GT(other_threads.load(), 0);
    }
}

TEST(ThreadPool, TaskExceptionReachesTheCallerAndThePoolStaysUsable) {
    ThreadPool pool(2);
    for (int rep = 0; rep < 50; ++rep) {
        std::atomic<int> ran{0};
        EXPECT_THROW(pool.parallel_for(40,
                                       [&](int64_t t, int) {
                                           ran.fetch_add(1);
                                           if (t == 17) throw std::runtime_error("task 17");
                                       }),
                     std::runtime_error);
        EXPECT_GE(ran.load(), 1);
        EXPECT_LE(ran.load(), 40);
        expect_each_task_once(pool, 33);  // the next call is complete and throws nothing
    }
}

TEST(ThreadPool, DestroyedIdleRightAfterCreationOrAfterWork) {
    for (int threads : {1, 2, 8}) {
        { ThreadPool idle(threads); }
        ThreadPool used(threads);
        expect_each_task_once(used, 100);
    }
}
