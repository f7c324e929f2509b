// Hyper-parameters of a model, read from GGUF metadata (docs: architectures.md §1, §6).
#pragma once
#include <cstdint>
#include <string>

#include "ops.h"

namespace ikllm {

namespace gguf { class File; }

enum class Arch { llama, qwen2, qwen3, qwen3moe, deepseek2 };
const char* arch_name(Arch a);

struct HParams {
    Arch arch = Arch::llama;
    std::string arch_str;
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;
    int32_t n_embd = 0;
    int32_t n_layer = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t d_k = 0;   // per-head key/query size
    int32_t d_v = 0;   // per-head value size
    int32_t n_rot = 0;
    int32_t n_ff = 0;
    float eps = 1e-5f;
    // MoE
    int32_t n_expert = 0;
    int32_t n_expert_used = 0;
    int32_t n_ff_exp = 0;
    int32_t n_expert_shared = 0;   // deepseek2 shared experts (one fused FFN of n_ff_exp * n_shared)
    int32_t n_dense_lead = 0;      // deepseek2 leading dense layers
    MoeParams moe;                 // gating, normalisation, scale (per architecture)
    // MLA (deepseek2, architectures.md §8)
    int32_t q_lora_rank = 0;       // 0: "lite" (attn_q instead of attn_q_a/attn_q_b)
    int32_t kv_lora_rank = 0;
    int32_t d_nope = 0;            // d_k - n_rot
    float kq_scale = 0.0f;         // attention scale (mscale^2 / sqrt(d_k) for deepseek2)
    bool mla_split_layout = false; // mainline layout: attn_k_b/attn_v_b 3-D, no attn_kv_b
    RopeParams rope;   // resolved RoPE (mode, base, scaling)
};

// Reads and validates the hyper-parameters; throws Error naming the offending key.
HParams read_hparams(const gguf::File& f);

}  // namespace ikllm
