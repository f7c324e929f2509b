// GPU backends through the public API on any machine: the plug-in registry's answers without a
// GPU (no plug-in, disabled, no driver), and, on the GPU test double (IKLLM_TEST_GPU_DOUBLE=1:
// CPU kernels on memory of its own, poisoned until written), that a session whose layers live on
// a "GPU" gives the CPU's logits through decode, state save/load, position shifts and sequence
// copies -- the host-side paths that move KV rows between host and device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "api/api_session_access.h"
#include "core/log.h"
#include "ikllm.h"
#include "model/model.h"
#include "registry.h"
#include "session/session.h"
#include "test_support.h"

namespace {

struct Lib {
    ikllm_lib* lib = nullptr;
    Lib() { EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK); }
    ~Lib() { ikllm_lib_free(lib); }
};

// Sets an environment variable for the scope (the registry reads it on first use), then puts back
// what was there: a run with IKLLM_CUDA_PLUGIN pointing at a plug-in (the emulated one, or a GPU
// build elsewhere) keeps it for the tests after these.
struct Env {
    std::string name, old;
    bool had;
    Env(const char* n, const char* v) : name(n) {
        const char* o = std::getenv(n);
        had = o != nullptr;
        if (had) old = o;
        setenv(n, v, 1);
    }
    ~Env() {
        if (had) setenv(name.c_str(), old.c_str(), 1);
        else unsetenv(name.c_str());
    }
};

TEST(GpuRegistry, DisabledPluginIsACleanAnswer) {
    Env e("IKLLM_CUDA_PLUGIN", "none");
    Lib l;
    EXPECT_EQ(ikllm_lib_gpu_count(l.lib), 0);
    EXPECT_NE(std::string(ikllm_lib_gpu_status(l.lib)).find("disabled"), std::string::npos);
    char* json = nullptr;
    EXPECT_EQ(ikllm_lib_gpu_info(l.lib, 0, &json), IKLLM_ERR_NOT_FOUND);
    EXPECT_EQ(json, nullptr);
}

TEST(GpuRegistry, MissingPluginIsACleanAnswer) {
    Env e("IKLLM_CUDA_PLUGIN", "/nonexistent/libikllm-cuda.so");
    Lib l;
    EXPECT_EQ(ikllm_lib_gpu_count(l.lib), 0);
    EXPECT_NE(std::string(ikllm_lib_gpu_status(l.lib)).find("not loaded"), std::string::npos)
        << ikllm_lib_gpu_status(l.lib);
}

TEST(GpuRegistry, DefaultSearchAnswersEitherWay) {
    // Here: the plug-in beside the binaries when CUDA was built; with no driver (CI) it loads and
    // reports why there is no device. On a GPU machine it lists the GPUs.
    Lib l;
    const int n = ikllm_lib_gpu_count(l.lib);
    const std::string status = ikllm_lib_gpu_status(l.lib);
    EXPECT_FALSE(status.empty());
    EXPECT_EQ(status.rfind("CUDA", 0), 0u) << status;
    for (int i = 0; i < n; ++i) {
        char* json = nullptr;
        ASSERT_EQ(ikllm_lib_gpu_info(l.lib, i, &json), IKLLM_OK);
        EXPECT_NE(std::string(json).find("\"compute_capability\""), std::string::npos);
        ikllm_free(json);
    }
    EXPECT_EQ(ikllm_lib_gpu_count(nullptr), 0);
    EXPECT_STREQ(ikllm_lib_gpu_status(nullptr), "");
}

TEST(GpuRegistry, TestDoublesCount) {
    Env e("IKLLM_TEST_GPU_DOUBLE", "3");
    Lib l;
    ASSERT_EQ(ikllm_lib_gpu_count(l.lib), 3);
    for (int i = 0; i < 3; ++i) {
        char* json = nullptr;
        ASSERT_EQ(ikllm_lib_gpu_info(l.lib, i, &json), IKLLM_OK);
        EXPECT_NE(std::string(json).find("\"name\": \"CUDA" + std::to_string(i) + "\""), std::string::npos) << json;
        ikllm_free(json);
    }
}

TEST(GpuRegistry, TestDoubleIsOneDevice) {
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    ASSERT_EQ(ikllm_lib_gpu_count(l.lib), 1);
    char* json = nullptr;
    ASSERT_EQ(ikllm_lib_gpu_info(l.lib, 0, &json), IKLLM_OK);
    EXPECT_NE(std::string(json).find("\"name\": \"CUDA0\""), std::string::npos) << json;
    ikllm_free(json);
}

// (name, path) of the reference models present among `names`.
std::vector<std::pair<const char*, std::string>> reference_models(std::initializer_list<const char*> names) {
    std::vector<std::pair<const char*, std::string>> out;
    for (const char* name : names) {
        const std::string path = ikllm::test::refdata_dir() + "/models/" + name + ".gguf";
        if (ikllm::test::file_exists(path)) out.emplace_back(name, path);
    }
    return out;
}

// A model on the registry's devices with this placement, through the engine's own API (the
// tests below look at tensors and the scheduler).
std::unique_ptr<ikllm::Model> load_placed(ikllm::backend::Registry& reg, const std::string& path, int ngl, const char* rules,
                                          int use_mmap = -1) {
    ikllm::ModelOptions mo;
    mo.n_gpu_layers = ngl;
    mo.tensor_placement = rules;
    mo.use_mmap = use_mmap;
    ikllm::Logger log;
    return ikllm::load_model(path, mo, nullptr, log, &reg);
}

// A model + session with the given placement on the test double.
struct PlacedRun {
    ikllm_model* m = nullptr;
    ikllm_session* s = nullptr;
    PlacedRun(ikllm_lib* lib, const std::string& path, int ngl, const char* rules, const char* split = "") {
        ikllm_options* mo = nullptr;
        EXPECT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(mo, "n_gpu_layers", ngl), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_string(mo, "tensor_placement", rules), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_string(mo, "tensor_split", split), IKLLM_OK);
        EXPECT_EQ(ikllm_model_load(lib, path.c_str(), mo, nullptr, nullptr, nullptr, &m), IKLLM_OK);
        ikllm_options_free(mo);
        ikllm_options* so = nullptr;
        EXPECT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &so), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(so, "n_ctx", 128), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(so, "n_seq_max", 2), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(so, "n_threads", 2), IKLLM_OK);
        if (m) {
            EXPECT_EQ(ikllm_session_create(m, so, &s), IKLLM_OK);
        }
        ikllm_options_free(so);
    }
    ~PlacedRun() {
        ikllm_session_free(s);
        ikllm_model_free(m);
    }
    std::vector<float> decode(const std::vector<int32_t>& toks, int32_t seq) {
        std::vector<int32_t> seqs(toks.size(), seq);
        EXPECT_EQ(ikllm_session_decode(s, toks.data(), nullptr, seqs.data(), nullptr, (int32_t)toks.size(), 0), IKLLM_OK)
            << ikllm_last_error();
        const float* l = nullptr;
        int32_t n = 0;
        EXPECT_EQ(ikllm_session_logits(s, -1, &l, &n), IKLLM_OK);
        return l ? std::vector<float>(l, l + n) : std::vector<float>();
    }
};

// The scenario: prompt, drop two positions and shift the rest back (keys re-rotated on the host),
// copy to sequence 1, save, clear, decode something else, load, continue both.
std::vector<std::vector<float>> scenario(PlacedRun& r) {
    std::vector<std::vector<float>> out;
    out.push_back(r.decode({1, 20, 300, 45, 7, 99, 123, 8}, 0));
    EXPECT_EQ(ikllm_session_seq_remove(r.s, 0, 2, 4), IKLLM_OK);
    EXPECT_EQ(ikllm_session_seq_shift(r.s, 0, 4, -1, -2), IKLLM_OK) << ikllm_last_error();
    out.push_back(r.decode({55}, 0));
    EXPECT_EQ(ikllm_session_seq_copy(r.s, 0, 1, 0, -1), IKLLM_OK);
    out.push_back(r.decode({17, 18}, 1));
    size_t need = 0;
    EXPECT_EQ(ikllm_session_state_save(r.s, nullptr, 0, nullptr, 0, nullptr, 0, &need), IKLLM_ERR_BUFFER_TOO_SMALL);
    std::vector<uint8_t> state(need);
    EXPECT_EQ(ikllm_session_state_save(r.s, nullptr, 0, nullptr, 0, state.data(), state.size(), &need), IKLLM_OK);
    EXPECT_EQ(ikllm_session_clear(r.s), IKLLM_OK);
    out.push_back(r.decode({3, 4, 5}, 0));  // something else in between
    EXPECT_EQ(ikllm_session_clear(r.s), IKLLM_OK);
    EXPECT_EQ(ikllm_session_state_load(r.s, state.data(), state.size(), nullptr, 0), IKLLM_OK);
    out.push_back(r.decode({56}, 0));
    out.push_back(r.decode({19}, 1));
    return out;
}

void expect_same(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, const char* what,
                 double tol = 1e-6) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].size(), b[i].size()) << what << " step " << i;
        double num = 0, den = 0;
        for (size_t j = 0; j < a[i].size(); ++j) {
            ASSERT_TRUE(std::isfinite(b[i][j])) << what << " step " << i;
            num += (a[i][j] - b[i][j]) * (double)(a[i][j] - b[i][j]);
            den += (double)a[i][j] * a[i][j];
        }
        // Test double: the same CPU kernels on both sides, so only a missed copy could make them
        // differ. Real GPU: float rounding of other kernels.
        EXPECT_LE(std::sqrt(num / den), tol) << what << " step " << i;
    }
}

TEST(GpuDouble, SessionPathsMatchTheCpu) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    for (auto& [name, path] : reference_models({"llama-tiny-f16", "deepseek2-tiny-f16", "qwen3moe-tiny-f16"})) {
        std::vector<std::vector<float>> cpu, full, hybrid, split;
        { PlacedRun r(l.lib, path, 0, ""); cpu = scenario(r); }
        {
            PlacedRun r(l.lib, path, 99, "");
            EXPECT_EQ(ikllm_model_device_count(r.m), 2);
            full = scenario(r);
        }
        { PlacedRun r(l.lib, path, 99, "exps=CPU"); hybrid = scenario(r); }
        { PlacedRun r(l.lib, path, 1, ""); split = scenario(r); }
        expect_same(cpu, full, name);
        expect_same(cpu, hybrid, name);
        expect_same(cpu, split, name);
    }
}

// A GPU layer's KV rows live on the GPU only: its host range holds pages just while host code
// works on the rows (shift, save, load, copy-on-write) and gives them back right after, so the
// cache's host memory is that of the CPU layers at every step (page residency, mincore).
void expect_kv_rows_on_the_gpu_only(ikllm_lib* lib) {
    for (auto& [name, path] : reference_models({"llama-tiny-f16", "deepseek2-tiny-f16"})) {
        for (int ngl : {99, 1}) {
            PlacedRun r(lib, path, ngl, "");
            ASSERT_TRUE(r.s) << name;
            const ikllm::KvCache& kv = ikllm::api::session_of(r.s)->kv();
            uint64_t host_layers = 0;
            int gpu_layers = 0;
            for (int i = 0; i < kv.n_layer(); ++i) {
                if (kv.on_device(i)) ++gpu_layers;
                else host_layers += kv.k(i)->nb[3] + (kv.is_mla() ? 0 : kv.v(i)->nb[3]);
            }
            EXPECT_EQ(gpu_layers, std::min(ngl, kv.n_layer())) << name;
            const std::string model = name;  // (a structured binding: not capturable before C++20)
            auto check = [&](const char* step) {
                EXPECT_EQ(kv.host_resident_bytes(), host_layers) << model << " ngl " << ngl << " after " << step;
            };
            check("creation");
            r.decode({1, 20, 300, 45, 7, 99, 123, 8}, 0);
            check("decode");
            ASSERT_EQ(ikllm_session_seq_remove(r.s, 0, 2, 4), IKLLM_OK);
            ASSERT_EQ(ikllm_session_seq_shift(r.s, 0, 4, -1, -2), IKLLM_OK) << ikllm_last_error();
            check("shift");
            size_t need = 0;
            ASSERT_EQ(ikllm_session_state_save(r.s, nullptr, 0, nullptr, 0, nullptr, 0, &need), IKLLM_ERR_BUFFER_TOO_SMALL);
            std::vector<uint8_t> state(need);
            ASSERT_EQ(ikllm_session_state_save(r.s, nullptr, 0, nullptr, 0, state.data(), state.size(), &need), IKLLM_OK);
            check("save");
            ASSERT_EQ(ikllm_session_clear(r.s), IKLLM_OK);
            ASSERT_EQ(ikllm_session_state_load(r.s, state.data(), state.size(), nullptr, 0), IKLLM_OK) << ikllm_last_error();
            check("load");
            ASSERT_EQ(ikllm_session_seq_copy(r.s, 0, 1, 0, -1), IKLLM_OK);
            ASSERT_EQ(ikllm_session_context_shift(r.s, 0, 1, 2), IKLLM_OK) << ikllm_last_error();  // copy-on-write
            check("context shift");
            r.decode({5}, 0);
            check("decode after");
        }
    }
}

TEST(GpuDouble, GpuLayersKvRowsTakeNoHostMemory) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    expect_kv_rows_on_the_gpu_only(l.lib);
}

// Two GPUs (IKLLM_TEST_GPU_DOUBLE=2: two doubles, each with memory of its own): layers split
// between them, activations crossing from one GPU to the other through the host, KV rows on
// each layer's GPU; the same logits as the CPU through every session path.
TEST(GpuDouble, TwoGpusMatchTheCpu) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "2");
    Lib l;
    ASSERT_EQ(ikllm_lib_gpu_count(l.lib), 2);
    for (auto& [name, path] : reference_models({"llama-tiny-f16", "deepseek2-tiny-f16", "qwen3moe-tiny-f16"})) {
        std::vector<std::vector<float>> cpu;
        { PlacedRun r(l.lib, path, 0, ""); cpu = scenario(r); }
        {
            PlacedRun r(l.lib, path, 99, "", "1,1");
            ASSERT_EQ(ikllm_model_device_count(r.m), 3);
            EXPECT_STREQ(ikllm_model_device_name(r.m, 1), "CUDA0");
            EXPECT_STREQ(ikllm_model_device_name(r.m, 2), "CUDA1");
            const int32_t L = ikllm_model_n_layer(r.m);
            int32_t d0 = -1, dl = -1, dh = -1;
            EXPECT_EQ(ikllm_model_tensor_device(r.m, "blk.0.attn_norm.weight", &d0), IKLLM_OK);
            EXPECT_EQ(ikllm_model_tensor_device(r.m, ("blk." + std::to_string(L - 1) + ".attn_norm.weight").c_str(), &dl),
                      IKLLM_OK);
            EXPECT_EQ(ikllm_model_tensor_device(r.m, "output_norm.weight", &dh), IKLLM_OK);
            EXPECT_EQ(d0, 1);
            EXPECT_EQ(dl, 2);
            EXPECT_EQ(dh, 2);
            EXPECT_GT(ikllm_model_device_weight_bytes(r.m, 1), 0u);
            EXPECT_GT(ikllm_model_device_weight_bytes(r.m, 2), 0u);
            expect_same(cpu, scenario(r), (std::string(name) + " 1,1").c_str());
        }
        {   // experts on the CPU between the two GPUs' layers
            PlacedRun r(l.lib, path, 99, "exps=CPU", "1,1");
            expect_same(cpu, scenario(r), (std::string(name) + " 1,1 exps=CPU").c_str());
        }
        {   // attention on CUDA1, everything else of the layers on CUDA0: two crossings per layer
            PlacedRun r(l.lib, path, 99, "attn=CUDA1", "1,0");
            EXPECT_EQ(ikllm_model_device_count(r.m), 3);
            expect_same(cpu, scenario(r), (std::string(name) + " attn=CUDA1").c_str());
        }
        {   // only the second GPU holds weights: it is the model's only GPU device
            PlacedRun r(l.lib, path, 99, "", "0,1");
            ASSERT_EQ(ikllm_model_device_count(r.m), 2);
            EXPECT_STREQ(ikllm_model_device_name(r.m, 1), "CUDA1");
            expect_same(cpu, scenario(r), (std::string(name) + " 0,1").c_str());
        }
    }
}

// A file of row-interleaved layouts (the reference's _R4 / _R8) with -ngl 99: the GPU cannot run
// them, so they go up converted to their plain type. The reference's plain and interleaved files
// hold the same values for these types, so the converted file on the "GPU" gives the plain
// file's logits on the CPU.
TEST(GpuDouble, InterleavedFileRunsOnTheGpuAsItsPlainType) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    for (auto [packed, plain] : {std::pair{"llama-q-Q8_0_R8", "llama-q-Q8_0"}, std::pair{"llama-q-IQ2_K_R4", "llama-q-IQ2_K"}}) {
        const std::string dir = ikllm::test::refdata_dir() + "/quant/";
        if (!ikllm::test::file_exists(dir + packed + ".gguf") || !ikllm::test::file_exists(dir + plain + ".gguf")) continue;
        PlacedRun cpu(l.lib, dir + plain + ".gguf", 0, "");
        PlacedRun gpu(l.lib, dir + packed + ".gguf", 99, "");
        ASSERT_TRUE(cpu.s && gpu.s);
        int32_t d = -1;
        EXPECT_EQ(ikllm_model_tensor_device(gpu.m, "blk.0.attn_q.weight", &d), IKLLM_OK);
        EXPECT_EQ(d, 1) << packed;
        EXPECT_NE(std::string(ikllm_model_placement_report(gpu.m)).find("go to the GPU as"), std::string::npos)
            << ikllm_model_placement_report(gpu.m);
        const std::vector<int32_t> prompt = {1, 20, 300, 45, 7, 99, 123, 8};
        expect_same({cpu.decode(prompt, 0), cpu.decode({55}, 0)}, {gpu.decode(prompt, 0), gpu.decode({55}, 0)}, packed, 1e-5);
    }
}

// "weights"/"kv"/"stream"/"total" of device `dev` in the "requested" (or "suggestion") part of a plan.
uint64_t plan_field(const std::string& json, const std::string& dev, const std::string& field, size_t from = 0) {
    const size_t at = json.find("\"name\": \"" + dev + "\"", from);
    if (at == std::string::npos) return UINT64_MAX;
    const size_t f = json.find("\"" + field + "\": ", at);
    return std::strtoull(json.c_str() + f + field.size() + 4, nullptr, 10);
}

// ikllm_plan's JSON for a placement and a session size (n_ctx / n_batch 0: the defaults) and
// streaming threshold.
std::string plan_of(ikllm_lib* lib, const std::string& path, int ngl, const char* rules, int n_ctx = 0,
                    int n_batch = 0, int offload_min_batch = 0) {
    ikllm_options* mo = nullptr;
    ikllm_options* so = nullptr;
    EXPECT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_int(mo, "n_gpu_layers", ngl), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_string(mo, "tensor_placement", rules), IKLLM_OK);
    EXPECT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &so), IKLLM_OK);
    if (n_ctx) {
        EXPECT_EQ(ikllm_options_set_int(so, "n_ctx", n_ctx), IKLLM_OK);
    }
    if (n_batch) {
        EXPECT_EQ(ikllm_options_set_int(so, "n_batch", n_batch), IKLLM_OK);
    }
    EXPECT_EQ(ikllm_options_set_int(so, "offload_min_batch", offload_min_batch), IKLLM_OK);
    char* json = nullptr;
    EXPECT_EQ(ikllm_plan(lib, path.c_str(), mo, so, 0, 0, &json), IKLLM_OK) << ikllm_last_error();
    const std::string out = json ? json : "";
    ikllm_free(json);
    ikllm_options_free(mo);
    ikllm_options_free(so);
    return out;
}

// A GPU with too little memory (a double of a fixed size, IKLLM_TEST_GPU_DOUBLE_MEM): weights
// that do not fit fail the load, a KV cache that does not fit fails the session, a batch whose
// activations do not fit fails the decode -- each with IKLLM_ERR_OUT_OF_MEMORY and a message that
// names the device, and each leaving the library, model and session usable.
TEST(GpuDouble, OutOfGpuMemoryIsACleanError) {
    IKLLM_REQUIRE_REFDATA();
    const std::string path = ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf";
    uint64_t weights = 0, kv128 = 0;
    {
        Env e("IKLLM_TEST_GPU_DOUBLE", "1");
        Lib l;
        const std::string json = plan_of(l.lib, path, 99, "", 128);
        weights = plan_field(json, "CUDA0", "weights");
        kv128 = plan_field(json, "CUDA0", "kv");
    }
    ASSERT_GT(weights, 0u);
    ASSERT_GT(kv128, 0u);
    // Weights do not fit: the load fails; the same library then loads the model on the CPU.
    {
        Env e("IKLLM_TEST_GPU_DOUBLE", "1");
        Env m("IKLLM_TEST_GPU_DOUBLE_MEM", std::to_string(weights / 2).c_str());
        Lib l;
        ikllm_options* mo = nullptr;
        ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
        ASSERT_EQ(ikllm_options_set_int(mo, "n_gpu_layers", 99), IKLLM_OK);
        ikllm_model* model = nullptr;
        EXPECT_EQ(ikllm_model_load(l.lib, path.c_str(), mo, nullptr, nullptr, nullptr, &model), IKLLM_ERR_OUT_OF_MEMORY);
        EXPECT_EQ(model, nullptr);
        const std::string msg = ikllm_last_error();
        EXPECT_NE(msg.find("CUDA0"), std::string::npos) << msg;
        EXPECT_NE(msg.find("do not fit"), std::string::npos) << msg;
        ikllm_options_free(mo);
        PlacedRun cpu(l.lib, path, 0, "");
        EXPECT_FALSE(cpu.decode({1, 2, 3}, 0).empty());
    }
    // Weights fit, a 64K-cell KV cache does not: the session fails, a 128-cell one works.
    {
        Env e("IKLLM_TEST_GPU_DOUBLE", "1");
        Env m("IKLLM_TEST_GPU_DOUBLE_MEM", std::to_string(weights + 4 * kv128 + (8u << 20)).c_str());
        Lib l;
        ikllm_options* mo = nullptr;
        ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
        ASSERT_EQ(ikllm_options_set_int(mo, "n_gpu_layers", 99), IKLLM_OK);
        ikllm_model* model = nullptr;
        ASSERT_EQ(ikllm_model_load(l.lib, path.c_str(), mo, nullptr, nullptr, nullptr, &model), IKLLM_OK);
        ikllm_options_free(mo);
        ikllm_options* so = nullptr;
        ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &so), IKLLM_OK);
        ASSERT_EQ(ikllm_options_set_int(so, "n_ctx", 65536), IKLLM_OK);
        ikllm_session* s = nullptr;
        EXPECT_EQ(ikllm_session_create(model, so, &s), IKLLM_ERR_OUT_OF_MEMORY);
        EXPECT_EQ(s, nullptr);
        const std::string msg = ikllm_last_error();
        EXPECT_NE(msg.find("CUDA0: the KV cache of layer"), std::string::npos) << msg;
        ASSERT_EQ(ikllm_options_set_int(so, "n_ctx", 128), IKLLM_OK);
        ASSERT_EQ(ikllm_session_create(model, so, &s), IKLLM_OK) << ikllm_last_error();
        ikllm_options_free(so);
        const int32_t toks[3] = {1, 2, 3};
        EXPECT_EQ(ikllm_session_decode(s, toks, nullptr, nullptr, nullptr, 3, 0), IKLLM_OK) << ikllm_last_error();
        ikllm_session_free(s);
        ikllm_model_free(model);
    }
    // Weights and a 128-cell cache fit with 4 MiB to spare: a 120-token batch's activations do not.
    // The decode fails and leaves the cache as it was; single tokens then run as before.
    {
        Env e("IKLLM_TEST_GPU_DOUBLE", "1");
        Env m("IKLLM_TEST_GPU_DOUBLE_MEM", std::to_string(weights + kv128 + (4u << 20)).c_str());
        Lib l;
        PlacedRun r(l.lib, path, 99, "");
        ASSERT_NE(r.s, nullptr) << ikllm_last_error();
        const std::vector<float> first = r.decode({1, 2, 3}, 0);
        std::vector<int32_t> big(120, 7), seqs(120, 0);
        EXPECT_EQ(ikllm_session_decode(r.s, big.data(), nullptr, seqs.data(), nullptr, 120, 0), IKLLM_ERR_OUT_OF_MEMORY);
        const std::string msg = ikllm_last_error();
        EXPECT_NE(msg.find("CUDA0"), std::string::npos) << msg;
        EXPECT_EQ(ikllm_session_seq_pos_max(r.s, 0), 2);
        const std::vector<float> next = r.decode({4}, 0);
        EXPECT_EQ(next.size(), first.size()) << ikllm_last_error();
        EXPECT_EQ(ikllm_session_seq_pos_max(r.s, 0), 3);
    }
}

// The plan's promise: a GPU of exactly the planned total (weights + KV + the scratch estimate,
// for each model's full offload and hybrid) loads the model and decodes a full batch.
TEST(GpuDouble, PlannedTotalIsEnoughGpuMemory) {
    IKLLM_REQUIRE_REFDATA();
    for (auto& [name, path] : reference_models({"llama-tiny-f16", "qwen3moe-tiny-f16", "deepseek2-tiny-f16"})) {
        for (const char* rules : {"", "exps=CPU"}) {
            uint64_t total = 0;
            {
                Env e("IKLLM_TEST_GPU_DOUBLE", "1");
                Lib l;
                total = plan_field(plan_of(l.lib, path, 99, rules, 128, 64), "CUDA0", "total");
            }
            Env e("IKLLM_TEST_GPU_DOUBLE", "1");
            Env m("IKLLM_TEST_GPU_DOUBLE_MEM", std::to_string(total).c_str());
            Lib l;
            PlacedRun r(l.lib, path, 99, rules);  // n_ctx 128, n_batch 512 > 128: batches of 128 at most
            ASSERT_NE(r.s, nullptr) << name << " '" << rules << "': " << ikllm_last_error();
            std::vector<int32_t> prompt(64);
            for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = (int32_t)(1 + 7 * i % 500);
            EXPECT_FALSE(r.decode(prompt, 0).empty()) << name << " '" << rules << "': " << ikllm_last_error();
            EXPECT_FALSE(r.decode({5}, 0).empty()) << name << " '" << rules << "': " << ikllm_last_error();
        }
    }
}

TEST(GpuDouble, ImatrixNeedsEveryWeightOnTheCpu) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    const std::string path = ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf";
    PlacedRun gpu(l.lib, path, 99, "");
    EXPECT_EQ(ikllm_session_imatrix_start(gpu.s), IKLLM_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(ikllm_last_error()).find("importance-matrix"), std::string::npos);
    PlacedRun cpu(l.lib, path, 0, "");
    EXPECT_EQ(ikllm_session_imatrix_start(cpu.s), IKLLM_OK);
}

TEST(GpuDouble, CancelledDecodeLeavesTheCacheUnchanged) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    const std::string path = ikllm::test::refdata_dir() + "/models/qwen3moe-tiny-f16.gguf";
    PlacedRun r(l.lib, path, 99, "exps=CPU");
    const std::vector<float> first = r.decode({1, 2, 3}, 0);
    volatile int32_t flag = 1;
    ASSERT_EQ(ikllm_session_set_cancel_flag(r.s, &flag), IKLLM_OK);
    const int32_t toks[2] = {4, 5};
    EXPECT_EQ(ikllm_session_decode(r.s, toks, nullptr, nullptr, nullptr, 2, 0), IKLLM_CANCELLED);
    EXPECT_EQ(ikllm_session_seq_pos_max(r.s, 0), 2);
    flag = 0;
    EXPECT_EQ(r.decode({4, 5}, 0).size(), first.size());
    EXPECT_EQ(ikllm_session_seq_pos_max(r.s, 0), 4);
}

// use_mmap auto keeps a GPU-placed model's file mapped; the weights left on the CPU are copied
// into memory (huge pages advised) unless use_mmap or huge_pages say otherwise. The scenario
// above runs on such copies; here the placement line tells what was done.
TEST(GpuDouble, CpuWeightsOfAHybridAreCopiedToMemory) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    const std::string path = ikllm::test::refdata_dir() + "/models/qwen3moe-tiny-f16.gguf";
    auto placement = [&](int ngl, const char* rules, int use_mmap, int huge) {
        ikllm_options* mo = nullptr;
        EXPECT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(mo, "n_gpu_layers", ngl), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_string(mo, "tensor_placement", rules), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(mo, "use_mmap", use_mmap), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(mo, "huge_pages", huge), IKLLM_OK);
        ikllm_model* m = nullptr;
        EXPECT_EQ(ikllm_model_load(l.lib, path.c_str(), mo, nullptr, nullptr, nullptr, &m), IKLLM_OK);
        ikllm_options_free(mo);
        std::string p = m ? ikllm_model_placement(m) : "";
        ikllm_model_free(m);
        return p;
    };
    std::string p = placement(99, "exps=CPU", -1, -1);
    EXPECT_NE(p.find("weights mmapped (use_mmap auto: GPU placement)"), std::string::npos) << p;
    EXPECT_NE(p.find("; CPU weights copied to memory ("), std::string::npos) << p;
    p = placement(1, "", -1, -1);  // layers off the GPU are CPU weights too
    EXPECT_NE(p.find("; CPU weights copied to memory ("), std::string::npos) << p;
    for (auto [mm, huge] : {std::pair{1, -1}, std::pair{-1, 0}}) {
        p = placement(99, "exps=CPU", mm, huge);
        EXPECT_EQ(p.find("CPU weights copied"), std::string::npos) << p;
    }
}

// Auto repack converts that copy in place: the experts left on the CPU get the layout a
// CPU-only load gives them (this CPU's choice per type), the GPU's weights stay as stored, and
// a mapped load (use_mmap 1) converts nothing.
TEST(GpuDouble, CpuWeightsOfAHybridAreRepackedLikeACpuLoad) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    ikllm::backend::Registry reg;
    ASSERT_EQ(reg.gpu_count(), 1);
    const std::string path = ikllm::test::refdata_dir() + "/quant/qwen3moe-tiny-Q4_K_M.gguf";
    if (!ikllm::test::file_exists(path)) GTEST_SKIP() << "no " << path;
    const auto cpu = load_placed(reg, path, 0, "");
    const auto hybrid = load_placed(reg, path, 99, "exps=CPU");
    const auto mapped = load_placed(reg, path, 99, "exps=CPU", 1);
    auto file_type = [&](const char* name) {
        const ikllm::gguf::TensorInfo* ti = cpu->file->find_tensor(name);
        return ti ? ti->type : ~0u;
    };
    int on_cpu = 0, converted = 0, cpu_converted = 0;
    for (const auto& t : hybrid->weights) {
        const ikllm::Tensor* c = cpu->find_weight(t->name);
        const ikllm::Tensor* mp = mapped->find_weight(t->name);
        ASSERT_TRUE(c && mp) << t->name;
        if (file_type(t->name) == ~0u) continue;  // made at load (no file tensor)
        EXPECT_EQ(mp->type, file_type(t->name)) << t->name;  // mapped: nothing converted
        if (t->device != 0) {
            EXPECT_EQ(t->type, file_type(t->name)) << t->name;
            continue;
        }
        ++on_cpu;
        EXPECT_EQ(t->type, c->type) << t->name;
        converted += t->type != file_type(t->name);
    }
    EXPECT_GT(on_cpu, 0);
    for (const auto& t : cpu->weights)
        if (std::string(t->name).find("_exps") != std::string::npos) cpu_converted += t->type != file_type(t->name);
    EXPECT_EQ(converted, cpu_converted);
    EXPECT_NE(hybrid->placement.find("; CPU weights copied to memory ("), std::string::npos) << hybrid->placement;
    EXPECT_EQ(converted > 0, hybrid->placement.find("run-time repack") != std::string::npos) << hybrid->placement;
}

// The first GPU's stream buffer that ikllm_plan counts for this placement and session.
uint64_t planned_stream(const std::string& path, int ngl, const char* rules, int32_t min_batch, int32_t n_ctx) {
    Lib l;
    return plan_field(plan_of(l.lib, path, ngl, rules, n_ctx, 0, min_batch), "CUDA0", "stream");
}

// offload_min_batch: prompt batches of that many tokens run the CPU-resident experts (and the
// layers below -ngl) on the GPU with weights uploaded per op; single tokens stay on the CPU.
// Logits equal the CPU's (the double runs the same kernels), and the scheduler counts what it
// streamed: every CPU-resident product of the batch, none of the single-token steps.
TEST(GpuDouble, LargeBatchesStreamHostWeightsToTheGpu) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    ikllm::backend::Registry reg;
    ASSERT_EQ(reg.gpu_count(), 1);
    for (const auto& model : reference_models({"qwen3moe-tiny-f16", "deepseek2-tiny-f16", "llama-tiny-f16"})) {
        const char* name = model.first;  // (not a structured binding: the lambda below captures them)
        const std::string& path = model.second;
        const std::vector<int32_t> prompt{1, 20, 300, 45, 7, 99, 123, 8};
        auto run = [&](int ngl, const char* rules, int32_t min_batch, ikllm::Scheduler::StreamStats* stats) {
            auto m = load_placed(reg, path, ngl, rules);
            ikllm::SessionOptions so;
            so.n_ctx = 64;
            so.n_threads = 2;
            so.offload_min_batch = min_batch;
            ikllm::Session s(*m, so);
            std::vector<std::vector<float>> out;
            const int32_t n_vocab = m->hp.n_vocab;
            s.decode(prompt.data(), nullptr, nullptr, nullptr, (int32_t)prompt.size());
            out.emplace_back(s.logits(-1), s.logits(-1) + n_vocab);
            if (stats) *stats = s.scheduler() ? s.scheduler()->stream_stats() : ikllm::Scheduler::StreamStats{};
            for (int32_t t : {55, 17}) {
                s.decode(&t, nullptr, nullptr, nullptr, 1);
                out.emplace_back(s.logits(-1), s.logits(-1) + n_vocab);
            }
            if (stats && s.scheduler()) {
                EXPECT_EQ(s.scheduler()->stream_stats().ops, stats->ops) << "single tokens stream";
            }
            return out;
        };
        const auto cpu = run(0, "", 0, nullptr);
        ikllm::Scheduler::StreamStats hybrid{}, split{}, off{}, above{};
        expect_same(cpu, run(99, "exps=CPU", 4, &hybrid), name);
        expect_same(cpu, run(1, "", 8, &split), name);
        expect_same(cpu, run(99, "exps=CPU", 0, &off), name);
        expect_same(cpu, run(99, "exps=CPU", 9, &above), name);
        const bool moe = std::string(name) != "llama-tiny-f16";
        EXPECT_EQ(hybrid.ops > 0, moe) << name;
        if (moe) {
            EXPECT_GT(hybrid.bytes, 0) << name;
        }
        EXPECT_GT(split.ops, 0) << name;  // every layer but the last, and the head when it stays
        EXPECT_EQ(off.ops, 0) << name;
        EXPECT_EQ(above.ops, 0) << name;  // 8-token batch below a threshold of 9
        // ikllm_plan's stream buffer holds what the scheduler allocated: exactly the largest
        // layer's experts for the hybrid; at least the largest streamed op for -ngl 1 (the plan
        // also counts the head, which streams only for batches of wanted logits).
        if (moe) {
            EXPECT_EQ(planned_stream(path, 99, "exps=CPU", 4, 64), (uint64_t)hybrid.most) << name;
        }
        EXPECT_GE(planned_stream(path, 1, "", 8, 64), (uint64_t)split.most) << name;
        EXPECT_GT(split.most, 0) << name;
        EXPECT_EQ(planned_stream(path, 99, "exps=CPU", 0, 64), 0u) << name;
        EXPECT_EQ(planned_stream(path, 99, "exps=CPU", 65, 64), 0u) << name;  // batch = n_ctx below it
    }
}

// "weights" of device `dev` in the "requested" part of ikllm_plan's JSON.
uint64_t plan_weights(const std::string& json, const std::string& dev) { return plan_field(json, dev, "weights"); }

// Plans a placement, loads it, and compares the weight bytes per device: plan JSON vs loaded model
// (a device the plan lists but the model does not use holds 0 bytes).
void expect_plan_matches_load(ikllm_lib* lib, const std::string& path, int ngl, const char* rules, const char* split,
                              const std::string& what) {
    ikllm_options* mo = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_int(mo, "n_gpu_layers", ngl), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_string(mo, "tensor_placement", rules), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_string(mo, "tensor_split", split), IKLLM_OK);
    char* json = nullptr;
    ASSERT_EQ(ikllm_plan(lib, path.c_str(), mo, nullptr, 0, 0, &json), IKLLM_OK) << ikllm_last_error();
    const std::string plan = json;
    ikllm_free(json);
    ikllm_model* m = nullptr;
    ASSERT_EQ(ikllm_model_load(lib, path.c_str(), mo, nullptr, nullptr, nullptr, &m), IKLLM_OK);
    ikllm_options_free(mo);
    for (const char* dev : {"CPU", "CUDA0", "CUDA1"}) {
        const uint64_t planned = plan_weights(plan, dev);
        bool present = false;
        uint64_t loaded = 0;
        for (int d = 0; d < ikllm_model_device_count(m); ++d)
            if (std::string(ikllm_model_device_name(m, d)) == dev) {
                present = true;
                loaded = ikllm_model_device_weight_bytes(m, d);
            }
        if (planned == UINT64_MAX) {
            EXPECT_FALSE(present) << what << " " << dev << "\n" << plan;
            continue;
        }
        EXPECT_EQ(planned, loaded) << what << " " << dev << "\n" << plan;
    }
    EXPECT_GT(ikllm_model_device_weight_bytes(m, ikllm_model_device_count(m) - 1), 0u) << what;
    ikllm_model_free(m);
}

TEST(GpuDouble, PlanBeforeLoadingMatchesTheLoadedPlacement) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "1");
    Lib l;
    struct Case {
        int ngl;
        const char* rules;
    };
    for (auto& [name, path] :
         reference_models({"llama-tied-f16", "qwen3moe-tiny-f16", "deepseek2-split-tiny-f16", "deepseek2-tiny-f16"}))
        for (const Case& c : {Case{99, ""}, Case{99, "exps=CPU"}, Case{1, ""}, Case{0, "token_embd=CUDA0,output=CUDA0"},
                              Case{2, "ffn_down=CPU"}})
            expect_plan_matches_load(l.lib, path, c.ngl, c.rules, "",
                                     std::string(name) + " ngl " + std::to_string(c.ngl) + " '" + c.rules + "'");
}

// Without tensor_split the layers go by free memory: a 1 GiB and a 9 GiB GPU give a two-layer
// model's layers both to the second (round(2 x 0.1) = 0 for the first); equal memory splits them.
TEST(GpuDouble, DefaultSplitFollowsFreeMemory) {
    IKLLM_REQUIRE_REFDATA();
    const std::string path = ikllm::test::refdata_dir() + "/models/qwen3moe-tiny-f16.gguf";
    Env e("IKLLM_TEST_GPU_DOUBLE", "2");
    for (auto [mem, first] : {std::pair{"1G,9G", -1}, std::pair{"4G,4G", 1}}) {
        Env m("IKLLM_TEST_GPU_DOUBLE_MEM", mem);
        Lib l;
        PlacedRun r(l.lib, path, 99, "");
        ASSERT_NE(r.m, nullptr);
        int32_t d0 = -1;
        ASSERT_EQ(ikllm_model_tensor_device(r.m, "blk.0.attn_q.weight", &d0), IKLLM_OK);
        if (first < 0) {
            EXPECT_EQ(ikllm_model_device_count(r.m), 2) << mem;
            EXPECT_STREQ(ikllm_model_device_name(r.m, d0), "CUDA1") << mem;
        } else {
            EXPECT_EQ(ikllm_model_device_count(r.m), 3) << mem;
            EXPECT_STREQ(ikllm_model_device_name(r.m, d0), "CUDA0") << mem;
        }
    }
}

// ikllm plan --vram-budget auto on two GPUs (doubles of 16 and 10 MiB, too small for the whole
// model): the suggestion fits each GPU's free memory -- here layer 1's experts (on the smaller
// CUDA1) stay on the CPU while layer 0's (on CUDA0) fit -- and the model loaded with it (layers
// split by free memory, as planned) decodes a full batch on those GPUs.
TEST(GpuDouble, AutoBudgetSuggestionRuns) {
    IKLLM_REQUIRE_REFDATA();
    const std::string path = ikllm::test::refdata_dir() + "/models/qwen3moe-tiny-f16.gguf";
    Env e("IKLLM_TEST_GPU_DOUBLE", "2");
    Env m("IKLLM_TEST_GPU_DOUBLE_MEM", "16M,10M");
    Lib l;
    ikllm_options* so = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &so), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_int(so, "n_ctx", 128), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_int(so, "n_batch", 64), IKLLM_OK);
    char* json = nullptr;
    ASSERT_EQ(ikllm_plan(l.lib, path.c_str(), nullptr, so, 0, IKLLM_PLAN_AUTO_BUDGET, &json), IKLLM_OK)
        << ikllm_last_error();
    const std::string plan = json;
    ikllm_free(json);
    ikllm_options_free(so);
    const size_t sug = plan.find("\"suggestion\"");
    ASSERT_NE(sug, std::string::npos) << plan;
    EXPECT_NE(plan.find("\"vram_budgets\": [" + std::to_string((16u << 20) - (16u << 20) / 10) + ", " +
                        std::to_string((10u << 20) - (10u << 20) / 10) + "]"),
              std::string::npos)
        << plan;
    EXPECT_NE(plan.find("\"fits\": true", sug), std::string::npos) << plan;
    const int ngl = (int)std::strtol(plan.c_str() + plan.find("\"n_gpu_layers\": ", sug) + 16, nullptr, 10);
    const size_t r0 = plan.find("\"tensor_placement\": \"", sug) + 21;
    std::string rules = plan.substr(r0, plan.find('"', r0) - r0);
    for (size_t i; (i = rules.find("\\\\")) != std::string::npos;) rules.erase(i, 1);  // JSON "\\." -> "\."
    ASSERT_GT(ngl, 0) << plan;
    PlacedRun r(l.lib, path, ngl, rules.c_str());
    ASSERT_NE(r.s, nullptr) << ikllm_last_error() << "\n" << plan;
    std::vector<int32_t> prompt(64);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = (int32_t)(1 + 7 * i % 500);
    EXPECT_FALSE(r.decode(prompt, 0).empty()) << plan;
    EXPECT_FALSE(r.decode({5}, 0).empty());
    EXPECT_EQ(rules, "blk\\.(1)\\.ffn_.*_exps=CPU") << plan;
    int32_t d0 = -1, d1 = -1;
    EXPECT_EQ(ikllm_model_tensor_device(r.m, "blk.0.ffn_down_exps.weight", &d0), IKLLM_OK);
    EXPECT_EQ(ikllm_model_tensor_device(r.m, "blk.1.ffn_down_exps.weight", &d1), IKLLM_OK);
    EXPECT_STREQ(ikllm_model_device_name(r.m, d0), "CUDA0");
    EXPECT_EQ(d1, 0);
}

// The plan of two GPUs (layers split 1:2, experts kept on the CPU or not) is the loaded placement
// (a one-layer model gives CUDA0 no layer: it is then not one of the model's devices).
TEST(GpuDouble, TwoGpuPlanMatchesTheLoadedPlacement) {
    IKLLM_REQUIRE_REFDATA();
    Env e("IKLLM_TEST_GPU_DOUBLE", "2");
    Lib l;
    for (auto& [name, path] : reference_models({"llama-tied-f16", "qwen3moe-tiny-f16", "deepseek2-tiny-f16"}))
        for (const char* rules : {"", "exps=CPU", "token_embd=CUDA1"})
            expect_plan_matches_load(l.lib, path, 99, rules, "1,2", std::string(name) + " '" + rules + "'");
}

// The same scenario on a real GPU when this machine has one (skipped elsewhere): f16 weights,
// where GPU and CPU differ only by float rounding (measured ~6e-4 on an H200).
TEST(GpuReal, SessionPathsMatchTheCpu) {
    IKLLM_REQUIRE_REFDATA();
    Lib l;
    if (ikllm_lib_gpu_count(l.lib) == 0) GTEST_SKIP() << "no GPU: " << ikllm_lib_gpu_status(l.lib);
    for (auto& [name, path] : reference_models({"llama-tiny-f16", "deepseek2-tiny-f16", "qwen3moe-tiny-f16"})) {
        std::vector<std::vector<float>> cpu, full, hybrid;
        { PlacedRun r(l.lib, path, 0, ""); cpu = scenario(r); }
        { PlacedRun r(l.lib, path, 99, ""); full = scenario(r); }
        { PlacedRun r(l.lib, path, 99, "exps=CPU"); hybrid = scenario(r); }
        expect_same(cpu, full, name, 5e-3);
        expect_same(cpu, hybrid, name, 5e-3);
        if (ikllm_lib_gpu_count(l.lib) >= 2) {  // layers split over two real GPUs
            std::vector<std::vector<float>> two, two_hybrid;
            { PlacedRun r(l.lib, path, 99, "", "1,1"); two = scenario(r); }
            { PlacedRun r(l.lib, path, 99, "exps=CPU", "1,1"); two_hybrid = scenario(r); }
            expect_same(cpu, two, name, 5e-3);
            expect_same(cpu, two_hybrid, name, 5e-3);
        }
    }
}

TEST(GpuReal, GpuLayersKvRowsTakeNoHostMemory) {
    IKLLM_REQUIRE_REFDATA();
    Lib l;
    if (ikllm_lib_gpu_count(l.lib) == 0) GTEST_SKIP() << "no GPU: " << ikllm_lib_gpu_status(l.lib);
    expect_kv_rows_on_the_gpu_only(l.lib);
}

// Streaming on the CUDA backend (offload_min_batch; the emulated device in CI, a real GPU where
// there is one): logits of a batch whose CPU experts ran on the GPU within float rounding of the
// CPU's, and the weights went by DMA straight from their page-locked pages, all but the partial
// pages at each tensor's ends (a 6 GB layer used to need a 6 GB staging buffer and a memcpy).
TEST(GpuReal, StreamedWeightsCopyStraightFromLockedPages) {
    IKLLM_REQUIRE_REFDATA();
    ikllm::backend::Registry reg;
    if (reg.gpu_count() == 0) GTEST_SKIP() << "no GPU";
    for (const auto& model : reference_models({"qwen3moe-tiny-f16", "deepseek2-tiny-f16"})) {
        const char* name = model.first;
        const std::string& path = model.second;
        const std::vector<int32_t> prompt{1, 20, 300, 45, 7, 99, 123, 8};
        auto run = [&](int ngl, int32_t min_batch, ikllm::Scheduler::StreamStats* stats) {
            auto m = load_placed(reg, path, ngl, ngl ? "exps=CPU" : "");
            ikllm::SessionOptions so;
            so.n_ctx = 64;
            so.n_threads = 2;
            so.offload_min_batch = min_batch;
            ikllm::Session s(*m, so);
            s.decode(prompt.data(), nullptr, nullptr, nullptr, (int32_t)prompt.size());
            if (stats && s.scheduler()) *stats = s.scheduler()->stream_stats();
            return std::vector<std::vector<float>>{{s.logits(-1), s.logits(-1) + m->hp.n_vocab}};
        };
        ikllm::Scheduler::StreamStats st{};
        const auto cpu = run(0, 0, nullptr);
        expect_same(cpu, run(99, 4, &st), name, 5e-3);
        EXPECT_GT(st.ops, 0) << name;
        EXPECT_GT(st.direct, 0) << name;
        EXPECT_LE(st.direct, st.bytes) << name;
        // at most two partial pages per streamed tensor went through staging (3 tensors an op)
        EXPECT_GE(st.direct + st.ops * 3 * 2 * 65536, st.bytes) << name;
    }
}

// On the emulated CUDA device (libikllm-cuda-emu.so, IKLLM_CUDA_EMU_MEMORY bytes; skipped
// elsewhere): a batch whose temporaries do not fit in what the weights and the cache left is a clean
// IKLLM_ERR_OUT_OF_MEMORY, and the session stays usable: smaller batches afterwards give the CPU's
// logits (the failed batch left nothing in the cache).
TEST(GpuEmu, DeviceOutOfMemoryIsACleanError) {
    IKLLM_REQUIRE_REFDATA();
    if (!std::getenv("IKLLM_CUDA_EMU_MEMORY")) GTEST_SKIP() << "needs the emulated CUDA device with IKLLM_CUDA_EMU_MEMORY";
    Lib l;
    if (ikllm_lib_gpu_count(l.lib) == 0) GTEST_SKIP() << "no GPU: " << ikllm_lib_gpu_status(l.lib);
    const std::string path = ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf";
    std::vector<int32_t> big(100);
    for (size_t i = 0; i < big.size(); ++i) big[i] = (int32_t)(1 + 13 * i % 1900);
    std::vector<float> cpu;
    {
        PlacedRun r(l.lib, path, 0, "");
        cpu = r.decode({5, 6, 7}, 0);
    }
    PlacedRun r(l.lib, path, 99, "");
    ASSERT_NE(r.s, nullptr) << ikllm_last_error();
    std::vector<int32_t> seqs(big.size(), 0);
    EXPECT_EQ(ikllm_session_decode(r.s, big.data(), nullptr, seqs.data(), nullptr, (int32_t)big.size(), 0),
              IKLLM_ERR_OUT_OF_MEMORY);
    EXPECT_NE(std::string(ikllm_last_error()).find("do not fit"), std::string::npos) << ikllm_last_error();
    expect_same({cpu}, {r.decode({5, 6, 7}, 0)}, "llama-tiny-f16 after a failed batch", 5e-3);
}

}  // namespace
