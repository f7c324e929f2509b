// Memory plan and placement suggestion from a GGUF index (memory_plan.h).
#include "model/memory_plan.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/json_escape.h"
#include "gguf/gguf_file.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

namespace ikllm {

namespace {

bool is_expert_tensor(const std::string& name) { return name.find("_exps") != std::string::npos; }

bool is_head(const std::string& name) { return name == "output.weight"; }

// The tensor whose device is layer l's attention device (its KV cache lives there).
// (as the loader decides layer_attn_device: attn_k, else the MLA latent projection, else attn_output).
const char* const kAttnKeys[] = {"attn_k.weight", "attn_kv_a_mqa.weight", "attn_output.weight"};
constexpr int kNumAttnKeys = 3;

}  // namespace

const DeviceBytes* MemoryPlan::find(const std::string& name) const {
    for (const auto& d : devices)
        if (d.name == name) return &d;
    return nullptr;
}

PlanModel plan_model_from_file(const gguf::File& f) {
    PlanModel pm;
    pm.hp = read_hparams(f);
    const gguf::TensorInfo* emb = f.find_tensor("token_embd.weight");
    if (!emb) fail(Status::invalid_file, "missing tensor 'token_embd.weight'");
    if (emb->ne[1] > INT32_MAX) fail(Status::invalid_file, "vocabulary too large");
    pm.hp.n_vocab = (int32_t)emb->ne[1];
    pm.tied_output = f.find_tensor("output.weight") == nullptr;
    const HParams& hp = pm.hp;
    if (pm.tied_output) {
        // The loader gives a tied head that goes to a GPU its own copy named output.weight (the
        // embedding lookup stays with token_embd); on the CPU the head is token_embd itself.
        pm.tensors.push_back({"output.weight", -1, emb->type, emb->nbytes});
        pm.tied_head_index = (int64_t)pm.tensors.size() - 1;
    }
    for (const gguf::TensorInfo& ti : f.tensors()) {
        PlacementTensor t;
        t.name = ti.name;
        t.layer = layer_of_tensor_name(ti.name);
        t.type = ti.type;
        t.bytes = ti.nbytes;
        pm.tensors.push_back(t);
        // MLA products the loader derives from attn_kv_b when the file has no attn_k_b (loader.cpp
        // derive_mla_products): wk_b [d_nope, r_kv, H] in kv_b's float type or Q8_0, wv_b
        // [r_kv, d_v, H] in kv_b's type.
        const std::string suffix = "attn_kv_b.weight", k_suffix = "attn_k_b.weight";
        // And attn_kv_b the loader re-creates from a split file's attn_k_b / attn_v_b (loader.cpp
        // derive_kv_b; only for layers on the CPU, see plan_memory): their common float type or Q8_0.
        if (t.layer >= 0 && ti.name.size() > k_suffix.size() &&
            ti.name.compare(ti.name.size() - k_suffix.size(), k_suffix.size(), k_suffix) == 0) {
            const std::string p = "blk." + std::to_string(t.layer) + ".";
            const gguf::TensorInfo* vi = f.find_tensor(p + "attn_v_b.weight");
            if (f.find_tensor(p + "attn_kv_b.weight") || !vi) continue;
            const bool is_float = ti.type == vi->type &&
                                  (ti.type == quant::T_F32 || ti.type == quant::T_F16 || ti.type == quant::T_BF16);
            const quant::TypeTraits* kt = quant::find_type(is_float ? ti.type : quant::T_Q8_0);
            pm.tensors.push_back({p + "attn_kv_b.weight(derived)", t.layer, kt->id,
                                  (uint64_t)quant::row_bytes(*kt, hp.kv_lora_rank) * hp.n_head * (hp.d_nope + hp.d_v)});
            continue;
        }
        if (t.layer >= 0 && ti.name.size() > suffix.size() &&
            ti.name.compare(ti.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            const std::string p = "blk." + std::to_string(t.layer) + ".";
            if (f.find_tensor(p + "attn_k_b.weight")) continue;
            const bool is_float = ti.type == quant::T_F32 || ti.type == quant::T_F16 || ti.type == quant::T_BF16;
            const quant::TypeTraits* kt = quant::find_type(is_float ? ti.type : quant::T_Q8_0);
            const quant::TypeTraits* vt = quant::find_type(ti.type);
            if (!kt || !vt) continue;
            PlacementTensor k{p + "attn_k_b.weight(derived)", t.layer, kt->id,
                              (uint64_t)quant::row_bytes(*kt, hp.d_nope) * hp.kv_lora_rank * hp.n_head};
            PlacementTensor v{p + "attn_v_b.weight(derived)", t.layer, vt->id,
                              (uint64_t)quant::row_bytes(*vt, hp.kv_lora_rank) * hp.d_v * hp.n_head};
            pm.tensors.push_back(k);
            pm.tensors.push_back(v);
        }
    }
    return pm;
}

uint64_t kv_layer_bytes_per_token(const HParams& hp, uint32_t kv_type) {
    if (hp.kv_lora_rank > 0) return quant::kv_row_bytes(kv_type, (int64_t)hp.kv_lora_rank + hp.n_rot);
    return (uint64_t)hp.n_head_kv * (quant::kv_row_bytes(kv_type, hp.d_k) + quant::kv_row_bytes(kv_type, hp.d_v));
}

uint64_t scratch_estimate(const HParams& hp, int32_t n_ctx, int32_t n_batch, bool layers, bool experts, bool head,
                          bool cpu) {
    const uint64_t nb = (uint64_t)std::max(1, std::min(n_batch, n_ctx));
    const uint64_t E = (uint64_t)hp.n_embd, H = (uint64_t)hp.n_head;
    uint64_t floats = 0;
    if (layers) {
        uint64_t q, k, v;
        if (hp.kv_lora_rank > 0) {
            q = H * ((uint64_t)hp.d_k + hp.kv_lora_rank);
            k = (uint64_t)hp.kv_lora_rank + hp.n_rot;
            v = H * hp.kv_lora_rank;
        } else {
            q = H * hp.d_k;
            k = (uint64_t)hp.n_head_kv * hp.d_k;
            v = (uint64_t)hp.n_head_kv * hp.d_v;
        }
        const uint64_t ff = std::max<uint64_t>((uint64_t)std::max(hp.n_ff, 0),
                                               (uint64_t)std::max(hp.n_ff_exp, 0) * std::max(hp.n_expert_shared, 0));
        floats += nb * (4 * E + q + k + v + H * hp.d_v + 3 * ff);
        floats += nb * H * (uint64_t)std::min(n_ctx, 1024);
    }
    if (experts)
        floats += nb * ((uint64_t)hp.n_expert + (uint64_t)hp.n_expert_used * (3 * (uint64_t)hp.n_ff_exp + E));
    if (head) floats += nb * (uint64_t)hp.n_vocab;
    if (cpu) floats += nb * (E + (uint64_t)hp.n_vocab);
    // MLA layers on the CPU expand the cached latents for batches of >= 128 tokens (session option
    // mla_expand_min_batch's default; deepseek2_graph.cpp): per cell the f32 products of attn_kv_b,
    // the assembled keys and the latent row, at most 1 GiB.
    if (cpu && layers && hp.kv_lora_rank > 0 && nb >= 128) {
        const uint64_t per_cell = H * ((uint64_t)hp.d_nope + hp.d_v + hp.d_nope + hp.n_rot) + hp.kv_lora_rank + hp.n_rot;
        floats += std::min<uint64_t>(per_cell * (uint64_t)n_ctx, (uint64_t)1 << 28);
    }
    return floats * 4;
}

namespace {

// The streamed group a host tensor belongs to ("" = never streamed): see stream_buffer_bytes.
std::string stream_group(const PlanModel& pm, const PlacementTensor& t) {
    const std::string& n = t.name;
    if (n == "token_embd.weight") return pm.tied_output ? n : "";  // a lookup, unless it is the head
    if (n.find("norm") != std::string::npos || n.find("attn_k_b") != std::string::npos ||
        n.find("attn_v_b") != std::string::npos)
        return "";  // elementwise weights; per-head products (mul_mat_heads) run where they live
    const std::string prefix = t.layer >= 0 ? "blk." + std::to_string(t.layer) + "." : "";
    if (is_expert_tensor(n)) return prefix + "exps";
    std::string key = n;
    for (const char* suffix : {".weight", ".bias"}) {
        const size_t len = std::strlen(suffix);
        if (key.size() > len && key.compare(key.size() - len, len, suffix) == 0) key.resize(key.size() - len);
    }
    // Gate and up are one fused product (mul_mat_swiglu), dense or shared expert.
    for (const char* part : {"ffn_gate", "ffn_up"}) {
        const std::string p = prefix + part;
        if (key.compare(0, p.size(), p) == 0) return prefix + "ffn_gateup" + key.substr(p.size());
    }
    return key;
}

}  // namespace

uint64_t stream_buffer_bytes(const PlanModel& pm, const PlanRequest& req, const std::vector<std::string>& device_of,
                             bool* experts, bool* layers) {
    *experts = *layers = false;
    const int32_t nb = std::min(req.n_batch, req.n_ctx);
    if (req.offload_min_batch <= 0 || nb < req.offload_min_batch || req.gpus.names.empty()) return 0;
    struct Group {
        uint64_t bytes = 0;
        bool runs = true;
        bool experts = false, layer = false;
    };
    std::map<std::string, Group> groups;
    for (size_t i = 0; i < pm.tensors.size(); ++i) {
        const PlacementTensor& t = pm.tensors[i];
        if (device_of[i] != "CPU" || (int64_t)i == pm.tied_head_index) continue;
        const std::string key = stream_group(pm, t);
        if (key.empty()) continue;
        Group& g = groups[key];
        g.bytes += (t.bytes + 255) / 256 * 256;
        g.runs = g.runs && req.gpu_supports_type(t.type);
        g.experts = g.experts || is_expert_tensor(t.name);
        g.layer = g.layer || t.layer >= 0;
    }
    uint64_t most = 0;
    for (const auto& [key, g] : groups) {
        if (!g.runs) continue;
        most = std::max(most, g.bytes);
        *experts = *experts || g.experts;
        *layers = *layers || g.layer;
    }
    return most;
}

MemoryPlan plan_memory(const PlanModel& pm, const PlanRequest& req) {
    if (req.n_ctx < 1) fail(Status::invalid_argument, "n_ctx must be at least 1");
    if (req.n_batch < 1) fail(Status::invalid_argument, "n_batch must be at least 1");
    if (req.n_gpu_layers < 0) fail(Status::invalid_argument, "n_gpu_layers must not be negative");
    const HParams& hp = pm.hp;
    const std::vector<PlacementRule> rules = parse_placement_rules(req.tensor_placement);
    PlacementResult pr = place_tensors(pm.tensors, hp.n_layer, req.n_gpu_layers, rules, req.gpus, req.gpu_supports_type);
    MemoryPlan plan;
    plan.devices.push_back({"CPU"});
    for (const std::string& g : req.gpus.names) plan.devices.push_back({g});
    auto dev_index = [&](const std::string& name) -> size_t {
        for (size_t i = 0; i < plan.devices.size(); ++i)
            if (plan.devices[i].name == name) return i;
        return 0;
    };
    const size_t nd = plan.devices.size();
    std::vector<char> has_layers(nd, 0), has_experts(nd, 0), has_head(nd, 0);
    size_t emb_index = 0;
    for (size_t i = 0; i < pm.tensors.size(); ++i)
        if (pm.tensors[i].name == "token_embd.weight") emb_index = i;
    // Per layer: device of its attention and which kAttnKeys entry decided it (lower wins).
    std::vector<size_t> attn_dev(std::max(hp.n_layer, 0), 0);
    std::vector<int> attn_key(std::max(hp.n_layer, 0), kNumAttnKeys);
    for (size_t i = 0; i < pm.tensors.size(); ++i) {
        const PlacementTensor& t = pm.tensors[i];
        const size_t d = dev_index(pr.device_of[i]);
        if ((int64_t)i == pm.tied_head_index && (d == 0 || pr.device_of[i] == pr.device_of[emb_index])) {
            // not copied to a GPU, or token_embd is on that GPU too (the loader shares its bytes):
            // no bytes of its own
            has_head[d == 0 ? dev_index(pr.device_of[emb_index]) : d] = 1;
            continue;
        }
        if (d != 0 && t.name.size() > 25 && t.name.compare(t.name.size() - 25, 25, "attn_kv_b.weight(derived)") == 0)
            continue;  // re-created only for layers on the CPU
        plan.devices[d].weights += t.bytes;
        if (t.layer >= 0) has_layers[d] = 1;
        if (is_expert_tensor(t.name)) has_experts[d] = 1;
        if (is_head(t.name)) has_head[d] = 1;
        if (t.layer >= 0 && t.layer < hp.n_layer) {
            const std::string rest = t.name.substr(t.name.find('.', 4) + 1);
            for (int k = 0; k < kNumAttnKeys; ++k)
                if (rest == kAttnKeys[k] && k < attn_key[t.layer]) {
                    attn_key[t.layer] = k;
                    attn_dev[t.layer] = d;
                }
        }
    }
    const uint64_t kv_tok = kv_layer_bytes_per_token(hp, req.kv_type);
    for (int32_t l = 0; l < hp.n_layer; ++l) {
        plan.devices[attn_dev[l]].kv += kv_tok * (uint64_t)req.n_ctx;
    }
    // Streamed host weights: their products, and so those products' activations, go to the first GPU.
    bool stream_experts = false, stream_layers = false;
    if (nd > 1) {
        plan.devices[1].stream = stream_buffer_bytes(pm, req, pr.device_of, &stream_experts, &stream_layers);
        has_experts[1] = has_experts[1] || stream_experts;
        has_layers[1] = has_layers[1] || stream_layers;
    }
    for (size_t d = 0; d < nd; ++d) {
        uint64_t& sc = plan.devices[d].scratch;
        sc = scratch_estimate(hp, req.n_ctx, req.n_batch, has_layers[d], has_experts[d], has_head[d], d == 0);
        // A GPU mirrors whole activation blocks (the arena's, which at most double what a pool
        // needs, up to 16 MiB each, three pools) and stages small arrays through 1 MiB or more.
        if (d > 0 && sc > 0) sc += std::min<uint64_t>(2 * sc, 48ull << 20) + (1ull << 20);
    }
    plan.device_of = std::move(pr.device_of);
    plan.report = std::move(pr.report);
    return plan;
}

uint64_t auto_vram_budget(uint64_t free) { return free - std::min<uint64_t>(512ull << 20, free / 10); }

PlacementSuggestion suggest_placement(const PlanModel& pm, const PlanRequest& req, uint64_t vram_budget) {
    return suggest_placement(pm, req, std::vector<uint64_t>{vram_budget});
}

PlacementSuggestion suggest_placement(const PlanModel& pm, const PlanRequest& req_in, const std::vector<uint64_t>& budgets) {
    PlanRequest req = req_in;
    if (req.gpus.names.empty()) req.gpus.names = {"CUDA0"};
    if (budgets.empty()) fail(Status::invalid_argument, "no VRAM budget");
    const int32_t n_layer = pm.hp.n_layer;
    auto budget_of = [&](size_t gpu) { return budgets[std::min(gpu, budgets.size() - 1)]; };
    auto fits = [&](const MemoryPlan& p) {
        for (size_t d = 1; d < p.devices.size(); ++d)
            if (p.devices[d].total() > budget_of(d - 1)) return false;
        return true;
    };
    auto plan_with = [&](int32_t ngl, const std::string& rules) {
        PlanRequest r = req;
        r.n_gpu_layers = ngl;
        r.tensor_placement = rules;
        return plan_memory(pm, r);
    };
    // MoE layers (those with routed experts), ascending.
    std::vector<int32_t> moe_layers;
    for (const auto& t : pm.tensors)
        if (t.layer >= 0 && is_expert_tensor(t.name) &&
            (moe_layers.empty() || std::find(moe_layers.begin(), moe_layers.end(), t.layer) == moe_layers.end()))
            moe_layers.push_back(t.layer);
    std::sort(moe_layers.begin(), moe_layers.end());
    // Rule keeping the experts of the MoE layers marked in `cpu` on the CPU.
    auto expert_rule = [&](const std::vector<char>& cpu) -> std::string {
        std::string list;
        size_t n_cpu = 0;
        for (size_t i = 0; i < moe_layers.size(); ++i)
            if (cpu[i]) {
                if (n_cpu++) list += '|';
                list += std::to_string(moe_layers[i]);
            }
        if (n_cpu == 0) return "";
        if (n_cpu == moe_layers.size()) return "ffn_.*_exps=CPU";
        return "blk\\.(" + list + ")\\.ffn_.*_exps=CPU";
    };
    PlacementSuggestion best;
    best.vram_budget = budget_of(0);
    for (size_t g = 0; g < req.gpus.names.size(); ++g) best.vram_budgets.push_back(budget_of(g));
    const int32_t full = n_layer + 1;
    std::vector<char> cpu(moe_layers.size(), 1);
    MemoryPlan base = plan_with(full, expert_rule(cpu));
    if (fits(base)) {
        size_t on_gpu = 0;
        MemoryPlan cur = std::move(base);
        for (size_t i = moe_layers.size(); i-- > 0;) {
            cpu[i] = 0;
            MemoryPlan next = plan_with(full, expert_rule(cpu));
            if (!fits(next)) {
                cpu[i] = 1;
                continue;
            }
            cur = std::move(next);
            ++on_gpu;
        }
        best.n_gpu_layers = full;
        best.expert_layers_on_gpu = (int32_t)on_gpu;
        best.tensor_placement = expert_rule(cpu);
        best.strategy = on_gpu == moe_layers.size() ? "all" : "experts-partial";
        best.plan = std::move(cur);
        best.fits = true;
        return best;
    }
    // Whole layers, ngl-style: the largest count that fits (0 always does: nothing on the GPUs
    // but their scratch, which is 0 when they hold nothing).
    int32_t ngl = n_layer;
    MemoryPlan cur = plan_with(ngl, "");
    while (ngl > 0 && !fits(cur)) cur = plan_with(--ngl, "");
    best.n_gpu_layers = ngl;
    best.strategy = "layers";
    for (int32_t l : moe_layers)
        if (l >= n_layer - ngl) ++best.expert_layers_on_gpu;
    best.fits = fits(cur);
    best.plan = std::move(cur);
    return best;
}

namespace {

// Tensor names and report lines come from the file: keep the JSON ASCII (bytes >= 0x80 -> '?')
// so that it is valid UTF-8 whatever the file holds.
void json_str(const std::string& s, std::string& out) {
    std::string a = s;
    for (char& c : a)
        if ((unsigned char)c >= 0x80) c = '?';
    out += '"';
    json_escape_append(a, out);
    out += '"';
}

void json_devices(const MemoryPlan& p, std::string& out) {
    out += "[";
    for (size_t i = 0; i < p.devices.size(); ++i) {
        const DeviceBytes& d = p.devices[i];
        char buf[320];
        std::snprintf(buf, sizeof buf,
                      "%s{\"name\": \"%s\", \"weights\": %" PRIu64 ", \"kv\": %" PRIu64 ", \"scratch\": %" PRIu64
                      ", \"stream\": %" PRIu64 ", \"total\": %" PRIu64 "}",
                      i ? ", " : "", d.name.c_str(), d.weights, d.kv, d.scratch, d.stream, d.total());
        out += buf;
    }
    out += "]";
}

void json_report(const MemoryPlan& p, std::string& out) {
    out += "[";
    for (size_t i = 0; i < p.report.size(); ++i) {
        if (i) out += ", ";
        json_str(p.report[i], out);
    }
    out += "]";
}

}  // namespace

std::string plan_json(const PlanModel& pm, const PlanRequest& req, const MemoryPlan& plan,
                      const PlacementSuggestion* sug) {
    std::string out = "{";
    out += "\"architecture\": ";
    json_str(pm.hp.arch_str, out);
    out += ", \"n_layer\": " + std::to_string(pm.hp.n_layer);
    out += ", \"n_ctx\": " + std::to_string(req.n_ctx);
    out += ", \"n_batch\": " + std::to_string(req.n_batch);
    out += ", \"offload_min_batch\": " + std::to_string(req.offload_min_batch);
    out += ", \"kv_type\": ";
    json_str(quant::kv_type_name(req.kv_type), out);
    out += ", \"kv_bytes_per_token\": " + std::to_string(kv_layer_bytes_per_token(pm.hp, req.kv_type) * pm.hp.n_layer);
    out += ", \"gpu\": ";
    json_str(req.gpus.names.empty() ? "" : req.gpus.names[0], out);
    out += ", \"gpus\": [";
    for (size_t i = 0; i < req.gpus.names.size(); ++i) {
        if (i) out += ", ";
        json_str(req.gpus.names[i], out);
    }
    out += "]";
    out += std::string(", \"gpu_available\": ") + (req.gpu_present ? "true" : "false");
    out += ", \"requested\": {\"n_gpu_layers\": " + std::to_string(req.n_gpu_layers) + ", \"tensor_placement\": ";
    json_str(req.tensor_placement, out);
    out += ", \"tensor_split\": [";
    for (size_t i = 0; i < req.gpus.split.size(); ++i) {
        char v[32];
        std::snprintf(v, sizeof v, "%s%.6g", i ? ", " : "", req.gpus.split[i]);
        out += v;
    }
    out += "]";
    out += ", \"devices\": ";
    json_devices(plan, out);
    out += ", \"report\": ";
    json_report(plan, out);
    out += "}";
    if (sug) {
        out += ", \"suggestion\": {\"vram_budget\": " + std::to_string(sug->vram_budget) + ", \"vram_budgets\": [";
        for (size_t i = 0; i < sug->vram_budgets.size(); ++i) {
            if (i) out += ", ";
            out += std::to_string(sug->vram_budgets[i]);
        }
        out += "]";
        out += ", \"n_gpu_layers\": " + std::to_string(sug->n_gpu_layers) + ", \"tensor_placement\": ";
        json_str(sug->tensor_placement, out);
        out += ", \"strategy\": ";
        json_str(sug->strategy, out);
        out += ", \"expert_layers_on_gpu\": " + std::to_string(sug->expert_layers_on_gpu);
        out += std::string(", \"fits\": ") + (sug->fits ? "true" : "false");
        out += ", \"devices\": ";
        json_devices(sug->plan, out);
        out += ", \"report\": ";
        json_report(sug->plan, out);
        out += "}";
    }
    out += "}";
    return out;
}

}  // namespace ikllm
