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
    RopeParams rope;   // resolved RoPE (mode, base, scaling)
};

// Reads and validates the hyper-parameters; throws Error naming the offending key.
HParams read_hparams(const gguf::File& f);

}  // namespace ikllm
