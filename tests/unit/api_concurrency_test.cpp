// Concurrency through the C API, run under ThreadSanitizer in test.sh: one model shared by four
// threads each decoding in its own session at the same time (results identical to a lone
// session), models loaded and freed on several threads at once, cancel flags raised from another
// thread during load and during decode, and the log callback called from several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ikllm.h"
#include "test_support.h"

namespace {

std::string model_path(const char* stem) { return ikllm::test::refdata_dir() + "/models/" + stem + ".gguf"; }

ikllm_session* make_session(const ikllm_model* m, int n_threads, int n_ctx = 256) {
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
    ikllm_options_set_int(o, "n_ctx", n_ctx);
    ikllm_options_set_int(o, "n_threads", n_threads);
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(m, o, &s), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(o);
    return s;
}

std::vector<ikllm_token> prompt_for(int k) {
    std::vector<ikllm_token> t;
    for (int i = 0; i < 24; ++i) t.push_back((ikllm_token)(1 + (i * 37 + k * 101) % 1900));
    return t;
}

// Prompt, then 8 greedy steps; returns every logit vector seen.
std::vector<float> run_sequence(const ikllm_model* m, int k, int n_threads) {
    ikllm_session* s = make_session(m, n_threads);
    std::vector<float> all;
    std::vector<ikllm_token> toks = prompt_for(k);
    ikllm_sampler* greedy = nullptr;
    ikllm_options* so = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &so);
    ikllm_options_set_float(so, "temperature", 0.0);
    EXPECT_EQ(ikllm_sampler_create(m, so, &greedy), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(so);
    for (int step = 0; step < 9; ++step) {
        EXPECT_EQ(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, (int32_t)toks.size(), 0), IKLLM_OK)
            << ikllm_last_error();
        const float* lg = nullptr;
        int32_t nv = 0;
        EXPECT_EQ(ikllm_session_logits(s, -1, &lg, &nv), IKLLM_OK);
        all.insert(all.end(), lg, lg + nv);
        ikllm_token next = 0;
        EXPECT_EQ(ikllm_sampler_sample(greedy, s, -1, &next), IKLLM_OK);
        toks = {next};
    }
    ikllm_sampler_free(greedy);
    ikllm_session_free(s);
    return all;
}

TEST(Concurrency, FourSessionsOnOneModelDecodeAtOnce) {
    IKLLM_REQUIRE_REFDATA();
    for (const char* stem : {"llama-tiny-f16", "qwen3moe-tiny-f16"}) {
        ikllm_lib* lib = nullptr;
        ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
        ikllm_model* m = nullptr;
        ASSERT_EQ(ikllm_model_load(lib, model_path(stem).c_str(), nullptr, nullptr, nullptr, nullptr, &m), IKLLM_OK);
        std::vector<std::vector<float>> alone(4), together(4);
        for (int k = 0; k < 4; ++k) alone[k] = run_sequence(m, k, 2);
        std::vector<std::thread> th;
        for (int k = 0; k < 4; ++k) th.emplace_back([&, k] { together[k] = run_sequence(m, k, 2); });
        for (auto& t : th) t.join();
        for (int k = 0; k < 4; ++k) EXPECT_EQ(together[k], alone[k]) << stem << " thread " << k;
        ikllm_model_free(m);
        ikllm_lib_free(lib);
    }
}

struct LogSink {
    std::mutex mu;
    std::set<std::thread::id> threads;
    std::atomic<int> calls{0};
};
void log_to_sink(void* user, int32_t level, const char* msg) {
    auto* s = static_cast<LogSink*>(user);
    s->calls.fetch_add(1);
    EXPECT_TRUE(msg != nullptr && std::strlen(msg) > 0);
    std::lock_guard<std::mutex> lock(s->mu);
    s->threads.insert(std::this_thread::get_id());
}

TEST(Concurrency, LoadAndFreeOnSeveralThreadsWithOneLogSink) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    LogSink sink;
    ASSERT_EQ(ikllm_lib_set_log(lib, log_to_sink, &sink, IKLLM_LOG_DEBUG), IKLLM_OK);
    const char* stems[] = {"llama-tiny-f16", "qwen3-tiny-f16", "qwen2-tiny-f16", "deepseek2-tiny-f16"};
    std::atomic<int> loaded{0};
    std::vector<std::thread> th;
    for (int k = 0; k < 4; ++k)
        th.emplace_back([&, k] {
            for (int rep = 0; rep < 3; ++rep) {
                ikllm_model* m = nullptr;
                ikllm_options* o = nullptr;
                ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
                ikllm_options_set_int(o, "use_mmap", rep % 2);
                const ikllm_status st =
                    ikllm_model_load(lib, model_path(stems[(k + rep) % 4]).c_str(), o, nullptr, nullptr, nullptr, &m);
                EXPECT_EQ(st, IKLLM_OK) << ikllm_last_error();
                if (st == IKLLM_OK) loaded.fetch_add(1);
                ikllm_options_free(o);
                // Each thread's failures stay its own: a bad path here, a good load elsewhere.
                ikllm_model* none = nullptr;
                EXPECT_EQ(ikllm_model_load(lib, "/nonexistent/model.gguf", nullptr, nullptr, nullptr, nullptr, &none),
                          IKLLM_ERR_IO);
                EXPECT_NE(std::strstr(ikllm_last_error(), "/nonexistent/model.gguf"), nullptr);
                ikllm_model_free(m);
            }
        });
    for (auto& t : th) t.join();
    EXPECT_EQ(loaded.load(), 12);
    EXPECT_GE(sink.calls.load(), 12);
    EXPECT_EQ(sink.threads.size(), 4u) << "the log sink was called from every loading thread";
    ikllm_lib_free(lib);
}

// The progress callback waits until another thread has raised the flag, so the cancellation
// always lands in the middle of the load.
struct CancelDuringLoad {
    std::atomic<int32_t> flag{0};
    std::atomic<bool> in_load{false};
};
int32_t wait_for_cancel(void* user, float p) {
    auto* c = static_cast<CancelDuringLoad*>(user);
    if (p > 0.15f) {
        c->in_load.store(true);
        while (c->flag.load() == 0) std::this_thread::yield();
    }
    return 0;
}

TEST(Concurrency, CancelFromAnotherThreadDuringLoad) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    CancelDuringLoad c;
    std::thread canceller([&] {
        while (!c.in_load.load()) std::this_thread::yield();
        c.flag.store(1);
    });
    ikllm_model* m = nullptr;
    const ikllm_status st = ikllm_model_load(lib, model_path("llama-tiny-f16").c_str(), nullptr, wait_for_cancel, &c,
                                             reinterpret_cast<const volatile int32_t*>(&c.flag), &m);
    canceller.join();
    EXPECT_EQ(st, IKLLM_CANCELLED) << ikllm_last_error();
    EXPECT_EQ(m, nullptr);
    ikllm_lib_free(lib);
}

TEST(Concurrency, CancelFromAnotherThreadDuringDecode) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    ikllm_model* m = nullptr;
    ASSERT_EQ(ikllm_model_load(lib, model_path("llama-tiny-f16").c_str(), nullptr, nullptr, nullptr, nullptr, &m),
              IKLLM_OK);
    std::vector<ikllm_token> toks;
    for (int i = 0; i < 200; ++i) toks.push_back((ikllm_token)(1 + (i * 13) % 1900));
    const std::vector<float> want = [&] {
        ikllm_session* s = make_session(m, 2);
        EXPECT_EQ(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, 200, 0), IKLLM_OK);
        const float* lg = nullptr;
        int32_t nv = 0;
        ikllm_session_logits(s, -1, &lg, &nv);
        std::vector<float> r(lg, lg + nv);
        ikllm_session_free(s);
        return r;
    }();
    int cancelled = 0;
    for (int rep = 0; rep < 6; ++rep) {
        ikllm_session* s = make_session(m, 2);
        std::atomic<int32_t> flag{0};
        ASSERT_EQ(ikllm_session_set_cancel_flag(s, reinterpret_cast<const volatile int32_t*>(&flag)), IKLLM_OK);
        std::thread canceller([&] {
            std::this_thread::sleep_for(std::chrono::microseconds(200 * rep));
            flag.store(1);
        });
        const ikllm_status st = ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, 200, 0);
        canceller.join();
        if (st == IKLLM_CANCELLED) {
            ++cancelled;
            EXPECT_EQ(ikllm_session_seq_pos_max(s, 0), -1) << "a cancelled decode changed the cache";
        } else {
            EXPECT_EQ(st, IKLLM_OK) << ikllm_last_error();
            ASSERT_EQ(ikllm_session_clear(s), IKLLM_OK);
        }
        // Lower the flag: the same session decodes normally and gives the same numbers.
        flag.store(0);
        ASSERT_EQ(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, 200, 0), IKLLM_OK);
        const float* lg = nullptr;
        int32_t nv = 0;
        ASSERT_EQ(ikllm_session_logits(s, -1, &lg, &nv), IKLLM_OK);
        EXPECT_EQ(std::vector<float>(lg, lg + nv), want);
        ikllm_session_free(s);
    }
    EXPECT_GE(cancelled, 1) << "the flag never interrupted a decode";
    ikllm_model_free(m);
    ikllm_lib_free(lib);
}

}  // namespace
