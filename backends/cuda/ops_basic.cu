// Element-wise and row-wise ops of the CUDA backend: RMSNorm, add, SwiGLU, copy, row gather,
// RoPE and KV store. Semantics (indexing of views included) follow backends/cpu/op_basic.cpp;
// the per-element math lives in op_math.cuh (tested on the host).
#include <algorithm>
#include <stdexcept>
#include <string>

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
// One block per row (i1, i2, i3); the sum of squares in double like the CPU.
__global__ void rms_norm_kernel(View x, View y, const float* gain, float eps) {
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
__global__ void rope_kernel(View x, const int32_t* pos, RopeConsts c, const float* freq_factors, int32_t heads_per_block) {
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
    const int64_t h0 = (int64_t)blockIdx.y * heads_per_block;
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
// f32 / f16 / bf16: one thread per element.
__global__ void kv_store_elem_kernel(View s, View d, uint32_t type, const int32_t* cells, int64_t n, int64_t width) {
    const int64_t total = n * width;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = idx / width, i = idx % width;
        const int32_t cell = cells[t];
        if (cell < 0) continue;  // negative: not stored (CPU: undefined)
        const float v = reinterpret_cast<const float*>(s.data + t * s.nb1)[i];
        uint8_t* out = d.data + (int64_t)cell * d.nb1;
        if (type == quant::T_F32) reinterpret_cast<float*>(out)[i] = v;
        else if (type == quant::T_F16) reinterpret_cast<uint16_t*>(out)[i] = f32_to_f16(v);
        else reinterpret_cast<uint16_t*>(out)[i] = f32_to_bf16(v);
    }
}

// q8_0: one thread per block of 32 values.
__global__ void kv_store_q8_0_kernel(View s, View d, const int32_t* cells, int64_t n, int64_t width) {
    const int64_t nblk = width / 32, total = n * nblk;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = idx / nblk, b = idx % nblk;
        const int32_t cell = cells[t];
        if (cell < 0) continue;
        const float* in = reinterpret_cast<const float*>(s.data + t * s.nb1) + 32 * b;
        float x[32];
        for (int i = 0; i < 32; ++i) x[i] = in[i];
        q8_0_encode_block(x, d.data + (int64_t)cell * d.nb1 + 34 * b);
    }
}

}  // namespace

void run_rms_norm(const Op& op, const OpEnv& env) {
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
    rms_norm_kernel<<<(unsigned)n, threads, 0, env.stream>>>(view_of(x), view_of(*op.dst), gain, op.f[0]);
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

void run_rope(const Op& op, const OpEnv& env) {
    need_f32(op.dst, "rope", "dst");
    const Tensor& x = *op.dst;
    const RopeParams& p = op.rope;
    if (p.n_dims <= 0 || x.ne[2] <= 0 || x.ne[1] <= 0) return;
    if (p.n_dims % 2 != 0) bad("rope: n_dims must be even");
    if (p.n_dims > x.ne[0]) bad("rope: n_dims larger than the head size");
    if (!op.i32) bad("rope: no positions");
    if (x.ne[2] > 0x7fffffffLL) bad("rope: too many tokens");
    const RopeConsts c = rope_consts(p);
    const size_t shmem = sizeof(float) * 2 * (size_t)c.half;
    if (shmem > 48 * 1024) bad("rope: n_dims too large");
    // Token steps: groups of 4 heads (a 32-head layer on 8 SMs); batches: all heads of a token.
    const int64_t heads = x.ne[1];
    const int64_t per_block = x.ne[2] < 32 ? std::min<int64_t>(heads, 4) : heads;
    const int64_t groups = (heads + per_block - 1) / per_block;
    if (groups > 65535 || per_block * c.half > 0x7fffffffLL) bad("rope: too many heads");
    const dim3 grid((unsigned)x.ne[2], (unsigned)groups);
    rope_kernel<<<grid, kThreads, shmem, env.stream>>>(view_of(x), op.i32, c, p.freq_factors, (int32_t)per_block);
    IKLLM_CUDA_LAUNCHED("rope_kernel");
}

void run_kv_store(const Op& op, const OpEnv& env) {
    need_f32(op.src[0], "kv_store", "src0");
    need(op.dst, "kv_store", "cache");
    if (op.n_i32 <= 0) return;
    if (!op.i32) bad("kv_store: no cell indices");
    const Tensor& src = *op.src[0];
    const Tensor& cache = *op.dst;
    const int64_t width = cache.ne[0];
    if (width <= 0) return;
    if (src.ne[0] < width) bad("kv_store: source rows shorter than the cache rows");
    const uint32_t type = cache.type;
    if (type == quant::T_Q8_0) {
        if (width % 32 != 0) bad("kv_store: q8_0 rows need a multiple of 32 values");
        const int64_t total = op.n_i32 * (width / 32);
        kv_store_q8_0_kernel<<<grid_for(total, 128), 128, 0, env.stream>>>(view_of(src), view_of(cache), op.i32,
                                                                           op.n_i32, width);
        IKLLM_CUDA_LAUNCHED("kv_store_q8_0_kernel");
    } else if (type == quant::T_F32 || type == quant::T_F16 || type == quant::T_BF16) {
        const int64_t total = op.n_i32 * width;
        kv_store_elem_kernel<<<grid_for(total, kThreads), kThreads, 0, env.stream>>>(view_of(src), view_of(cache), type,
                                                                                     op.i32, op.n_i32, width);
        IKLLM_CUDA_LAUNCHED("kv_store_elem_kernel");
    } else {
        bad("kv_store: unsupported cache type " + std::to_string(type));
    }
}

}  // namespace ikllm::cuda
