// Fault injection through the C API. This program replaces the global operator new (which the
// engine's containers and its aligned buffers all go through) with one that fails the N-th
// allocation made on the calling thread; the whole load -> tokenize -> session -> decode ->
// sample -> detokenize -> chat-render path is then run once for every N. Each run must end
// with IKLLM_OK or IKLLM_ERR_OUT_OF_MEMORY and a message, free what it allocated (LeakSanitizer
// checks that when test.sh runs this under ASan) and leave the library usable: the final
// clean run gives the same logits as the first. I/O faults: the model file shrinks while it
// is being loaded (mapped and read into memory).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "ikllm.h"
#include "test_support.h"

// The replacements below pair operator new with malloc and operator delete with free on purpose;
// GCC, seeing new-expressions meet a free() through the inlined replacement, would warn.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
thread_local long t_fail_at = -1;  // index of the allocation to fail on this thread; -1 = none
thread_local long t_count = 0;     // allocations seen on this thread since arming
thread_local bool t_injected = false;
thread_local bool t_armed = false;  // only allocations inside library calls are counted

bool inject() {
    if (t_fail_at < 0 || !t_armed) return false;
    if (t_count++ != t_fail_at) return false;
    t_injected = true;
    return true;
}
void* plain_alloc(std::size_t n) { return std::malloc(n ? n : 1); }
void* aligned_alloc_(std::size_t n, std::align_val_t a) {
    void* p = nullptr;
    const std::size_t al = (std::size_t)a < sizeof(void*) ? sizeof(void*) : (std::size_t)a;
    return posix_memalign(&p, al, n ? n : 1) == 0 ? p : nullptr;
}
}  // namespace

void* operator new(std::size_t n) {
    void* p = inject() ? nullptr : plain_alloc(n);
    if (!p) throw std::bad_alloc();
    return p;
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return inject() ? nullptr : plain_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return inject() ? nullptr : plain_alloc(n); }
void* operator new(std::size_t n, std::align_val_t a) {
    void* p = inject() ? nullptr : aligned_alloc_(n, a);
    if (!p) throw std::bad_alloc();
    return p;
}
void* operator new[](std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return inject() ? nullptr : aligned_alloc_(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return inject() ? nullptr : aligned_alloc_(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

struct Outcome {
    ikllm_status status = IKLLM_OK;
    std::string stage, message;
    std::vector<float> logits;  // of the last prompt token, when the run got that far
};

const char* kTemplate =
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}";

// GPU placement for the hybrid runs (on the GPU test double): layers, rules, offload_min_batch;
// and the session's mla_expand_min_batch.
struct Placement {
    int n_gpu_layers = 0;
    const char* rules = "";
    int offload_min_batch = 0;
    int mla_expand_min_batch = 128;
};

// The whole path an application takes; stops at the first failing call and frees everything.
Outcome run_path(ikllm_lib* lib, const std::string& model_path, bool use_mmap, const Placement& pl = {}) {
    Outcome o;
    ikllm_model* model = nullptr;
    ikllm_options* mopt = nullptr;
    ikllm_options* sopt = nullptr;
    ikllm_options* gopt = nullptr;
    ikllm_session* session = nullptr;
    ikllm_sampler* sampler = nullptr;
    ikllm_detok* detok = nullptr;
    // Runs one library call with injection armed (the test's own allocations are not counted).
    auto step = [&](const char* stage, auto&& call) {
        t_armed = true;
        const ikllm_status st = call();
        t_armed = false;
        if (st == IKLLM_OK) return true;
        o.status = st;
        o.stage = stage;
        o.message = ikllm_last_error();
        return false;
    };
    [&] {
        if (!step("model options", [&] { return ikllm_options_create(IKLLM_OPTIONS_MODEL, &mopt); })) return;
        if (!step("use_mmap", [&] { return ikllm_options_set_int(mopt, "use_mmap", use_mmap ? 1 : 0); })) return;
        if (pl.n_gpu_layers > 0) {
            // use_mmap auto: the hybrid copies its CPU weights out of the mapping (another allocation)
            if (!step("use_mmap", [&] { return ikllm_options_set_int(mopt, "use_mmap", -1); })) return;
            if (!step("placement", [&] { return ikllm_options_set_int(mopt, "n_gpu_layers", pl.n_gpu_layers); })) return;
            if (!step("placement", [&] { return ikllm_options_set_string(mopt, "tensor_placement", pl.rules); })) return;
        }
        if (!step("load", [&] { return ikllm_model_load(lib, model_path.c_str(), mopt, nullptr, nullptr, nullptr, &model); })) return;
        ikllm_token toks[64];
        size_t n = 0;
        const char* text = "Hello world, this is a test of allocation failures.";
        if (!step("tokenize", [&] { return ikllm_tokenize(model, text, std::strlen(text), 1, toks, 64, &n); })) return;
        if (!step("session options", [&] { return ikllm_options_create(IKLLM_OPTIONS_SESSION, &sopt); })) return;
        ikllm_options_set_int(sopt, "n_ctx", 64);
        ikllm_options_set_int(sopt, "n_threads", 1);
        ikllm_options_set_int(sopt, "offload_min_batch", pl.offload_min_batch);
        ikllm_options_set_int(sopt, "mla_expand_min_batch", pl.mla_expand_min_batch);
        if (!step("session", [&] { return ikllm_session_create(model, sopt, &session); })) return;
        std::vector<int32_t> pos(n), want(n, 0);
        for (size_t i = 0; i < n; ++i) pos[i] = (int32_t)i;
        want[n - 1] = 1;
        if (!step("decode", [&] { return ikllm_session_decode(session, toks, pos.data(), nullptr, want.data(), (int32_t)n, 0); }))
            return;
        const float* lg = nullptr;
        int32_t nv = 0;
        if (!step("logits", [&] { return ikllm_session_logits(session, -1, &lg, &nv); })) return;
        o.logits.assign(lg, lg + nv);
        if (!step("sampler options", [&] { return ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &gopt); })) return;
        if (!step("grammar", [&] { return ikllm_options_set_string(gopt, "grammar", "root ::= [a-z ]+ \"!\""); })) return;
        if (!step("sampler", [&] { return ikllm_sampler_create(model, gopt, &sampler); })) return;
        ikllm_token t = -1;
        if (!step("sample", [&] { return ikllm_sampler_sample(sampler, session, -1, &t); })) return;
        if (!step("detok", [&] { return ikllm_detok_create(model, 0, &detok); })) return;
        const char* piece = nullptr;
        size_t len = 0;
        if (!step("detok push", [&] { return ikllm_detok_push(detok, t, &piece, &len); })) return;
        char buf[256];
        size_t needed = 0;
        if (!step("chat render", [&] { return ikllm_chat_render(model, kTemplate, "[{\"role\":\"user\",\"content\":\"hi\"}]",
                                                   nullptr, nullptr, 1, nullptr, buf, sizeof buf, &needed); }))
            return;
    }();
    ikllm_detok_free(detok);
    ikllm_sampler_free(sampler);
    ikllm_session_free(session);
    ikllm_model_free(model);
    ikllm_options_free(gopt);
    ikllm_options_free(sopt);
    ikllm_options_free(mopt);
    return o;
}

// Every allocation index of the path is failed once (every `stride`-th; IKLLM_FAULT_STRIDE=1
// forces the full sweep).
void fail_every_allocation(const std::string& model_path, bool use_mmap, long stride = 1, const Placement& pl = {}) {
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    t_fail_at = -1;
    Outcome clean = run_path(lib, model_path, use_mmap, pl);
    ASSERT_EQ(clean.status, IKLLM_OK) << clean.stage << ": " << clean.message;
    ASSERT_FALSE(clean.logits.empty());

    if (const char* e = std::getenv("IKLLM_FAULT_STRIDE")) stride = std::max(1L, std::atol(e));
    long failures = 0;
    std::map<std::string, long> oom_by_stage;  // printed: where the injected failures surfaced
    for (long k = 0;; k += stride) {
        t_count = 0;
        t_injected = false;
        t_fail_at = k;
        Outcome o = run_path(lib, model_path, use_mmap, pl);
        t_fail_at = -1;
        if (!t_injected) {  // the path needs fewer than k allocations: every index was tried
            EXPECT_EQ(o.status, IKLLM_OK) << o.stage << ": " << o.message;
            break;
        }
        ++failures;
        if (o.status == IKLLM_OK) continue;  // the failed allocation was optional (e.g. a cache)
        ASSERT_EQ(o.status, IKLLM_ERR_OUT_OF_MEMORY)
            << "allocation #" << k << " failed at stage '" << o.stage << "' with " << ikllm_status_name(o.status)
            << ": " << o.message;
        ASSERT_FALSE(o.message.empty());
        ++oom_by_stage[o.stage];
    }
    std::printf("[ fault    ] %s: %ld allocations failed one at a time (stride %ld)\n",
                use_mmap ? "mmap" : "read", failures, stride);
    for (auto& [stage, count] : oom_by_stage) std::printf("[ fault    ]   %-16s %ld x out of memory\n", stage.c_str(), count);
    EXPECT_GT(oom_by_stage["load"], 100) << "injection did not reach the loader";
    // Still usable, same numbers.
    Outcome after = run_path(lib, model_path, use_mmap, pl);
    ASSERT_EQ(after.status, IKLLM_OK) << after.stage << ": " << after.message;
    EXPECT_EQ(after.logits, clean.logits);
    ikllm_lib_free(lib);
}

std::string model_path(const char* stem) { return ikllm::test::refdata_dir() + "/models/" + stem + ".gguf"; }

TEST(FaultInjection, EveryAllocationFailureIsACleanOutOfMemory) {
    IKLLM_REQUIRE_REFDATA();
    fail_every_allocation(model_path("llama-tiny-f16"), true);
}

TEST(FaultInjection, ReadIntoMemoryModeToo) {
    IKLLM_REQUIRE_REFDATA();
    fail_every_allocation(model_path("qwen3-tiny-f16"), false);
}

TEST(FaultInjection, MoeAndMlaModels) {
    IKLLM_REQUIRE_REFDATA();
    // Every 5th index by default: these paths are long (IKLLM_FAULT_STRIDE=1 runs them all).
    fail_every_allocation(model_path("deepseek2-tiny-f16"), true, 5);
    fail_every_allocation(model_path("qwen3moe-tiny-f16"), true, 5);
}

// MLA in the expanded form (a threshold of 4 tokens puts the short prompt on it) on a split-layout
// file, whose attn_kv_b the loader re-creates: its buffer and the expansion's are allocations too.
TEST(FaultInjection, ExpandedMlaOfASplitLayoutModel) {
    IKLLM_REQUIRE_REFDATA();
    Placement pl;
    pl.mla_expand_min_batch = 4;
    fail_every_allocation(model_path("deepseek2-split-tiny-f16"), true, 5, pl);
}

// The experts-on-CPU hybrid on the GPU test double: the copy of the CPU weights, the device
// buffers, the scheduler's mirrors and staging, and the weights streamed for the prompt batch
// (offload_min_batch 4) are allocations too. A failed copy or stream buffer is not an error (the
// mapping stays, the op runs on the CPU); everything else is a clean out-of-memory.
TEST(FaultInjection, HybridPlacementOnTheGpuDouble) {
    IKLLM_REQUIRE_REFDATA();
    setenv("IKLLM_TEST_GPU_DOUBLE", "1", 1);  // read when the library first looks for GPUs
    fail_every_allocation(model_path("qwen3moe-tiny-f16"), true, 5, Placement{99, "exps=CPU", 4});
    unsetenv("IKLLM_TEST_GPU_DOUBLE");
}

// --- I/O: the file shrinks after it was opened ------------------------------------------------
struct Shrink {
    std::string path;
    off_t to = 0;
    bool done = false;
};
int32_t shrink_at_first_step(void* user, float p) {
    auto* s = static_cast<Shrink*>(user);
    if (p > 0.05f && !s->done) {
        s->done = true;
        if (::truncate(s->path.c_str(), s->to) != 0) std::abort();
    }
    return 0;
}

void copy_file(const std::string& from, const std::string& to) {
    std::ifstream in(from, std::ios::binary);
    std::ofstream out(to, std::ios::binary);
    out << in.rdbuf();
}

TEST(FaultInjection, FileThatShrinksDuringLoadIsAnIoError) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    for (int mmap = 0; mmap < 2; ++mmap) {
        const std::string path = ::testing::TempDir() + "/ikllm_shrink.gguf";
        copy_file(model_path("llama-tiny-f16"), path);
        std::ifstream f(path, std::ios::binary | std::ios::ate);
        Shrink s{path, (off_t)f.tellg() / 2};
        ikllm_options* o = nullptr;
        ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &o), IKLLM_OK);
        ASSERT_EQ(ikllm_options_set_int(o, "use_mmap", mmap), IKLLM_OK);
        ikllm_model* m = nullptr;
        const ikllm_status st = ikllm_model_load(lib, path.c_str(), o, shrink_at_first_step, &s, nullptr, &m);
        EXPECT_TRUE(s.done);
        EXPECT_EQ(st, IKLLM_ERR_IO) << ikllm_last_error();
        EXPECT_EQ(m, nullptr);
        EXPECT_NE(std::strstr(ikllm_last_error(), "changed size"), nullptr) << ikllm_last_error();
        ikllm_options_free(o);
        std::remove(path.c_str());
    }
    ikllm_lib_free(lib);
}

}  // namespace
