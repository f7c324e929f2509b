// Memory plan and placement suggestion over the reference models, checked against sums computed
// here from the GGUF tensor table; plus the C API of placement (options, queries, ikllm_plan).
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "ikllm.h"
#include "model/memory_placement.h"
#include "model/memory_plan.h"
#include "model/model.h"
#include "quant/type_traits.h"
#include "test_support.h"

using namespace ikllm;

namespace {

std::string model_path(const std::string& name) { return test::refdata_dir() + "/models/" + name + ".gguf"; }

// KV bytes per token and layer through the public API (independent of the planner's code).
uint64_t api_kv_per_layer(const std::string& path, const char* kv_type) {
    ikllm_lib* lib = nullptr;
    EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    ikllm_model* m = nullptr;
    EXPECT_EQ(ikllm_model_load(lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &m), IKLLM_OK);
    uint64_t b = 0;
    EXPECT_EQ(ikllm_model_kv_bytes_per_token(m, kv_type, &b), IKLLM_OK);
    const int32_t n_layer = ikllm_model_n_layer(m);
    ikllm_model_free(m);
    ikllm_lib_free(lib);
    return b / (uint64_t)n_layer;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

struct Sums {
    uint64_t cpu = 0, gpu = 0;
};

// Weight bytes per device for "last n layers on the GPU, except routed experts of layers in
// cpu_expert_layers" straight from the file's tensor table (no derived tensors: the models used
// here have none).
Sums expected_weights(const gguf::File& f, int n_layer, int ngl, const std::vector<int>& cpu_expert_layers) {
    Sums s;
    for (const auto& t : f.tensors()) {
        bool gpu = false;
        for (int l = n_layer - ngl; l < n_layer; ++l)
            if (l >= 0 && starts_with(t.name, "blk." + std::to_string(l) + ".")) {
                gpu = true;
                if (t.name.find("_exps") != std::string::npos)
                    for (int c : cpu_expert_layers)
                        if (c == l) gpu = false;
            }
        if (ngl > n_layer && (t.name == "output.weight" || t.name == "output_norm.weight")) gpu = true;
        (gpu ? s.gpu : s.cpu) += t.nbytes;
    }
    return s;
}

}  // namespace

TEST(MemoryPlan, WeightsAndKvPerDeviceMatchFileSums) {
    IKLLM_REQUIRE_REFDATA();
    const std::string path = model_path("qwen3moe-tiny-f16");
    auto f = gguf::File::open(path, &type_geometry, true);
    const PlanModel pm = plan_model_from_file(*f);
    const int L = pm.hp.n_layer;
    ASSERT_GE(L, 2);
    const uint64_t kv_layer = api_kv_per_layer(path, "f16");
    ASSERT_GT(kv_layer, 0u);

    PlanRequest req;
    req.n_ctx = 1000;
    req.n_batch = 64;
    // Everything on the CPU.
    MemoryPlan p = plan_memory(pm, req);
    Sums e = expected_weights(*f, L, 0, {});
    ASSERT_EQ(p.devices.size(), 2u);
    EXPECT_EQ(p.devices[0].weights, e.cpu);
    EXPECT_EQ(p.devices[1].weights, 0u);
    EXPECT_EQ(p.devices[0].kv, kv_layer * 1000 * L);
    EXPECT_EQ(p.devices[1].kv, 0u);
    EXPECT_EQ(p.devices[1].scratch, 0u);  // holds nothing
    EXPECT_TRUE(p.report.empty());

    // Last layer on the GPU, its experts kept on the CPU.
    req.n_gpu_layers = 1;
    req.tensor_placement = "exps=CPU";
    p = plan_memory(pm, req);
    e = expected_weights(*f, L, 1, {L - 1});
    EXPECT_EQ(p.find("CPU")->weights, e.cpu);
    EXPECT_EQ(p.find("CUDA0")->weights, e.gpu);
    EXPECT_EQ(p.find("CUDA0")->kv, kv_layer * 1000);
    EXPECT_EQ(p.find("CPU")->kv, kv_layer * 1000 * (L - 1));
    EXPECT_EQ(p.find("CUDA0")->total(), p.find("CUDA0")->weights + p.find("CUDA0")->kv + p.find("CUDA0")->scratch);
    EXPECT_GT(p.find("CUDA0")->scratch, 0u);

    // Everything, with the head; q8_0 cache.
    req.n_gpu_layers = L + 1;
    req.tensor_placement = "";
    req.kv_type = quant::T_Q8_0;
    p = plan_memory(pm, req);
    e = expected_weights(*f, L, L + 1, {});
    EXPECT_EQ(p.find("CUDA0")->weights, e.gpu);
    EXPECT_EQ(p.find("CPU")->weights, e.cpu);  // token_embd
    EXPECT_EQ(p.find("CUDA0")->kv, api_kv_per_layer(path, "q8_0") * 1000 * L);
    EXPECT_EQ(p.find("CPU")->kv, 0u);
}

TEST(MemoryPlan, MlaKvAndDerivedTensors) {
    IKLLM_REQUIRE_REFDATA();
    const std::string path = model_path("deepseek2-tiny-f16");
    auto f = gguf::File::open(path, &type_geometry, true);
    const PlanModel pm = plan_model_from_file(*f);
    PlanRequest req;
    req.n_ctx = 256;
    const MemoryPlan p = plan_memory(pm, req);
    const uint64_t kv_layer = api_kv_per_layer(path, "f16");
    EXPECT_EQ(p.find("CPU")->kv, kv_layer * 256 * pm.hp.n_layer);
    // attn_kv_b stays and the loader derives attn_k_b / attn_v_b: dn x rkv x H (f16) + rkv x dv x H (f16).
    uint64_t file_bytes = 0;
    for (const auto& t : f->tensors()) file_bytes += t.nbytes;
    const HParams& hp = pm.hp;
    const uint64_t derived = ((uint64_t)hp.d_nope * hp.kv_lora_rank * hp.n_head + (uint64_t)hp.kv_lora_rank * hp.d_v * hp.n_head) * 2;
    EXPECT_EQ(p.find("CPU")->weights, file_bytes + derived * hp.n_layer);

    // The split layout (attn_k_b / attn_v_b): the loader re-creates attn_kv_b (f16, rkv x H(dn+dv))
    // for CPU layers only.
    auto fs = gguf::File::open(model_path("deepseek2-split-tiny-f16"), &type_geometry, true);
    const PlanModel ps = plan_model_from_file(*fs);
    uint64_t split_bytes = 0;
    for (const auto& t : fs->tensors()) split_bytes += t.nbytes;
    const uint64_t kv_b = (uint64_t)hp.kv_lora_rank * hp.n_head * (hp.d_nope + hp.d_v) * 2;
    EXPECT_EQ(plan_memory(ps, req).find("CPU")->weights, split_bytes + kv_b * hp.n_layer);
    PlanRequest gpu = req;
    gpu.n_gpu_layers = 1;  // the last layer on the GPU: its attn_kv_b is not re-created
    const MemoryPlan pg = plan_memory(ps, gpu);
    EXPECT_EQ(pg.find("CPU")->weights + pg.find("CUDA0")->weights, split_bytes + kv_b * (hp.n_layer - 1));
}

TEST(MemoryPlan, TiedHeadCopiedOnlyWhenOffloaded) {
    IKLLM_REQUIRE_REFDATA();
    auto f = gguf::File::open(model_path("llama-tied-f16"), &type_geometry, true);
    const PlanModel pm = plan_model_from_file(*f);
    ASSERT_TRUE(pm.tied_output);
    const uint64_t emb = f->find_tensor("token_embd.weight")->nbytes;
    uint64_t file_bytes = 0;
    for (const auto& t : f->tensors()) file_bytes += t.nbytes;
    PlanRequest req;
    MemoryPlan p = plan_memory(pm, req);
    EXPECT_EQ(p.find("CPU")->weights, file_bytes);
    req.n_gpu_layers = pm.hp.n_layer + 1;
    p = plan_memory(pm, req);
    EXPECT_EQ(p.find("CPU")->weights, emb);
    EXPECT_EQ(p.find("CUDA0")->weights, file_bytes - emb + emb);  // layers + norm + the head copy
}

// offload_min_batch: the first GPU gets the buffer host weights stream through -- the largest
// group one product reads, from the file's tensor table: with -ot exps=CPU one layer's routed
// experts (each tensor rounded to 256 B), with -ngl 0 on a dense model the widest single matrix
// or gate + up pair. None below the threshold, without GPUs, or for types the GPU does not run.
TEST(MemoryPlan, StreamBufferIsTheLargestHostGroup) {
    IKLLM_REQUIRE_REFDATA();
    auto round = [](uint64_t b) { return (b + 255) / 256 * 256; };
    auto f = gguf::File::open(model_path("qwen3moe-tiny-f16"), &type_geometry, true);
    const PlanModel pm = plan_model_from_file(*f);
    std::vector<uint64_t> per_layer(pm.hp.n_layer, 0);
    for (const auto& t : f->tensors())
        if (t.name.find("_exps") != std::string::npos) per_layer[layer_of_tensor_name(t.name)] += round(t.nbytes);
    PlanRequest req;
    req.n_ctx = 256;
    req.n_batch = 64;
    req.n_gpu_layers = 99;
    req.tensor_placement = "exps=CPU";
    const MemoryPlan plain = plan_memory(pm, req);
    EXPECT_EQ(plain.find("CUDA0")->stream, 0u);
    req.offload_min_batch = 32;
    const MemoryPlan p = plan_memory(pm, req);
    EXPECT_EQ(p.find("CUDA0")->stream, *std::max_element(per_layer.begin(), per_layer.end()));
    EXPECT_EQ(p.find("CPU")->stream, 0u);
    // The streamed experts' activations run on the GPU: its scratch gains the experts term.
    EXPECT_GT(p.find("CUDA0")->scratch, plain.find("CUDA0")->scratch);
    EXPECT_EQ(p.find("CUDA0")->total(), p.find("CUDA0")->weights + p.find("CUDA0")->kv + p.find("CUDA0")->scratch +
                                             p.find("CUDA0")->stream);
    PlanRequest r = req;
    r.offload_min_batch = 65;  // above min(n_batch, n_ctx)
    EXPECT_EQ(plan_memory(pm, r).find("CUDA0")->stream, 0u);
    r = req;
    r.gpus.names.clear();
    EXPECT_EQ(plan_memory(pm, r).devices.size(), 1u);
    r = req;
    r.gpu_supports_type = [](uint32_t t) { return t != quant::T_F16; };
    EXPECT_EQ(plan_memory(pm, r).find("CUDA0")->stream, 0u);
    r = req;
    r.tensor_placement = "";  // everything on the GPU: nothing streams
    EXPECT_EQ(plan_memory(pm, r).find("CUDA0")->stream, 0u);

    // Dense, all on the CPU: the widest matrix group (gate + up together).
    auto fl = gguf::File::open(model_path("llama-tiny-f16"), &type_geometry, true);
    const PlanModel pl = plan_model_from_file(*fl);
    uint64_t widest = 0;
    for (int l = 0; l < pl.hp.n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        widest = std::max(widest, round(fl->find_tensor(b + "ffn_gate.weight")->nbytes) +
                                      round(fl->find_tensor(b + "ffn_up.weight")->nbytes));
        for (const char* m : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight", "ffn_down.weight"})
            widest = std::max(widest, round(fl->find_tensor(b + m)->nbytes));
    }
    if (const auto* out = fl->find_tensor("output.weight")) widest = std::max(widest, round(out->nbytes));
    PlanRequest d;
    d.n_ctx = 256;
    d.offload_min_batch = 32;
    EXPECT_EQ(plan_memory(pl, d).find("CUDA0")->stream, widest);
}

TEST(MemoryPlan, SuggestionFitsAndIsMaximal) {
    IKLLM_REQUIRE_REFDATA();
    auto f = gguf::File::open(model_path("qwen3moe-tiny-f16"), &type_geometry, true);
    const PlanModel pm = plan_model_from_file(*f);
    const int L = pm.hp.n_layer;
    PlanRequest req;
    req.n_ctx = 512;
    req.n_batch = 32;
    auto gpu_total = [&](int ngl, const std::string& rules) {
        PlanRequest r = req;
        r.n_gpu_layers = ngl;
        r.tensor_placement = rules;
        return plan_memory(pm, r).find("CUDA0")->total();
    };
    const uint64_t base = gpu_total(L + 1, "exps=CPU");
    const uint64_t full = gpu_total(L + 1, "");
    ASSERT_LT(base, full);
    // Everything fits.
    PlacementSuggestion s = suggest_placement(pm, req, full);
    EXPECT_TRUE(s.fits);
    EXPECT_EQ(s.strategy, "all");
    EXPECT_EQ(s.n_gpu_layers, L + 1);
    EXPECT_EQ(s.tensor_placement, "");
    EXPECT_EQ(s.plan.find("CUDA0")->total(), full);
    // Between the base and everything: some layers' experts, from the last one down.
    for (uint64_t budget : {base, (base + full) / 2, full - 1}) {
        s = suggest_placement(pm, req, budget);
        EXPECT_TRUE(s.fits);
        EXPECT_EQ(s.strategy, "experts-partial");
        EXPECT_EQ(s.n_gpu_layers, L + 1);
        EXPECT_LE(s.plan.find("CUDA0")->total(), budget);
        EXPECT_EQ(gpu_total(s.n_gpu_layers, s.tensor_placement), s.plan.find("CUDA0")->total());
        const int k = s.expert_layers_on_gpu;
        ASSERT_LT(k, L);
        // Maximal: one more layer's experts (the next one down) does not fit.
        std::string more = "ffn_.*_exps=CPU";
        if (L - k - 1 > 0) {
            more = "blk\\.(";
            for (int i = 0; i < L - k - 1; ++i) more += (i ? "|" : "") + std::to_string(i);
            more += ")\\.ffn_.*_exps=CPU";
        } else {
            more = "";
        }
        EXPECT_GT(gpu_total(L + 1, more), budget) << "budget " << budget << " k " << k;
    }
    // Less than the base: whole layers.
    s = suggest_placement(pm, req, base - 1);
    EXPECT_EQ(s.strategy, "layers");
    EXPECT_TRUE(s.fits);
    EXPECT_LE(s.plan.find("CUDA0")->total(), base - 1);
    EXPECT_LE(s.n_gpu_layers, L);
    EXPECT_GT(gpu_total(s.n_gpu_layers + 1, ""), base - 1);
    // Tiny budget: nothing.
    s = suggest_placement(pm, req, 1);
    EXPECT_EQ(s.n_gpu_layers, 0);
    EXPECT_TRUE(s.fits);
}

// Two GPUs: layers split by the shares, each layer's KV cache with its attention, and the
// suggestion keeping every GPU within the budget while placing more experts than one GPU can.
TEST(MemoryPlan, TwoGpusSplitLayersAndSuggestion) {
    IKLLM_REQUIRE_REFDATA();
    auto f = gguf::File::open(model_path("qwen3moe-tiny-f16"), &type_geometry, true);
    const PlanModel pm = plan_model_from_file(*f);
    const int L = pm.hp.n_layer;
    ASSERT_GE(L, 2);
    PlanRequest req;
    req.n_ctx = 512;
    req.n_batch = 32;
    req.gpus = GpuSet{{"CUDA0", "CUDA1"}, {1, 1}};
    req.n_gpu_layers = L + 1;
    const MemoryPlan p = plan_memory(pm, req);
    ASSERT_EQ(p.devices.size(), 3u);
    // Per layer, from the file's table: layers [0, L/2 rounded) on CUDA0, the rest and the head on CUDA1.
    const int first_on_1 = (int)std::floor(L * 0.5 + 0.5);
    uint64_t w0 = 0, w1 = 0, wc = 0;
    for (const auto& t : f->tensors()) {
        const int l = layer_of_tensor_name(t.name);
        if (l >= 0) (l < first_on_1 ? w0 : w1) += t.nbytes;
        else if (t.name == "output.weight" || t.name == "output_norm.weight") w1 += t.nbytes;
        else wc += t.nbytes;
    }
    EXPECT_EQ(p.find("CUDA0")->weights, w0);
    EXPECT_EQ(p.find("CUDA1")->weights, w1);
    EXPECT_EQ(p.find("CPU")->weights, wc);
    const uint64_t kv_layer = kv_layer_bytes_per_token(pm.hp, req.kv_type) * (uint64_t)req.n_ctx;
    EXPECT_EQ(p.find("CUDA0")->kv, kv_layer * (uint64_t)first_on_1);
    EXPECT_EQ(p.find("CUDA1")->kv, kv_layer * (uint64_t)(L - first_on_1));
    EXPECT_EQ(p.find("CPU")->kv, 0u);

    // Suggestion: a budget that holds the base plus one layer's experts on one GPU.
    PlanRequest one = req;
    one.gpus = GpuSet{{"CUDA0"}, {}};
    auto total_one = [&](const std::string& rules) {
        PlanRequest r = one;
        r.tensor_placement = rules;
        return plan_memory(pm, r).find("CUDA0")->total();
    };
    const std::string keep_first = "blk\\.(" + [&] {
        std::string s;
        for (int i = 0; i < L - 1; ++i) s += (i ? "|" : "") + std::to_string(i);
        return s;
    }() + ")\\.ffn_.*_exps=CPU";
    const uint64_t budget = total_one(keep_first);
    const PlacementSuggestion s1 = suggest_placement(pm, one, budget);
    const PlacementSuggestion s2 = suggest_placement(pm, req, budget);
    EXPECT_TRUE(s1.fits);
    EXPECT_TRUE(s2.fits);
    EXPECT_EQ(s1.expert_layers_on_gpu, 1);
    EXPECT_GT(s2.expert_layers_on_gpu, s1.expert_layers_on_gpu);
    ASSERT_EQ(s2.plan.devices.size(), 3u);
    for (size_t d = 1; d < 3; ++d) EXPECT_LE(s2.plan.devices[d].total(), budget) << s2.plan.devices[d].name;
    // The suggestion's rules reproduce its plan.
    PlanRequest again = req;
    again.n_gpu_layers = s2.n_gpu_layers;
    again.tensor_placement = s2.tensor_placement;
    const MemoryPlan p2 = plan_memory(pm, again);
    for (size_t d = 0; d < 3; ++d) EXPECT_EQ(p2.devices[d].total(), s2.plan.devices[d].total());
}

// A budget per GPU: each GPU stays within its own; equal budgets give the single-budget answer.
TEST(MemoryPlan, PerGpuBudgets) {
    IKLLM_REQUIRE_REFDATA();
    auto f = gguf::File::open(model_path("qwen3moe-tiny-f16"), &type_geometry, true);
    const PlanModel pm = plan_model_from_file(*f);
    PlanRequest req;
    req.n_ctx = 512;
    req.n_batch = 32;
    req.gpus = GpuSet{{"CUDA0", "CUDA1"}, {1, 1}};
    PlanRequest full = req;
    full.n_gpu_layers = pm.hp.n_layer + 1;
    const MemoryPlan all = plan_memory(pm, full);
    const uint64_t b0 = all.devices[1].total(), b1 = all.devices[2].total();
    // Enough for everything on CUDA0, half of CUDA1's share on CUDA1.
    const PlacementSuggestion s = suggest_placement(pm, req, std::vector<uint64_t>{b0, b1 / 2});
    EXPECT_TRUE(s.fits);
    ASSERT_EQ(s.vram_budgets, (std::vector<uint64_t>{b0, b1 / 2}));
    EXPECT_LE(s.plan.devices[1].total(), b0);
    EXPECT_LE(s.plan.devices[2].total(), b1 / 2);
    EXPECT_LT(s.expert_layers_on_gpu, pm.hp.n_layer);
    // Equal budgets: as one budget.
    const PlacementSuggestion a = suggest_placement(pm, req, std::vector<uint64_t>{b1, b1});
    const PlacementSuggestion b = suggest_placement(pm, req, b1);
    EXPECT_EQ(a.tensor_placement, b.tensor_placement);
    EXPECT_EQ(a.n_gpu_layers, b.n_gpu_layers);
    EXPECT_EQ(a.expert_layers_on_gpu, b.expert_layers_on_gpu);
    EXPECT_EQ(auto_vram_budget(80ull << 30), (80ull << 30) - (512ull << 20));
    EXPECT_EQ(auto_vram_budget(100u << 20), (100u << 20) - (10u << 20));
}

TEST(PlacementApi, OptionsValidateRules) {
    ikllm_options* o = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &o), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_string(o, "tensor_placement", "exps=CPU, attn=cuda0"), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_string(o, "tensor_placement", "exps=GPU"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ikllm_last_error()).find("exps=GPU"), std::string::npos) << ikllm_last_error();
    EXPECT_EQ(ikllm_options_set_string(o, "tensor_placement", "blk.(=CPU"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ikllm_last_error()).find("invalid regex"), std::string::npos) << ikllm_last_error();
    EXPECT_EQ(ikllm_options_set_string(o, "tensor_split", "3, 1"), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_string(o, "tensor_split", "3,x"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(ikllm_last_error()).find("'x' is not a share"), std::string::npos) << ikllm_last_error();
    EXPECT_EQ(ikllm_options_set_string(o, "tensor_split", "0,0"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_options_set_int(o, "n_gpu_layers", 99), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_int(o, "n_gpu_layers", -1), IKLLM_ERR_INVALID_ARGUMENT);
    int64_t v = 0;
    EXPECT_EQ(ikllm_options_get_int(o, "n_gpu_layers", &v), IKLLM_OK);
    EXPECT_EQ(v, 99);
    ikllm_options_free(o);
}

TEST(PlacementApi, CpuModelQueries) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    ikllm_model* m = nullptr;
    ASSERT_EQ(ikllm_model_load(lib, model_path("llama-tiny-f16").c_str(), nullptr, nullptr, nullptr, nullptr, &m),
              IKLLM_OK);
    ASSERT_EQ(ikllm_model_device_count(m), 1);
    EXPECT_STREQ(ikllm_model_device_name(m, 0), "CPU");
    EXPECT_EQ(ikllm_model_device_name(m, 1), nullptr);
    EXPECT_EQ(ikllm_model_device_name(m, -1), nullptr);
    EXPECT_EQ(ikllm_model_device_weight_bytes(m, 0), ikllm_model_size_bytes(m));
    EXPECT_EQ(ikllm_model_device_weight_bytes(m, 1), 0u);
    int32_t d = -1;
    EXPECT_EQ(ikllm_model_tensor_device(m, "blk.0.attn_q.weight", &d), IKLLM_OK);
    EXPECT_EQ(d, 0);
    EXPECT_EQ(ikllm_model_tensor_device(m, "no.such.tensor", &d), IKLLM_ERR_NOT_FOUND);
    EXPECT_EQ(ikllm_model_tensor_device(m, nullptr, &d), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(ikllm_model_placement_report(m), "");
    EXPECT_EQ(ikllm_model_device_count(nullptr), 0);
    EXPECT_STREQ(ikllm_model_placement_report(nullptr), "");
    ikllm_model_free(m);
    ikllm_lib_free(lib);
}

TEST(PlacementApi, Plan) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    const std::string path = model_path("qwen3moe-tiny-f16");
    ikllm_options* mo = nullptr;
    ikllm_options* so = nullptr;
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), IKLLM_OK);
    ASSERT_EQ(ikllm_options_create(IKLLM_OPTIONS_SESSION, &so), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_int(mo, "n_gpu_layers", 1), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_string(mo, "tensor_placement", "exps=CPU,nothing_here=CPU"), IKLLM_OK);
    ASSERT_EQ(ikllm_options_set_int(so, "n_ctx", 1000), IKLLM_OK);
    char* json = nullptr;
    ASSERT_EQ(ikllm_plan(lib, path.c_str(), mo, so, 0, 0, &json), IKLLM_OK) << ikllm_last_error();
    ASSERT_NE(json, nullptr);
    std::string j = json;
    ikllm_free(json);
    EXPECT_NE(j.find("\"n_ctx\": 1000"), std::string::npos) << j;
    EXPECT_NE(j.find("\"name\": \"CPU\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"weights\": "), std::string::npos) << j;
    EXPECT_NE(j.find("rule 'nothing_here=CPU' matched no tensor"), std::string::npos) << j;
    EXPECT_EQ(j.find("\"suggestion\""), std::string::npos) << j;
    // Same numbers as the planner.
    {
        auto f = gguf::File::open(path, &type_geometry, true);
        PlanRequest req;
        req.n_ctx = 1000;
        req.n_gpu_layers = 1;
        req.tensor_placement = "exps=CPU,nothing_here=CPU";
        const MemoryPlan p = plan_memory(plan_model_from_file(*f), req);
        EXPECT_NE(j.find("\"total\": " + std::to_string(p.devices[0].total())), std::string::npos) << j;
    }
    ASSERT_EQ(ikllm_plan(lib, path.c_str(), nullptr, nullptr, 1u << 30, 0, &json), IKLLM_OK) << ikllm_last_error();
    j = json;
    ikllm_free(json);
    EXPECT_NE(j.find("\"suggestion\": {\"vram_budget\": 1073741824"), std::string::npos) << j;
    EXPECT_NE(j.find("\"fits\": true"), std::string::npos) << j;
    // Errors.
    EXPECT_EQ(ikllm_plan(lib, path.c_str(), so, nullptr, 0, 0, &json), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(json, nullptr);
    EXPECT_EQ(ikllm_plan(lib, path.c_str(), nullptr, nullptr, 0, 1, &json), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_plan(lib, "/nonexistent/model.gguf", nullptr, nullptr, 0, 0, &json), IKLLM_ERR_IO);
    EXPECT_EQ(ikllm_plan(nullptr, path.c_str(), nullptr, nullptr, 0, 0, &json), IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_options_free(mo);
    ikllm_options_free(so);
    ikllm_lib_free(lib);
}

// One read per 4 KiB page; not instrumented, so a sanitizer's shadow-memory checks do not fault
// pages in too.
static __attribute__((no_sanitize_address)) unsigned read_pages(const void* p, uint64_t n) {
    unsigned sink = 0;
    for (uint64_t i = 0; i < n; i += 4096) sink += static_cast<const volatile uint8_t*>(p)[i];
    return sink;
}

// prefault: the mapped file is in the process's page tables once placement returns, so reading
// every page afterwards takes (almost) no page faults, where it takes some per 16 pages without
// (the kernel maps up to 16 pages of a file per fault). Only the reads are counted: nothing in
// the measured loop allocates (sanitizer builds included).
TEST(Placement, PrefaultMapsTheFile) {
    IKLLM_REQUIRE_REFDATA();
    auto faults_reading_all = [](bool prefault, std::string* description) {
        auto f = gguf::File::open(model_path("llama-tiny-f16"), &type_geometry);
        *description = apply_placement(*f, true, PlacementOptions{false, "", prefault});
        const auto ranges = f->mapped_ranges();
        rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        unsigned sink = 0;
        for (auto [p, n] : ranges) sink += read_pages(p, n);
        getrusage(RUSAGE_SELF, &r1);
        (void)sink;
        return (long)(r1.ru_minflt - r0.ru_minflt) + (long)(r1.ru_majflt - r0.ru_majflt);
    };
    std::string on_d, off_d;
    const long off = faults_reading_all(false, &off_d);
    const long on = faults_reading_all(true, &on_d);
    EXPECT_NE(on_d.find("weights prefaulted"), std::string::npos) << on_d;
    EXPECT_EQ(off_d.find("prefault"), std::string::npos) << off_d;
    EXPECT_GT(off, 40) << "reading 5 MB of a fresh mapping should fault pages in";
    EXPECT_LT(on * 5, off) << "with prefault " << on << " faults, without " << off;
}

// The model option reaches placement, and says where it cannot apply.
TEST(PlacementApi, PrefaultOption) {
    IKLLM_REQUIRE_REFDATA();
    for (int mmap : {1, 0}) {
        ikllm_lib* lib = nullptr;
        ASSERT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
        EXPECT_EQ(ikllm_options_set_int(o, "prefault", 1), IKLLM_OK);
        EXPECT_EQ(ikllm_options_set_int(o, "use_mmap", mmap), IKLLM_OK);
        EXPECT_NE(ikllm_options_set_int(o, "prefault", 2), IKLLM_OK);
        ikllm_model* m = nullptr;
        ASSERT_EQ(ikllm_model_load(lib, model_path("llama-tiny-f16").c_str(), o, nullptr, nullptr, nullptr, &m), IKLLM_OK);
        ikllm_options_free(o);
        const std::string placement = ikllm_model_placement(m);
        EXPECT_NE(placement.find(mmap ? "weights prefaulted" : "prefault not needed (weights read at load)"), std::string::npos)
            << placement;
        ikllm_model_free(m);
        ikllm_lib_free(lib);
    }
}

namespace {
std::string placement_with(std::initializer_list<std::pair<const char*, int64_t>> ints,
                           const std::string& model = "/models/llama-tiny-f16.gguf") {
    ikllm_lib* lib = nullptr;
    EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
    for (auto [k, v] : ints) EXPECT_EQ(ikllm_options_set_int(o, k, v), IKLLM_OK) << k;
    ikllm_model* m = nullptr;
    EXPECT_EQ(ikllm_model_load(lib, (test::refdata_dir() + model).c_str(), o, nullptr, nullptr, nullptr, &m), IKLLM_OK);
    ikllm_options_free(o);
    std::string placement = m ? ikllm_model_placement(m) : "";
    ikllm_model_free(m);
    ikllm_lib_free(lib);
    return placement;
}
}  // namespace

// use_mmap -1 (the default) reads a model that fits into memory on huge pages, and keeps the
// mapping where something needs it; explicit values are obeyed and out-of-range ones refused.
TEST(PlacementApi, UseMmapAuto) {
    IKLLM_REQUIRE_REFDATA();
    std::string p = placement_with({});
    EXPECT_TRUE(starts_with(p, "weights in memory (use_mmap auto: fits in available memory); huge pages requested")) << p;
    // Q4_0 -> Q4_0_R8 and Q6_K -> Q6_K_R4 take the same room: the read copy is repacked in place.
    p = placement_with({{"repack", 2}}, "/quant/llama-q-Q4_0.gguf");
    EXPECT_TRUE(starts_with(p, "weights in memory (use_mmap auto: fits in available memory); huge pages")) << p;
    p = placement_with({{"repack", 2}});  // F16 has no interleaved form: nothing to repack
    EXPECT_TRUE(starts_with(p, "weights in memory (use_mmap auto: fits")) << p;
    p = placement_with({{"use_mmap", 1}});
    EXPECT_TRUE(starts_with(p, "weights mmapped;")) << p;
    EXPECT_EQ(p.find("huge pages"), std::string::npos) << p;
    p = placement_with({{"use_mmap", 0}, {"huge_pages", 0}});
    EXPECT_TRUE(starts_with(p, "weights in memory;")) << p;
    EXPECT_EQ(p.find("huge pages"), std::string::npos) << p;
    p = placement_with({{"use_mmap", 1}, {"huge_pages", 1}});
    EXPECT_TRUE(starts_with(p, "weights mmapped; huge pages")) << p;

    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
    EXPECT_NE(ikllm_options_set_int(o, "use_mmap", -2), IKLLM_OK);
    EXPECT_NE(ikllm_options_set_int(o, "use_mmap", 2), IKLLM_OK);
    EXPECT_NE(ikllm_options_set_int(o, "huge_pages", 2), IKLLM_OK);
    ikllm_options_free(o);
}

// A read copy is advised before it is written, so the kernel backs it with huge pages where it
// has them (THP "always" or "madvise"). The report counts the pages from /proc/self/smaps. (No
// control without the advice: the allocator may hand out a block that an earlier test advised.)
TEST(Placement, ReadCopyOnHugePages) {
    IKLLM_REQUIRE_REFDATA();
    auto huge_mib = [](bool huge, std::string* d) {
        auto f = gguf::File::open(model_path("llama-tiny-f16"), &type_geometry, false, huge);
        *d = apply_placement(*f, false, PlacementOptions{true, "", false});
        double got = -1, total = -1;
        const size_t at = d->find("), ");
        if (at != std::string::npos) std::sscanf(d->c_str() + at + 3, "%lf of %lf MiB on huge pages now", &got, &total);
        EXPECT_GE(got, 0) << *d;
        EXPECT_LE(got, total) << *d;
        return got;
    };
    std::string with_d;
    const double with = huge_mib(true, &with_d);
    std::string mode;
    if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
        char buf[128] = {};
        if (std::fgets(buf, sizeof buf, f)) mode = buf;
        std::fclose(f);
    }
    if (mode.find("[never]") != std::string::npos || mode.empty()) GTEST_SKIP() << "THP off on this machine: " << mode;
    if (with == 0) GTEST_SKIP() << "the kernel granted no huge page now (fragmented memory?): " << with_d;
    EXPECT_GE(with, 2) << with_d;  // the 5 MiB copy spans at least one aligned 2 MiB page
}

namespace {
struct ProgressLog {
    std::vector<float> seen;
    int cancel_at = -1;  // return non-zero (cancel) on this call
};
int32_t record_progress(void* user, float p) {
    auto* log = static_cast<ProgressLog*>(user);
    log->seen.push_back(p);
    return (int)log->seen.size() - 1 == log->cancel_at ? 1 : 0;
}
ikllm_status load_with_progress(ProgressLog& log, int64_t use_mmap) {
    ikllm_lib* lib = nullptr;
    EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
    EXPECT_EQ(ikllm_options_set_int(o, "use_mmap", use_mmap), IKLLM_OK);
    ikllm_model* m = nullptr;
    const ikllm_status st =
        ikllm_model_load(lib, model_path("llama-tiny-f16").c_str(), o, record_progress, &log, nullptr, &m);
    ikllm_options_free(o);
    ikllm_model_free(m);
    ikllm_lib_free(lib);
    return st;
}
}  // namespace

// Reading the weights into memory is the long part of a load: it reports progress below 0.7
// and can be cancelled there; the values never go back and end at 1.
TEST(PlacementApi, ReadCopyReportsProgressAndCancels) {
    IKLLM_REQUIRE_REFDATA();
    for (int64_t mmap : {0, 1}) {
        ProgressLog log;
        ASSERT_EQ(load_with_progress(log, mmap), IKLLM_OK);
        ASSERT_GE(log.seen.size(), 3u);
        for (size_t i = 1; i < log.seen.size(); ++i) EXPECT_GE(log.seen[i], log.seen[i - 1]) << i;
        EXPECT_EQ(log.seen.back(), 1.0f);
        // read copy: the read's report (0 before its single 16 MiB piece), then the later steps
        // in [0.7, 1]; mapping: the first step after opening is 0.1
        if (mmap == 0) {
            EXPECT_EQ(log.seen[1], 0.0f);
            EXPECT_GE(log.seen[2], 0.7f);
        } else {
            EXPECT_FLOAT_EQ(log.seen[1], 0.1f);
        }
    }
    ProgressLog cancel;
    cancel.cancel_at = 1;  // the first call inside the read (call 0 is the start of the load)
    EXPECT_EQ(load_with_progress(cancel, 0), IKLLM_CANCELLED);
    EXPECT_EQ(cancel.seen.size(), 2u);
    EXPECT_LT(cancel.seen.back(), 0.7f);
}
