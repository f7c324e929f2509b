// CPU implementations of the op vocabulary (backends/ops.h). Each splits its work over the
// session's thread pool; `Scratch` is reused across calls so the decode path does not allocate
// once warmed up.
#pragma once
#include <cstdint>
#include <vector>

#include "ops.h"
#include "thread_pool.h"

namespace ikllm::cpu {

// moe_route's and moe_ffn's lists, kept between calls so that token generation does not allocate them
// once per layer (capacity stays; every call assigns what it uses).
struct MoeScratch {
    struct Work {
        int32_t expert;
        int64_t first;  // offset of its tokens in the grouped lists
        int64_t n;
    };
    std::vector<int64_t> count, start, fill, tok, slot_of;
    std::vector<uint8_t> big;
    std::vector<Work> work;
    std::vector<const float*> rows_in, rows_h;
    std::vector<std::vector<int32_t>> route_ints;  // moe_route, per thread: expert order, then k
};

struct Scratch {
    MoeScratch moe;
    std::vector<uint8_t> act;                   // encoded activations for mul_mat
    std::vector<uint8_t> act2;                  // second activation buffer (experts' down input)
    std::vector<float> floats;                  // shared float work space (experts' hidden/outputs)
    std::vector<std::vector<float>> per_thread; // per-thread float work space
    float* thread_floats(int thread, size_t n) {
        if (per_thread.size() <= (size_t)thread) per_thread.resize(thread + 1);
        auto& v = per_thread[thread];
        if (v.size() < n) v.resize(n);
        return v.data();
    }
};

void op_get_rows(const Op& op, ThreadPool& pool);
void op_rms_norm(const Op& op, ThreadPool& pool);
void op_add(const Op& op, ThreadPool& pool);
void op_swiglu(const Op& op, ThreadPool& pool);
void op_rope(const Op& op, ThreadPool& pool);
void op_kv_store(const Op& op, ThreadPool& pool);
void op_gather_rows(const Op& op, ThreadPool& pool);
void op_mul_mat(const Op& op, ThreadPool& pool, Scratch& scratch);
// Products of one input by up to kMaxMatmulGroup weights (a layer's Q, K and V): the input is
// encoded once per activation format and all their row chunks share one pool pass.
constexpr size_t kMaxMatmulGroup = 4;
void op_mul_mat_group(const Op* ops, size_t n, ThreadPool& pool, Scratch& scratch);
void op_attention(const Op& op, ThreadPool& pool, Scratch& scratch);
// The bf16 path of op_attention for prompt batches (tile unit, else AVX512-BF16); false when it does
// not apply.
bool op_attention_amx(const Op& op, ThreadPool& pool, Scratch& scratch);
void op_mul_mat_swiglu(const Op& op, ThreadPool& pool, Scratch& scratch);
void op_mul_mat_heads(const Op& op, ThreadPool& pool, Scratch& scratch);
void op_moe_route(const Op& op, ThreadPool& pool, Scratch& scratch);
void op_moe_ffn(const Op& op, ThreadPool& pool, Scratch& scratch);
void op_copy(const Op& op, ThreadPool& pool);

// RoPE of one head vector in place (used by op_rope and by KV shifts).
// `apply_magnitude` = false rotates only (for shifting already-scaled cached keys).
void rope_vector(float* x, int32_t pos, const RopeParams& p, bool apply_magnitude);
// Fills cos/sin caches for one position: n_dims/2 entries each, magnitude folded in.
void rope_cache(float* cos_out, float* sin_out, float pos, const RopeParams& p, bool apply_magnitude);

}  // namespace ikllm::cpu
