// Element-wise and row-wise ops of the CUDA backend: RMSNorm, add, SwiGLU, copy, row gather,
// RoPE and KV store. Semantics (indexing of views included) follow backends/cpu/op_basic.cpp;
// the per-element math lives in op_math.cuh (tested on the host).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda_ops.cuh"
#include "ops_basic_kernels.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

using namespace ikllm::cuda::math;

View view_of(const Tensor& t) {
    View v;
    v.data = static_cast<uint8_t*>(t.data);
    v.ne0 = t.ne[0];
    v.ne1 = t.ne[1];
    v.ne2 = t.ne[2];
    v.ne3 = t.ne[3];
    v.nb1 = (int64_t)t.nb[1];
    v.nb2 = (int64_t)t.nb[2];
    v.nb3 = (int64_t)t.nb[3];
    return v;
}

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("cuda ops: " + what); }

void need(const Tensor* t, const char* op, const char* which) {
    if (!t) bad(std::string(op) + ": missing " + which);
    if (!t->data) bad(std::string(op) + ": " + which + " has no data");
}

void need_f32(const Tensor* t, const char* op, const char* which) {
    need(t, op, which);
    if (t->type != quant::T_F32) bad(std::string(op) + ": " + which + " must be f32");
    if (t->nb[0] != 4) bad(std::string(op) + ": " + which + " must have contiguous rows (nb[0] == 4)");
}

// Blocks for a grid-stride loop over n items with `threads` per block.
unsigned grid_for(int64_t n, int threads) {
    const int64_t b = (n + threads - 1) / threads;
    return (unsigned)std::max<int64_t>(1, std::min<int64_t>(b, 65535LL * 16));
}

constexpr int kThreads = 256;

}  // namespace

void run_rms_norm(const Op& op, const OpEnv& env, const ActRoundOut* round) {
    need_f32(op.src[0], "rms_norm", "src0");
    need_f32(op.dst, "rms_norm", "dst");
    if (op.src[1]) {
        need_f32(op.src[1], "rms_norm", "gain");
        if (op.src[1]->ne[0] < op.src[0]->ne[0]) bad("rms_norm: gain shorter than the row");
    }
    const Tensor& x = *op.src[0];
    const int64_t n = x.n_rows();
    if (n <= 0 || x.ne[0] <= 0) return;
    if (n > 0x7fffffffLL) bad("rms_norm: too many rows");
    const float* gain = op.src[1] ? static_cast<const float*>(op.src[1]->data) : nullptr;
    // Few rows (generation): a whole 1024-thread block per row; one 256-thread block took 15 us
    // for a 4096-value row on an H200 (the double-precision sums run in series per thread).
    const int threads = n < 2 * (int64_t)env.sm_count ? 1024 : kThreads;
    ActRoundOut ro;
    if (round) {
        const Tensor& y = *op.dst;
        if (y.ne[2] != 1 || y.ne[3] != 1) bad("rms_norm: rounding needs rows [K, T]");
        ro = *round;
    }
    IKLLM_LAUNCH((unsigned)n, threads, 0, env.on(), rms_norm_kernel)(view_of(x), view_of(*op.dst), gain, op.f[0], ro);
    IKLLM_CUDA_LAUNCHED("rms_norm_kernel");
}

void run_add(const Op& op, const OpEnv& env) {
    need_f32(op.src[0], "add", "src0");
    need_f32(op.src[1], "add", "src1");
    need_f32(op.dst, "add", "dst");
    const Tensor& a = *op.src[0];
    const int64_t rows = a.n_rows(), total = rows * a.ne[0];
    if (total <= 0) return;
    IKLLM_LAUNCH(grid_for(total, kThreads), kThreads, 0, env.on(), add_kernel)(view_of(a), view_of(*op.src[1]),
                                                                       view_of(*op.dst), rows);
    IKLLM_CUDA_LAUNCHED("add_kernel");
}

void run_swiglu(const Op& op, const OpEnv& env) {
    need_f32(op.src[0], "swiglu", "src0");
    need_f32(op.src[1], "swiglu", "src1");
    need_f32(op.dst, "swiglu", "dst");
    const Tensor& g = *op.src[0];
    const int64_t rows = g.n_rows(), total = rows * g.ne[0];
    if (total <= 0) return;
    IKLLM_LAUNCH(grid_for(total, kThreads), kThreads, 0, env.on(), swiglu_kernel)(view_of(g), view_of(*op.src[1]),
                                                                          view_of(*op.dst), rows);
    IKLLM_CUDA_LAUNCHED("swiglu_kernel");
}

void run_copy(const Op& op, const OpEnv& env) {
    need_f32(op.src[0], "copy", "src0");
    need_f32(op.dst, "copy", "dst");
    const Tensor& s = *op.src[0];
    const int64_t total = s.n_elements();
    if (total <= 0) return;
    IKLLM_LAUNCH(grid_for(total, kThreads), kThreads, 0, env.on(), copy_kernel)(view_of(s), view_of(*op.dst));
    IKLLM_CUDA_LAUNCHED("copy_kernel");
}

void run_gather_rows(const Op& op, const OpEnv& env) {
    need_f32(op.src[0], "gather_rows", "src0");
    need_f32(op.dst, "gather_rows", "dst");
    if (op.n_i32 <= 0) return;
    if (!op.i32) bad("gather_rows: no row ids");
    const Tensor& s = *op.src[0];
    const int64_t total = op.n_i32 * s.ne[0];
    if (total <= 0) return;
    IKLLM_LAUNCH(grid_for(total, kThreads), kThreads, 0, env.on(), gather_rows_kernel)(view_of(s), view_of(*op.dst), op.i32,
                                                                               op.n_i32);
    IKLLM_CUDA_LAUNCHED("gather_rows_kernel");
}

namespace {

// Checks a rope op; the grid rows its heads take (groups of 4 heads for token steps, a token's
// heads together for batches), from grid row `first`.
RopeJob rope_job(const Op& op, int32_t first) {
    need_f32(op.dst, "rope", "dst");
    const Tensor& x = *op.dst;
    const RopeParams& p = op.rope;
    if (p.n_dims % 2 != 0) bad("rope: n_dims must be even");
    if (p.n_dims > x.ne[0]) bad("rope: n_dims larger than the head size");
    if (!op.i32) bad("rope: no positions");
    if (x.ne[2] > 0x7fffffffLL) bad("rope: too many tokens");
    if (sizeof(float) * (size_t)p.n_dims > 48 * 1024) bad("rope: n_dims too large");
    const int64_t heads = x.ne[1];
    const int64_t per_block = x.ne[2] < 32 ? std::min<int64_t>(heads, 4) : heads;
    const int64_t groups = (heads + per_block - 1) / per_block;
    if (first + groups > 65535 || per_block * (p.n_dims / 2) > 0x7fffffffLL) bad("rope: too many heads");
    RopeJob j;
    j.x = view_of(x);
    j.heads_per_block = (int32_t)per_block;
    j.first = first;
    return j;
}

int32_t rope_groups(const RopeJob& j) { return (int32_t)((j.x.ne1 + j.heads_per_block - 1) / j.heads_per_block); }

bool rope_empty(const Op& op) { return op.rope.n_dims <= 0 || op.dst->ne[2] <= 0 || op.dst->ne[1] <= 0; }

void launch_rope(const RopeJob& ja, const RopeJob& jb, int32_t rows, const Op& op, const OpEnv& env) {
    const RopeConsts c = rope_consts(op.rope);
    const dim3 grid((unsigned)ja.x.ne2, (unsigned)rows);
    IKLLM_LAUNCH(grid, kThreads, sizeof(float) * 2 * (size_t)c.half, env.on(), rope_kernel)(ja, jb, op.i32, c,
                                                                                      op.rope.freq_factors);
    IKLLM_CUDA_LAUNCHED("rope_kernel");
}

bool same_rope(const RopeParams& a, const RopeParams& b) {
    return a.mode == b.mode && a.n_dims == b.n_dims && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
           a.ext_factor == b.ext_factor && a.attn_factor == b.attn_factor && a.beta_fast == b.beta_fast &&
           a.beta_slow == b.beta_slow && a.n_ctx_orig == b.n_ctx_orig && a.freq_factors == b.freq_factors;
}

}  // namespace

void run_rope(const Op& op, const OpEnv& env) {
    need_f32(op.dst, "rope", "dst");
    if (rope_empty(op)) return;
    const RopeJob j = rope_job(op, 0);
    RopeJob none = j;
    none.first = rope_groups(j);  // every grid row is j's
    launch_rope(j, none, rope_groups(j), op, env);
}

bool rope_pair_fusable(const Op& a, const Op& b) {
    if (a.kind != OpKind::rope || b.kind != OpKind::rope || !a.dst || !b.dst || a.i32 != b.i32 || a.n_i32 != b.n_i32 ||
        !same_rope(a.rope, b.rope) || a.dst->ne[2] != b.dst->ne[2] || rope_empty(a) || rope_empty(b))
        return false;
    // In place on each: the two tensors' bytes must be apart (heads of q and k).
    auto extent = [](const Tensor& t) {
        const uintptr_t lo = reinterpret_cast<uintptr_t>(t.data);
        return std::make_pair(lo, lo + (uint64_t)(t.ne[2] - 1) * t.nb[2] + (uint64_t)(t.ne[1] - 1) * t.nb[1] +
                                      4 * (uint64_t)t.ne[0]);
    };
    const auto [alo, ahi] = extent(*a.dst);
    const auto [blo, bhi] = extent(*b.dst);
    return ahi <= blo || bhi <= alo;
}

void run_rope_pair(const Op& a, const Op& b, const OpEnv& env) {
    const RopeJob ja = rope_job(a, 0);
    const RopeJob jb = rope_job(b, rope_groups(ja));
    launch_rope(ja, jb, jb.first + rope_groups(jb), a, env);
}

namespace {

// Checks a kv_store op: its job (width 0: nothing to store).
KvJob kv_job(const Op& op) {
    need_f32(op.src[0], "kv_store", "src0");
    need(op.dst, "kv_store", "cache");
    KvJob j;
    if (op.n_i32 <= 0) return j;
    if (!op.i32) bad("kv_store: no cell indices");
    const Tensor& src = *op.src[0];
    const Tensor& cache = *op.dst;
    if (cache.ne[0] <= 0) return j;
    if (src.ne[0] < cache.ne[0]) bad("kv_store: source rows shorter than the cache rows");
    const uint32_t type = cache.type;
    if (type == quant::T_Q8_0) {
        if (cache.ne[0] % 32 != 0) bad("kv_store: q8_0 rows need a multiple of 32 values");
    } else if (type != quant::T_F32 && type != quant::T_F16 && type != quant::T_BF16) {
        bad("kv_store: unsupported cache type " + std::to_string(type));
    }
    j.s = view_of(src);
    j.d = view_of(cache);
    j.width = cache.ne[0];
    return j;
}

void launch_kv_store(const KvJob& ja, const KvJob& jb, uint32_t type, const Op& op, const OpEnv& env) {
    if (type == quant::T_Q8_0) {
        const int64_t total = op.n_i32 * ((ja.width + jb.width) / 32);
        IKLLM_LAUNCH(grid_for(total, 128), 128, 0, env.on(), kv_store_q8_0_kernel)(ja, jb, op.i32, op.n_i32);
        IKLLM_CUDA_LAUNCHED("kv_store_q8_0_kernel");
    } else {
        const int64_t total = op.n_i32 * (ja.width + jb.width);
        IKLLM_LAUNCH(grid_for(total, kThreads), kThreads, 0, env.on(), kv_store_elem_kernel)(ja, jb, type, op.i32, op.n_i32);
        IKLLM_CUDA_LAUNCHED("kv_store_elem_kernel");
    }
}

}  // namespace

void run_kv_store(const Op& op, const OpEnv& env) {
    const KvJob j = kv_job(op);
    if (j.width == 0) return;
    launch_kv_store(j, KvJob{}, op.dst->type, op, env);
}

bool kv_store_pair_fusable(const Op& a, const Op& b) {
    return a.kind == OpKind::kv_store && b.kind == OpKind::kv_store && a.dst && b.dst && a.src[0] && b.src[0] &&
           a.i32 == b.i32 && a.n_i32 == b.n_i32 && a.n_i32 > 0 && a.dst->type == b.dst->type && a.dst->data != b.dst->data;
}

void run_kv_store_pair(const Op& a, const Op& b, const OpEnv& env) {
    const KvJob ja = kv_job(a), jb = kv_job(b);
    if (ja.width == 0 || jb.width == 0) {  // one of them stores nothing: the other alone
        if (ja.width) launch_kv_store(ja, KvJob{}, a.dst->type, a, env);
        if (jb.width) launch_kv_store(jb, KvJob{}, b.dst->type, b, env);
        return;
    }
    launch_kv_store(ja, jb, a.dst->type, a, env);
}

}  // namespace ikllm::cuda
