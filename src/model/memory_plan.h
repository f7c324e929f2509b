// Memory plan of a model file WITHOUT loading its weights (docs/placement.md): bytes per device
// for weights (placement as tensor_placement.h decides it), KV cache (each layer's cells on the
// device of that layer's attention weights) and an estimate of activation scratch; plus a
// placement suggestion for a VRAM budget.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/hparams.h"
#include "model/tensor_placement.h"

namespace ikllm {

namespace gguf { class File; }

// What the planner needs from a file: hyper-parameters and the weight tensors the loader keeps
// (file tensors plus tensors the loader derives, e.g. MLA attn_k_b/attn_v_b from attn_kv_b).
struct PlanModel {
    HParams hp;
    std::vector<PlacementTensor> tensors;
    bool tied_output = false;  // no output.weight: the head is token_embd
    // Tied head: index of a virtual "output.weight" (token_embd's type and bytes) that counts
    // only when placed on a GPU (the loader then makes that copy); -1 otherwise.
    int64_t tied_head_index = -1;
};
PlanModel plan_model_from_file(const gguf::File& f);

struct PlanRequest {
    int32_t n_ctx = 4096;
    int32_t n_batch = 512;
    uint32_t kv_type = 1;  // quant::T_F16
    int32_t n_gpu_layers = 0;
    std::string tensor_placement;  // rules text (parse_placement_rules)
    // The GPUs to plan for and their shares of the offloaded layers (no names = the CPU only).
    GpuSet gpus{{"CUDA0"}, {}};
    std::function<bool(uint32_t)> gpu_supports_type = default_gpu_supports_type;
    bool gpu_present = false;  // informational (JSON "gpu_available"): gpus are real devices
    // Session option offload_min_batch: matrix products on at least this many tokens whose weights
    // stay in host memory stream them to the first GPU (0 = never; see stream_buffer_bytes).
    int32_t offload_min_batch = 0;
};

struct DeviceBytes {
    std::string name;
    uint64_t weights = 0, kv = 0, scratch = 0;
    uint64_t stream = 0;  // the first GPU's buffer for streamed host weights (offload_min_batch)
    uint64_t total() const { return weights + kv + scratch + stream; }
};

struct MemoryPlan {
    std::vector<DeviceBytes> devices;     // [0] = CPU, then one per GPU of req.gpus
    std::vector<std::string> device_of;   // per PlanModel tensor
    std::vector<std::string> report;      // placement report lines
    const DeviceBytes* find(const std::string& name) const;
};

// KV bytes per token of one layer (0 when the layer has no cache).
uint64_t kv_layer_bytes_per_token(const HParams& hp, uint32_t kv_type);

// Activation scratch estimate (bytes) of a device given what it holds:
//   layers   (any blk.N tensor):  4 B x n_b x (4 n_embd + q + k + v + attn_out + 3 n_ff_max)
//                                 + 4 B x n_b x n_head x min(n_ctx, 1024)    (attention score tile)
//   experts  (any *_exps tensor): 4 B x n_b x (n_expert + n_expert_used x (3 n_ff_exp + n_embd))
//   head     (the output matrix): 4 B x n_b x n_vocab                        (logits)
//   cpu      (always):            4 B x n_b x (n_embd + n_vocab)             (input rows, host logits)
// with n_b = min(n_batch, n_ctx), q/k/v the projected widths (MLA: n_head x (d_k + kv_lora_rank)
// queries, kv_lora_rank + n_rot latent), n_ff_max the widest dense or shared-expert FFN.
uint64_t scratch_estimate(const HParams& hp, int32_t n_ctx, int32_t n_batch, bool layers, bool experts, bool head,
                          bool cpu);

// Bytes of the buffer the scheduler streams host weights through (scheduler.cpp stream_weights):
// the largest group of host-resident weights one product reads, each tensor rounded up to 256 B.
// Groups: a layer's routed experts (moe_ffn), its gate + up pair (fused, dense or shared expert),
// any other matrix alone; only groups whose every type the GPU runs. 0 unless offload_min_batch > 0,
// min(n_batch, n_ctx) reaches it and there is a GPU. *experts / *layers: a streamed group is a
// layer's routed experts / belongs to a layer (their activations then also need GPU scratch).
uint64_t stream_buffer_bytes(const PlanModel& pm, const PlanRequest& req, const std::vector<std::string>& device_of,
                             bool* experts, bool* layers);

// Throws Error(invalid_argument) for bad rules / sizes.
MemoryPlan plan_memory(const PlanModel& pm, const PlanRequest& req);

struct PlacementSuggestion {
    uint64_t vram_budget = 0;            // the first GPU's
    std::vector<uint64_t> vram_budgets;  // per GPU of req.gpus
    int32_t n_gpu_layers = 0;
    std::string tensor_placement;   // rules text ("" = none)
    int32_t expert_layers_on_gpu = 0;
    std::string strategy;           // "all", "experts-partial", "layers"
    bool fits = false;              // GPU total <= budget
    MemoryPlan plan;
};

// Fills the GPUs (req.gpus; CUDA0 when none), each within vram_budget bytes:
//   1. everything but the routed experts (tensors named *_exps*): n_gpu_layers = n_layer + 1 with
//      rule "ffn_.*_exps=CPU", KV cache and scratch (layers split over the GPUs by req.gpus.split);
//      then whole layers' routed experts, from the LAST MoE layer downwards, each onto its layer's
//      GPU when that still fits (a layer that does not fit is skipped, earlier layers may still fit
//      on another GPU); the rule then lists the MoE layers whose experts stay on the CPU
//      ("blk\.(1|2|3)\.ffn_.*_exps=CPU"); all of them fitting gives no rule;
//   2. if even step 1's base does not fit: the largest n_gpu_layers (whole layers, last ones
//      first, n_layer + 1 = with the output head) that fits, no rules.
// req.n_gpu_layers / req.tensor_placement are ignored.
PlacementSuggestion suggest_placement(const PlanModel& pm, const PlanRequest& req, uint64_t vram_budget);
// The same with a budget per GPU (the last one repeats for further GPUs).
PlacementSuggestion suggest_placement(const PlanModel& pm, const PlanRequest& req, const std::vector<uint64_t>& budgets);

// What the planner budgets on a GPU with `free` bytes free: the rest after min(512 MiB, free / 10)
// for what the plan does not count (the CUDA context, its kernels, allocator rounding).
uint64_t auto_vram_budget(uint64_t free);

// JSON text of a plan (docs/placement.md "JSON"). suggestion may be null.
std::string plan_json(const PlanModel& pm, const PlanRequest& req, const MemoryPlan& plan,
                      const PlacementSuggestion* suggestion);

}  // namespace ikllm
