// Element-wise and row-wise ops of the CUDA backend: RMSNorm, add, SwiGLU, copy, row gather,
// RoPE and KV store. Semantics (indexing of views included) follow backends/cpu/op_basic.cpp;
// the per-element math lives in op_math.cuh (tested on the host).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "act_round_kernel.cuh"
#include "cuda_ops.cuh"
#include "op_math.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

using namespace ikllm::cuda::math;

// A tensor's data pointer and strides, passed by value to kernels.
struct View {
    uint8_t* data;
    int64_t ne0, ne1, ne2, ne3;
    int64_t nb1, nb2, nb3;
};

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

// ---- rms_norm -------------------------------------------------------------------------------
// One block per row (i1, i2, i3); the sum of squares in double like the CPU. With ro.x the
// block then rounds its output row for the product after it (rows [K, T]: row r is token r).
__global__ void rms_norm_kernel(View x, View y, const float* gain, float eps, ActRoundOut ro) {
    const int64_t r = blockIdx.x;
    const int64_t i1 = r % x.ne1, i2 = (r / x.ne1) % x.ne2, i3 = r / (x.ne1 * x.ne2);
    const float* in = reinterpret_cast<const float*>(x.data + i1 * x.nb1 + i2 * x.nb2 + i3 * x.nb3);
    float* out = reinterpret_cast<float*>(y.data + i1 * y.nb1 + i2 * y.nb2 + i3 * y.nb3);
    const int64_t n = x.ne0;
    double sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const double v = (double)in[i];
        sum += v * v;
    }
    __shared__ double part[32];
    __shared__ float s_scale;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) part[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        double tot = 0;
        const int nw = (blockDim.x + 31) / 32;
        for (int w = 0; w < nw; ++w) tot += part[w];
        const float mean = (float)(tot / (double)n);
        s_scale = div_rn(1.0f, sqrtf(add_rn(mean, eps)));
    }
    __syncthreads();
    const float s = s_scale;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = mul_rn(in[i], s);
        out[i] = gain ? mul_rn(v, gain[i]) : v;
    }
    if (!ro.x) return;
    __syncthreads();  // the row's outputs, written by the whole block, are visible to it now
    const int nw = blockDim.x / 32;
    for (int64_t seg = warp; seg < (n + 255) / 256; seg += nw)
        act_round_segment(out, n, seg, ro.mode, ro.f16, ro.x + r * n, ro.q ? ro.q + r * n : nullptr,
                          ro.d ? ro.d + r * (n / 32) : nullptr);
}

// ---- add / swiglu: rows r at r * nb[1] (as the CPU indexes them) ----------------------------
__global__ void add_kernel(View a, View b, View y, int64_t n_rows) {
    const int64_t ne0 = a.ne0, total = n_rows * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / ne0, i = idx % ne0;
        const float va = reinterpret_cast<const float*>(a.data + r * a.nb1)[i];
        const float vb = reinterpret_cast<const float*>(b.data + r * b.nb1)[i];
        reinterpret_cast<float*>(y.data + r * y.nb1)[i] = add_rn(va, vb);
    }
}

__global__ void swiglu_kernel(View g, View u, View y, int64_t n_rows) {
    const int64_t ne0 = g.ne0, total = n_rows * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / ne0, i = idx % ne0;
        const float vg = reinterpret_cast<const float*>(g.data + r * g.nb1)[i];
        const float vu = reinterpret_cast<const float*>(u.data + r * u.nb1)[i];
        reinterpret_cast<float*>(y.data + r * y.nb1)[i] = silu_mul(vg, vu);
    }
}

// ---- copy: 4-D strided rows ------------------------------------------------------------------
__global__ void copy_kernel(View s, View d) {
    const int64_t ne0 = s.ne0, n_rows = s.ne1 * s.ne2 * s.ne3, total = n_rows * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / ne0, i = idx % ne0;
        const int64_t i1 = r % s.ne1, i2 = (r / s.ne1) % s.ne2, i3 = r / (s.ne1 * s.ne2);
        const float v = reinterpret_cast<const float*>(s.data + i1 * s.nb1 + i2 * s.nb2 + i3 * s.nb3)[i];
        reinterpret_cast<float*>(d.data + i1 * d.nb1 + i2 * d.nb2 + i3 * d.nb3)[i] = v;
    }
}

// ---- gather_rows: dst[:, j] = src[:, ids[j]] --------------------------------------------------
__global__ void gather_rows_kernel(View s, View d, const int32_t* ids, int64_t n) {
    const int64_t ne0 = s.ne0, total = n * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = idx / ne0, i = idx % ne0;
        const int32_t id = ids[j];
        float v;
        if (id < 0 || id >= s.ne1) v = __uint_as_float(0x7fc00000u);  // out of range: NaN (CPU: undefined)
        else v = reinterpret_cast<const float*>(s.data + (int64_t)id * s.nb1)[i];
        reinterpret_cast<float*>(d.data + j * d.nb1)[i] = v;
    }
}

// ---- rope: in place on x [d, heads, tokens] ---------------------------------------------------
// Block (token, group of heads): its threads first compute the pairs' cos/sin in parallel (each
// its own theta_j, bit-identical to the CPU's sequential recurrence), then rotate the group's
// heads. Few tokens split the heads over several blocks so that more than one SM works.
// Heads of one rope tensor in groups: block row y of the grid takes group y - first.
struct RopeJob {
    View x;
    int32_t heads_per_block = 1;
    int32_t first = 0;  // first grid row of this tensor
};

// Two tensors rotated with the same positions and parameters (q and k): grid rows [0, b.first)
// rotate a, the rest b.
__global__ void rope_kernel(RopeJob ja, RopeJob jb, const int32_t* pos, RopeConsts c, const float* freq_factors) {
    extern __shared__ float sh[];
    float* co = sh;           // [half]
    float* si = sh + c.half;  // [half]
    const int64_t t = blockIdx.x;
    const float p = (float)pos[t];
    for (int32_t j = threadIdx.x; j < c.half; j += blockDim.x) {
        const float ff = freq_factors ? freq_factors[j] : 1.0f;
        rope_cos_sin(rope_theta(p, c, j), j, ff, c, &co[j], &si[j]);
    }
    __syncthreads();
    const bool second = (int32_t)blockIdx.y >= jb.first;
    const View& x = second ? jb.x : ja.x;
    const int32_t heads_per_block = second ? jb.heads_per_block : ja.heads_per_block;
    const int64_t h0 = (int64_t)(blockIdx.y - (second ? jb.first : 0)) * heads_per_block;
    const int32_t heads = (int32_t)min((int64_t)heads_per_block, x.ne1 - h0);
    const int32_t total = heads * c.half;
    for (int32_t idx = threadIdx.x; idx < total; idx += blockDim.x) {
        const int32_t j = idx % c.half;
        float* row = reinterpret_cast<float*>(x.data + (h0 + idx / c.half) * x.nb1 + t * x.nb2);
        int32_t i0, i1;
        rope_pair(c, j, &i0, &i1);
        float a = row[i0], b = row[i1];
        rope_rotate(a, b, co[j], si[j]);
        row[i0] = a;
        row[i1] = b;
    }
}

// ---- kv_store ---------------------------------------------------------------------------------
// One or two stores (K and V of a layer) with the same cells: items [0, n0) are a's, the rest b's.
struct KvJob {
    View s, d;
    int64_t width = 0;  // values per cell row
};

// f32 / f16 / bf16: one thread per element.
__global__ void kv_store_elem_kernel(KvJob ja, KvJob jb, uint32_t type, const int32_t* cells, int64_t n) {
    const int64_t n0 = n * ja.width, total = n0 + n * jb.width;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const bool second = idx >= n0;
        const KvJob& j = second ? jb : ja;
        const int64_t local = second ? idx - n0 : idx;
        const int64_t t = local / j.width, i = local % j.width;
        const int32_t cell = cells[t];
        if (cell < 0) continue;  // negative: not stored (CPU: undefined)
        const float v = reinterpret_cast<const float*>(j.s.data + t * j.s.nb1)[i];
        uint8_t* out = j.d.data + (int64_t)cell * j.d.nb1;
        if (type == quant::T_F32) reinterpret_cast<float*>(out)[i] = v;
        else if (type == quant::T_F16) reinterpret_cast<uint16_t*>(out)[i] = f32_to_f16(v);
        else reinterpret_cast<uint16_t*>(out)[i] = f32_to_bf16(v);
    }
}

// q8_0: one thread per block of 32 values.
__global__ void kv_store_q8_0_kernel(KvJob ja, KvJob jb, const int32_t* cells, int64_t n) {
    const int64_t n0 = n * (ja.width / 32), total = n0 + n * (jb.width / 32);
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const bool second = idx >= n0;
        const KvJob& j = second ? jb : ja;
        const int64_t local = second ? idx - n0 : idx, nblk = j.width / 32;
        const int64_t t = local / nblk, b = local % nblk;
        const int32_t cell = cells[t];
        if (cell < 0) continue;
        const float* in = reinterpret_cast<const float*>(j.s.data + t * j.s.nb1) + 32 * b;
        float x[32];
        for (int i = 0; i < 32; ++i) x[i] = in[i];
        q8_0_encode_block(x, j.d.data + (int64_t)cell * j.d.nb1 + 34 * b);
    }
}

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
    rms_norm_kernel<<<(unsigned)n, threads, 0, env.stream>>>(view_of(x), view_of(*op.dst), gain, op.f[0], ro);
    IKLLM_CUDA_LAUNCHED("rms_norm_kernel");
}

void run_add(const Op& op, const OpEnv& env) {
    need_f32(op.src[0], "add", "src0");
    need_f32(op.src[1], "add", "src1");
    need_f32(op.dst, "add", "dst");
    const Tensor& a = *op.src[0];
    const int64_t rows = a.n_rows(), total = rows * a.ne[0];
    if (total <= 0) return;
    add_kernel<<<grid_for(total, kThreads), kThreads, 0, env.stream>>>(view_of(a), view_of(*op.src[1]),
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
    swiglu_kernel<<<grid_for(total, kThreads), kThreads, 0, env.stream>>>(view_of(g), view_of(*op.src[1]),
                                                                          view_of(*op.dst), rows);
    IKLLM_CUDA_LAUNCHED("swiglu_kernel");
}

void run_copy(const Op& op, const OpEnv& env) {
    need_f32(op.src[0], "copy", "src0");
    need_f32(op.dst, "copy", "dst");
    const Tensor& s = *op.src[0];
    const int64_t total = s.n_elements();
    if (total <= 0) return;
    copy_kernel<<<grid_for(total, kThreads), kThreads, 0, env.stream>>>(view_of(s), view_of(*op.dst));
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
    gather_rows_kernel<<<grid_for(total, kThreads), kThreads, 0, env.stream>>>(view_of(s), view_of(*op.dst), op.i32,
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
    rope_kernel<<<grid, kThreads, sizeof(float) * 2 * (size_t)c.half, env.stream>>>(ja, jb, op.i32, c,
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
        kv_store_q8_0_kernel<<<grid_for(total, 128), 128, 0, env.stream>>>(ja, jb, op.i32, op.n_i32);
        IKLLM_CUDA_LAUNCHED("kv_store_q8_0_kernel");
    } else {
        const int64_t total = op.n_i32 * (ja.width + jb.width);
        kv_store_elem_kernel<<<grid_for(total, kThreads), kThreads, 0, env.stream>>>(ja, jb, type, op.i32, op.n_i32);
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
