// Attention of the CUDA backend: dst [d_v * n_head, T] = softmax(q k^T * scale + mask) v over
// the cache cells [0, kv.n_cells), semantics of backends/cpu/op_attention.cpp:
//  - token t sees cell c iff cell_pos[c] >= 0, cell c holds seq_ids[t] and cell_pos[c] <= positions[t];
//  - GQA: query head h uses KV head h / (n_head / n_head_kv);
//  - K/V rows in the cache types f32, f16, bf16, q8_0 (V may be a view of the K rows: MLA);
//  - a token that sees no cell gets zeros (the CPU's 1/sum guard).
// op.f[1] (a CPU scratch bound in MiB) only limits CPU memory and is ignored here.
//
// One warp per (token, query head); the warps of a block are query heads of one token that
// share a KV head, so each K/V row is fetched from global memory about once per block (the
// other warps hit L1/L2). Cells are walked in physical order in tiles of 32 (lane j checks the
// mask of cell c0 + j); masked cells are skipped entirely (their K/V rows are never read).
// Per tile: scores of the visible cells (lanes split the head dimension, warp-reduced), the
// tile max, one rescale of the running sum/accumulator, then P x V. Online softmax in float.
// A token's result depends only on its own query and the cache (cells, layout), not on the
// other tokens of the batch.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attention_args.cuh"
#include "cuda_ops.cuh"
#include "launch.cuh"
#include "op_math.cuh"
#include "warp_reduce.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

__device__ __forceinline__ float load_kv(uint32_t type, const uint8_t* row, int e) {
    switch (type) {
        case quant::T_F32: return reinterpret_cast<const float*>(row)[e];
        case quant::T_F16: return math::f16_to_f32(reinterpret_cast<const uint16_t*>(row)[e]);
        case quant::T_BF16: return math::bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[e]);
        default: return math::q8_0_decode(row, e);  // T_Q8_0 (checked on the host)
    }
}


// Split attention ("flash decoding"): block (token t, query head h, split s) of 128 threads
// walks the cells of its split in chunks of 128 -- one cell per thread for the score (the
// whole q . k row product), block max / sum, then P x V with threads splitting the value
// dimensions -- keeping an online softmax over the chunks. With one split the block writes the
// result; with several, each writes (acc, m, l) and attention_combine_kernel merges them. The
// number of splits grows only when tokens x heads alone cannot fill the GPU (generation).
constexpr int kAttnThreads = 128;
constexpr int kChunk = 128;
constexpr int kMaxDk = 576;

__device__ __forceinline__ float block_reduce(float v, float* red, bool is_max) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = is_max ? warp_max(v) : warp_sum(v);
    __syncthreads();  // red is free (previous use finished)
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < kAttnThreads / 32; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
    return r;
}

// q . k over d_k values of one cached row (f16 rows: 16-byte loads).
__device__ __forceinline__ float qk_dot(const float* qs, uint32_t type, const uint8_t* krow, int d_k) {
    float acc = 0.0f;
    if (type == quant::T_F16 && (d_k % 8) == 0 && (reinterpret_cast<uintptr_t>(krow) % 16) == 0) {
        const uint4* p = reinterpret_cast<const uint4*>(krow);
        for (int i = 0; i < d_k / 8; ++i) {
            const uint4 w = p[i];
            const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                acc += qs[8 * i + 2 * j] * math::f16_to_f32((uint16_t)(u[j] & 0xffffu));
                acc += qs[8 * i + 2 * j + 1] * math::f16_to_f32((uint16_t)(u[j] >> 16));
            }
        }
        return acc;
    }
    for (int e = 0; e < d_k; ++e) acc += qs[e] * load_kv(type, krow, e);
    return acc;
}

template <int DVT>  // value dimensions per thread: d_v <= 128 * DVT
__global__ void __launch_bounds__(kAttnThreads) attention_split_kernel(AttnArgs a, int n_splits, int split_cells,
                                                                       float* partial) {
    IKLLM_KERNEL_ENTRY();
    IKLLM_SHARED(float, qs, [kMaxDk]);
    IKLLM_SHARED(float, sc, [kChunk]);
    IKLLM_SHARED(float, red, [kAttnThreads / 32]);
    const int tid = threadIdx.x;
    const int64_t t = blockIdx.x, h = blockIdx.y, sp = blockIdx.z;
    const int64_t g = h / a.group;
    const float* qrow = reinterpret_cast<const float*>(a.q + h * a.q_nb1 + t * a.q_nb2);
    for (int e = tid; e < a.d_k; e += kAttnThreads) qs[e] = qrow[e];
    __syncthreads();
    const uint8_t* kbase = a.k + g * a.k_nb1;
    const uint8_t* vbase = a.v + g * a.v_nb1;
    const int32_t pos = a.positions[t];
    const int32_t seq = a.seq_ids[t];
    const bool seq_ok = seq >= 0 && seq < 64 * a.seq_words;
    const int32_t word = seq_ok ? seq / 64 : 0;
    const int32_t bit = seq_ok ? seq % 64 : 0;
    const int32_t c_begin = (int32_t)sp * split_cells;
    const int32_t c_end = min(a.n_cells, c_begin + split_cells);

    float m = -INFINITY, l = 0.0f;
    float acc[DVT];
#pragma unroll
    for (int i = 0; i < DVT; ++i) acc[i] = 0.0f;
    for (int32_t c0 = c_begin; c0 < c_end; c0 += kChunk) {
        const int32_t c = c0 + tid;
        float s = -INFINITY;
        if (seq_ok && c < c_end) {
            const int32_t cp = a.cell_pos[c];
            if (cp >= 0 && cp <= pos && ((a.cell_seqs[(int64_t)c * a.seq_words + word] >> bit) & 1ull))
                s = qk_dot(qs, a.k_type, kbase + (int64_t)c * a.k_nb2, a.d_k) * a.scale;
        }
        const float mx = block_reduce(s, red, true);
        if (mx == -INFINITY) continue;  // nothing visible in this chunk (uniform over the block)
        const float m_new = fmaxf(m, mx);
        const float resc = expf(m - m_new);  // 0 for the first visible chunk
        const float p = s == -INFINITY ? 0.0f : expf(s - m_new);
        sc[tid] = p;
        l = l * resc + block_reduce(p, red, false);  // its barriers also publish sc
        m = m_new;
#pragma unroll
        for (int i = 0; i < DVT; ++i) acc[i] *= resc;
        const int n = min(kChunk, c_end - c0);
        for (int j = 0; j < n; ++j) {
            const float pj = sc[j];
            if (pj == 0.0f) continue;  // masked cells are never read
            const uint8_t* vrow = vbase + (int64_t)(c0 + j) * a.v_nb2;
#pragma unroll
            for (int i = 0; i < DVT; ++i) {
                const int d = tid + kAttnThreads * i;
                if (d < a.d_v) acc[i] += pj * load_kv(a.v_type, vrow, d);
            }
        }
        __syncthreads();  // sc is rewritten by the next chunk
    }
    if (n_splits == 1) {
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        float* orow = reinterpret_cast<float*>(a.out + t * a.out_nb1) + h * a.d_v;
#pragma unroll
        for (int i = 0; i < DVT; ++i) {
            const int d = tid + kAttnThreads * i;
            if (d < a.d_v) orow[d] = acc[i] * inv;
        }
        return;
    }
    const int64_t n_head = (int64_t)gridDim.y;
    float* part = partial + ((t * n_head + h) * n_splits + sp) * (int64_t)(a.d_v + 2);
#pragma unroll
    for (int i = 0; i < DVT; ++i) {
        const int d = tid + kAttnThreads * i;
        if (d < a.d_v) part[d] = acc[i];
    }
    if (tid == 0) {
        part[a.d_v] = m;
        part[a.d_v + 1] = l;
    }
}

__global__ void attention_combine_kernel(AttnArgs a, int n_splits, const float* partial) {
    IKLLM_KERNEL_ENTRY();
    const int64_t t = blockIdx.x, h = blockIdx.y, n_head = gridDim.y;
    const float* base = partial + (t * n_head + h) * n_splits * (int64_t)(a.d_v + 2);
    float M = -INFINITY;
    for (int s = 0; s < n_splits; ++s) M = fmaxf(M, base[s * (a.d_v + 2) + a.d_v]);
    float L = 0.0f;
    for (int s = 0; s < n_splits; ++s) {
        const float ms = base[s * (a.d_v + 2) + a.d_v];
        if (ms != -INFINITY) L += base[s * (a.d_v + 2) + a.d_v + 1] * expf(ms - M);
    }
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    float* orow = reinterpret_cast<float*>(a.out + t * a.out_nb1) + h * a.d_v;
    for (int d = threadIdx.x; d < a.d_v; d += blockDim.x) {
        float v = 0.0f;
        for (int s = 0; s < n_splits; ++s) {
            const float ms = base[s * (a.d_v + 2) + a.d_v];
            if (ms != -INFINITY) v += base[s * (a.d_v + 2) + d] * expf(ms - M);
        }
        orow[d] = v * inv;
    }
}

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("cuda attention: " + what); }

bool is_kv_type(uint32_t t) {
    return t == quant::T_F32 || t == quant::T_F16 || t == quant::T_BF16 || t == quant::T_Q8_0;
}

template <int DVT>
void launch_split(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env) {
    // Splits only when tokens x heads leave the GPU idle (generation, short batches).
    const int64_t blocks = T * n_head;
    const int64_t target = 8LL * (env.sm_count > 0 ? env.sm_count : 100);
    int64_t n_splits = 1;
    if (blocks < target && a.n_cells > kChunk)
        n_splits = std::min<int64_t>((a.n_cells + kChunk - 1) / kChunk, (target + blocks - 1) / blocks);
    if (n_splits > 64) n_splits = 64;
    const int64_t split_cells = ((a.n_cells + n_splits - 1) / n_splits + kChunk - 1) / kChunk * kChunk;
    n_splits = split_cells > 0 ? (a.n_cells + split_cells - 1) / split_cells : 1;
    if (n_splits < 1) n_splits = 1;
    float* partial = nullptr;
    if (n_splits > 1)
        partial = static_cast<float*>(env.scratch->alloc(sizeof(float) * (size_t)(blocks * n_splits * (a.d_v + 2))));
    const dim3 grid((unsigned)T, (unsigned)n_head, (unsigned)n_splits);
    IKLLM_LAUNCH(grid, kAttnThreads, 0, env.on(), attention_split_kernel<DVT>)(a, (int)n_splits, (int)std::max<int64_t>(split_cells, 1),
                                                                       partial);
    IKLLM_CUDA_LAUNCHED("attention_split_kernel");
    if (n_splits > 1) launch_attention_combine(a, T, n_head, (int)n_splits, partial, env.on());
}

}  // namespace

void launch_attention_combine(const AttnArgs& a, int64_t T, int64_t n_head, int n_splits, const float* partial,
                              StreamRef stream) {
    IKLLM_LAUNCH(dim3((unsigned)T, (unsigned)n_head), 128, 0, stream, attention_combine_kernel)(a, n_splits, partial);
    IKLLM_CUDA_LAUNCHED("attention_combine_kernel");
}

void run_attention(const Op& op, const OpEnv& env) {
    for (int i = 0; i < 3; ++i)
        if (!op.src[i] || !op.src[i]->data) bad("missing q/k/v");
    if (!op.dst || !op.dst->data) bad("missing dst");
    const Tensor& q = *op.src[0];   // [d_k, n_head, T] f32
    const Tensor& kc = *op.src[1];  // [d_k, n_head_kv, cells]
    const Tensor& vc = *op.src[2];  // [d_v, n_head_kv, cells]
    const Tensor& out = *op.dst;    // [d_v * n_head, T] f32
    const int64_t d_k = q.ne[0], n_head = q.ne[1], T = q.ne[2];
    const int64_t d_v = vc.ne[0], n_head_kv = kc.ne[1];
    if (T <= 0 || n_head <= 0) return;
    if (q.type != quant::T_F32 || q.nb[0] != 4) bad("q must be contiguous f32 rows");
    if (out.type != quant::T_F32) bad("dst must be f32");
    if (!is_kv_type(kc.type) || !is_kv_type(vc.type))
        bad("unsupported cache type " + std::to_string(kc.type) + "/" + std::to_string(vc.type));
    if (kc.ne[0] < d_k) bad("K rows shorter than q rows");
    if (n_head_kv <= 0 || n_head % n_head_kv != 0) bad("n_head must be a multiple of n_head_kv");
    if (vc.ne[1] != n_head_kv) bad("K and V head counts differ");
    if ((kc.type == quant::T_Q8_0 && d_k % 32 != 0) || (vc.type == quant::T_Q8_0 && d_v % 32 != 0))
        bad("q8_0 rows need a multiple of 32 values");
    if (out.ne[0] < d_v * n_head) bad("dst rows too short");
    if (!op.i32 || !op.seq_ids) bad("no positions / sequence ids");
    if (op.kv.n_cells > 0 && (!op.kv.cell_pos || !op.kv.cell_seqs)) bad("no KV cell metadata");
    if (op.kv.seq_words <= 0) bad("seq_words must be positive");
    if (T > 0x7fffffffLL) bad("too many tokens");

    AttnArgs a;
    a.q = static_cast<const uint8_t*>(q.data);
    a.q_nb1 = (int64_t)q.nb[1];
    a.q_nb2 = (int64_t)q.nb[2];
    a.k = static_cast<const uint8_t*>(kc.data);
    a.k_nb1 = (int64_t)kc.nb[1];
    a.k_nb2 = (int64_t)kc.nb[2];
    a.k_type = kc.type;
    a.v = static_cast<const uint8_t*>(vc.data);
    a.v_nb1 = (int64_t)vc.nb[1];
    a.v_nb2 = (int64_t)vc.nb[2];
    a.v_type = vc.type;
    a.out = static_cast<uint8_t*>(out.data);
    a.out_nb1 = (int64_t)out.nb[1];
    a.d_k = (int32_t)d_k;
    a.d_v = (int32_t)d_v;
    a.group = (int32_t)(n_head / n_head_kv);
    a.scale = op.f[0];
    a.positions = op.i32;
    a.seq_ids = op.seq_ids;
    a.cell_pos = op.kv.cell_pos;
    a.cell_seqs = op.kv.cell_seqs;
    a.seq_words = op.kv.seq_words;
    a.n_cells = op.kv.n_cells;

    if (T > 2147483647LL || n_head > 65535) bad("too many tokens or heads");
    if (d_k > kMaxDk) bad("head size too large (d_k " + std::to_string(d_k) + ")");
    // The tensor cores: f16 prompt batches of heads up to 128 in blocks of 64 query rows; MLA,
    // generation steps, wider heads and every batch of a q8_0 or bf16 cache in blocks of 16.
    if (launch_attention_mma(a, T, n_head, env) || launch_attention_mma16(a, T, n_head, env)) return;
    if (d_v <= 128) launch_split<1>(a, T, n_head, env);
    else if (d_v <= 256) launch_split<2>(a, T, n_head, env);
    else if (d_v <= 512) launch_split<4>(a, T, n_head, env);
    else bad("head size too large (d_k " + std::to_string(d_k) + ", d_v " + std::to_string(d_v) + ")");
}

}  // namespace ikllm::cuda
