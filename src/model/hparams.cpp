#include "model/hparams.h"

#include <cmath>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace ikllm {

const char* arch_name(Arch a) {
    switch (a) {
        case Arch::llama: return "llama";
        case Arch::qwen2: return "qwen2";
        case Arch::qwen3: return "qwen3";
        case Arch::qwen3moe: return "qwen3moe";
        case Arch::deepseek2: return "deepseek2";
    }
    return "?";
}

namespace {
// A key that may be a scalar or a per-layer array; non-uniform arrays are unsupported.
uint32_t per_layer_u32(const gguf::File& f, const std::string& key, uint32_t def, int32_t n_layer) {
    const gguf::Value* v = f.find(key);
    if (!v) return def;
    if (v->type != gguf::ValueType::array) return f.get_u32(key);
    if ((int64_t)v->nums.size() != n_layer)
        fail(Status::invalid_file, "metadata key '" + key + "': array has " + std::to_string(v->nums.size()) +
             " entries, expected one per layer (" + std::to_string(n_layer) + ")");
    if (v->nums.empty()) return def;
    for (double x : v->nums)
        if (x != v->nums[0]) fail(Status::unsupported, "metadata key '" + key + "': per-layer values differ (unsupported)");
    if (v->nums[0] < 0 || v->nums[0] > 1e9) fail(Status::invalid_file, "metadata key '" + key + "': value out of range");
    return (uint32_t)v->nums[0];
}

void check_range(const std::string& key, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
        fail(Status::invalid_file, "metadata key '" + key + "' = " + std::to_string(v) + " is out of range [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]");
}
void read_deepseek2(const gguf::File& f, const std::string& p, HParams& hp) {
    hp.n_dense_lead = (int32_t)f.get_u32(p + "leading_dense_block_count");
    check_range(p + "leading_dense_block_count", hp.n_dense_lead, 0, hp.n_layer);
    hp.q_lora_rank = (int32_t)f.get_u32_or(p + "attention.q_lora_rank", 0);
    hp.kv_lora_rank = (int32_t)f.get_u32(p + "attention.kv_lora_rank");
    check_range(p + "attention.kv_lora_rank", hp.kv_lora_rank, 1, 1 << 16);
    hp.n_ff_exp = (int32_t)f.get_u32_or(p + "expert_feed_forward_length", 0);
    hp.n_expert_shared = (int32_t)f.get_u32_or(p + "expert_shared_count", 0);
    hp.moe.scale = f.get_f32_or(p + "expert_weights_scale", 1.0f);
    hp.moe.norm = f.get_bool_or(p + "expert_weights_norm", false);
    uint32_t gating = f.get_u32_or(p + "expert_gating_func", 0);
    if (gating == 0) gating = (hp.n_layer == 47 || hp.n_layer == 48) ? 2 : 1;  // §7.3 default
    if (gating != 1 && gating != 2)
        fail(Status::unsupported, "expert_gating_func " + std::to_string(gating) + " is not supported for deepseek2");
    hp.moe.gating = (MoeGating)gating;
    if (hp.n_head_kv == 1 && hp.n_head > 1) {
        // Mainline layout (§8.7): the per-head sizes are in the *_mla keys.
        hp.mla_split_layout = true;
        hp.n_head_kv = hp.n_head;
        hp.d_k = (int32_t)f.get_u32(p + "attention.key_length_mla");
        hp.d_v = (int32_t)f.get_u32(p + "attention.value_length_mla");
    }
    if (hp.n_head_kv != hp.n_head) fail(Status::invalid_file, "deepseek2 needs head_count_kv == head_count");
    if (hp.n_rot <= 0 || hp.n_rot >= hp.d_k) fail(Status::invalid_file, "deepseek2: rope.dimension_count must be below key_length");
    hp.d_nope = hp.d_k - hp.n_rot;
    if (hp.n_expert > 0 && hp.n_ff_exp <= 0)
        fail(Status::invalid_file, "deepseek2: expert_feed_forward_length is required with experts");
}

}  // namespace

HParams read_hparams(const gguf::File& f) {
    HParams hp;
    hp.arch_str = f.get_str("general.architecture");
    const std::string& a = hp.arch_str;
    if (a == "llama") hp.arch = Arch::llama;
    else if (a == "qwen2") hp.arch = Arch::qwen2;
    else if (a == "qwen3") hp.arch = Arch::qwen3;
    else if (a == "qwen3moe") hp.arch = Arch::qwen3moe;
    else if (a == "deepseek2") hp.arch = Arch::deepseek2;
    else fail(Status::unsupported, "unsupported model architecture '" + a + "'");
    const std::string p = a + ".";

    hp.n_layer = (int32_t)f.get_u32(p + "block_count");
    check_range(p + "block_count", hp.n_layer, 1, 512);
    hp.n_ctx_train = (int32_t)std::min<uint32_t>(f.get_u32(p + "context_length"), INT32_MAX);
    hp.n_embd = (int32_t)f.get_u32(p + "embedding_length");
    check_range(p + "embedding_length", hp.n_embd, 1, 1 << 20);
    hp.n_ff = (int32_t)per_layer_u32(f, p + "feed_forward_length", 0, hp.n_layer);
    hp.n_head = (int32_t)per_layer_u32(f, p + "attention.head_count", 0, hp.n_layer);
    check_range(p + "attention.head_count", hp.n_head, 1, 1 << 14);
    hp.n_head_kv = (int32_t)per_layer_u32(f, p + "attention.head_count_kv", (uint32_t)hp.n_head, hp.n_layer);
    check_range(p + "attention.head_count_kv", hp.n_head_kv, 1, hp.n_head);
    if (hp.n_head % hp.n_head_kv != 0)
        fail(Status::invalid_file, "head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
             std::to_string(hp.n_head_kv));
    hp.d_k = (int32_t)f.get_u32_or(p + "attention.key_length", (uint32_t)(hp.n_embd / hp.n_head));
    hp.d_v = (int32_t)f.get_u32_or(p + "attention.value_length", (uint32_t)(hp.n_embd / hp.n_head));
    check_range(p + "attention.key_length", hp.d_k, 1, 1 << 16);
    check_range(p + "attention.value_length", hp.d_v, 1, 1 << 16);
    hp.n_rot = (int32_t)f.get_u32_or(p + "rope.dimension_count", (uint32_t)hp.d_k);
    hp.eps = (float)f.get_f64(p + "attention.layer_norm_rms_epsilon");
    if (!(hp.eps >= 0) || hp.eps > 1) fail(Status::invalid_file, "layer_norm_rms_epsilon out of range");
    hp.n_expert = (int32_t)f.get_u32_or(p + "expert_count", 0);
    hp.n_expert_used = (int32_t)f.get_u32_or(p + "expert_used_count", 0);
    check_range(p + "expert_count", hp.n_expert, 0, 512);
    check_range(p + "expert_used_count", hp.n_expert_used, 0, hp.n_expert);
    if ((hp.n_expert > 0) != (hp.n_expert_used > 0))
        fail(Status::invalid_file, "expert_count and expert_used_count must both be zero or both be positive");

    if (hp.arch == Arch::qwen3moe) {
        hp.n_ff_exp = (int32_t)f.get_u32_or(p + "expert_feed_forward_length", 0);
        if (hp.n_ff_exp == 0 && hp.n_expert_used > 0) hp.n_ff_exp = hp.n_ff / hp.n_expert_used;
        hp.moe.gating = MoeGating::softmax;
        hp.moe.norm = true;  // the reference hard-codes the renormalisation for qwen3moe (§7.2)
        hp.moe.scale = 1.0f;
    }
    if (hp.arch == Arch::deepseek2) read_deepseek2(f, p, hp);
    if (hp.arch != Arch::deepseek2) {
        if (hp.d_k != hp.d_v || hp.n_rot != hp.d_k)
            fail(Status::unsupported, "architecture " + a + " requires key_length == value_length == rope.dimension_count");
    }
    if (hp.n_rot % 2 != 0 || hp.n_rot > hp.d_k) fail(Status::invalid_file, "invalid rope.dimension_count " + std::to_string(hp.n_rot));
    if ((hp.arch == Arch::qwen3moe) && hp.n_expert == 0) fail(Status::invalid_file, "n_expert must be > 0 for qwen3moe");

    // RoPE scaling (§3.3): resolved once into RopeParams.
    RopeParams& r = hp.rope;
    r.mode = (hp.arch == Arch::llama || hp.arch == Arch::deepseek2) ? RopeMode::norm : RopeMode::neox;
    r.n_dims = hp.n_rot;
    r.freq_base = f.get_f32_or(p + "rope.freq_base", 10000.0f);
    if (!(r.freq_base > 0)) fail(Status::invalid_file, "rope.freq_base must be positive");
    const std::string scaling = f.get_str_or(p + "rope.scaling.type", "linear");
    if (scaling != "none" && scaling != "linear" && scaling != "yarn")
        fail(Status::unsupported, "unsupported rope.scaling.type '" + scaling + "'");
    float factor = f.get_f32_or(p + "rope.scaling.factor", 0.0f);
    if (!f.has(p + "rope.scaling.factor")) factor = f.get_f32_or(p + "rope.scale_linear", 0.0f);
    if (!(factor >= 0)) fail(Status::invalid_file, "rope scaling factor must be >= 0");
    r.freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    // "none" forces identity scaling only where the reference applies it through the context (§3.4).
    if (scaling == "none" && (hp.arch == Arch::qwen2 || hp.arch == Arch::deepseek2)) r.freq_scale = 1.0f;
    r.ext_factor = scaling == "yarn" ? 1.0f : 0.0f;
    r.attn_factor = f.get_f32_or(p + "rope.scaling.attn_factor", 1.0f);
    r.beta_fast = 32.0f;
    r.beta_slow = 1.0f;
    r.n_ctx_orig = (int32_t)f.get_u32_or(p + "rope.scaling.original_context_length", (uint32_t)hp.n_ctx_train);
    hp.kq_scale = 1.0f / std::sqrt((float)hp.d_k);
    if (hp.arch == Arch::deepseek2) {
        // §8.4: the YaRN temperature goes into kq_scale; RoPE's own magnitude cancels to 1.
        const float yarn_log_mul = f.get_f32_or(p + "rope.scaling.yarn_log_multiplier", 0.0f);
        const float mscale = r.attn_factor * (1.0f + yarn_log_mul * std::log(1.0f / r.freq_scale));
        hp.kq_scale = mscale * mscale / std::sqrt((float)hp.d_k);
        r.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / r.freq_scale));
    }
    return hp;
}

}  // namespace ikllm
